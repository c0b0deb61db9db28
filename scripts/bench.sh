#!/usr/bin/env bash
# The benchmarks of issue 13: build the release client and daemon, then run
# daemon/benches/call_latency.rs, which prints a markdown table of medians and ratios against a
# direct rmcp baseline measured in the same run, then the stages bench and the catalog memory
# example (see docs/benchmarks.md).
#
# Iteration counts come from the environment:
#   TOOL_CLI_BENCH_CALLS      timed in-process calls per measurement (default 20000)
#   TOOL_CLI_BENCH_PROCESSES  timed process runs per measurement     (default 2000)
#   TOOL_CLI_BENCH_ROUNDS     rounds the measurements interleave in  (default 50)
#   TOOL_CLI_BENCH_MCPORTER_CALLS  timed `mcporter call` processes, row (n) (default 20)
#   TOOL_CLI_BENCH_BURSTS     timed bursts of 100 concurrent calls, rows (o)-(q) (default 30)
#   TOOL_CLI_BENCH_STAGE_CALLS calls per measurement of the in-process stages bench (default 200000)
# Row (n) needs mcporter from scripts/install-peers.sh (in .peers/mcporter, or
# TOOL_CLI_BENCH_MCPORTER_DIR); without it the row is skipped with a note.
# CARGO_TARGET_DIR is honoured; both cargo commands below use the same one, which is where the
# bench finds the `tool-cli` binary (next to `tool-cli-daemon`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# The fault-server fixture serves the 10,000 tools of rows (k) and (l).
cargo build --release -p tool-cli -p tool-cli-daemon -p tool-cli-fault-server
# P1 is read against the client the default build makes (`cargo build --release`, `cargo install
# --path client`: non-PIE, its crate in one codegen unit; client/build.rs, Cargo.toml), the
# `tool-cli` next to `tool-cli-daemon`. To time another one, e.g. the static LTO client of
# `cargo build-cli` (target/release-cli/tool-cli), set TOOL_CLI_BENCH_CLIENT.
export TOOL_CLI_BENCH_CLIENT="${TOOL_CLI_BENCH_CLIENT:-${CARGO_TARGET_DIR:-$root/target}/release/tool-cli}"
# (j), the floor of any process per call: a release binary that does nothing.
cargo build --release -p tool-cli-daemon --example noop
# (r), the floor of one HTTP exchange: a std-only loopback echo server (issue 26, P2).
cargo build --release -p tool-cli-daemon --example http_echo
# The `bench` profile inherits `release`. The first time, it still recompiles the dependencies
# whose features the dev-dependencies change (tokio); later runs are incremental.
cargo bench -p tool-cli-daemon --bench call_latency
# The orchestration stages in process (sessions, routing, traces), where a few microseconds are
# not drowned by an HTTP round trip: issue 8's ≤ 10 µs target is read from this table.
TOOL_CLI_BENCH_CALLS="${TOOL_CLI_BENCH_STAGE_CALLS:-200000}" \
    cargo bench -p tool-cli-daemon --bench stages
# P6 memory: what a catalog of 10,000 tools costs the daemon, against the size of its JSON
# (target ≤ 3×), with where it goes; it starts its own daemons with the release binaries above.
# One run: the growth moves by about ±0.2× between runs (docs/benchmarks.md, "3× reached").
cargo build --release -p tool-cli-daemon --example catalog_memory
"${CARGO_TARGET_DIR:-$root/target}/release/examples/catalog_memory" 10000
