#!/usr/bin/env bash
# The one test command: install the pinned MCP peers, build every binary the end-to-end tests
# run, then run every test of the workspace (with cargo-nextest when it is installed), failing if
# a process or temporary file outlives the run (scripts/no-leftovers.py).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-peers.sh
cargo build --workspace --all-targets

# Every test command runs under scripts/no-leftovers.py: with a private TMPDIR, and as the child
# subreaper of whatever the tests start, so the run fails if a daemon, server or temporary file
# outlives it (a test's cleanup must not depend on care alone).
guard=(python3 scripts/no-leftovers.py --)
if cargo nextest --version >/dev/null 2>&1; then
    # Doc tests are not run by nextest; run them first, separately, so nothing is skipped and
    # the run ends with nextest's summary of every test.
    "${guard[@]}" cargo test --workspace --doc
    "${guard[@]}" cargo nextest run --workspace --no-fail-fast "$@"
else
    "${guard[@]}" cargo test --workspace --no-fail-fast "$@"
fi
