#!/usr/bin/env bash
# The fuzz targets' short mode, run by .ci/run: each target for FUZZ_SECONDS (default 30) from
# its seed corpus, so a crash the seeds or a short search can reach fails CI. The long mode is the
# same command with a larger FUZZ_SECONDS (or `cargo fuzz run TARGET` by hand, see fuzz/Cargo.toml).
# Installs cargo-fuzz if it is missing. No sanitizer: the code under test is safe Rust, and the
# instrumented build stays within CI's time.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${FUZZ_SECONDS:-30}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi
cd "$root/fuzz"
# cargo-fuzz passes nightly-only flags; this toolchain is stable.
export RUSTC_BOOTSTRAP=1
cargo fuzz build -s none
for target in $(cargo fuzz list); do
    corpus="corpus/$target"
    mkdir -p "$corpus"
    # A scratch copy: what the run finds is not written into the repository's seeds.
    scratch="$(mktemp -d)"
    cp -r "$corpus/." "$scratch/"
    echo "==> fuzz $target for ${seconds}s"
    status=0
    cargo fuzz run -s none "$target" "$scratch" -- \
        -max_total_time="$seconds" -print_final_stats=1 2>&1 | tail -n 12 || status=$?
    rm -rf "$scratch"
    if ((status != 0)); then
        echo "fuzz target $target failed (exit $status); the crash input is under fuzz/artifacts/$target/" >&2
        exit "$status"
    fi
done
