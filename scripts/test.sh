#!/usr/bin/env bash
# The one test command: install the pinned MCP peers, build every binary the end-to-end tests
# run, then run every test of the workspace (with cargo-nextest when it is installed).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bash scripts/install-peers.sh
cargo build --workspace --all-targets

if cargo nextest --version >/dev/null 2>&1; then
    # Doc tests are not run by nextest; run them first, separately, so nothing is skipped and
    # the run ends with nextest's summary of every test.
    cargo test --workspace --doc
    cargo nextest run --workspace --no-fail-fast "$@"
else
    cargo test --workspace --no-fail-fast "$@"
fi
