#!/usr/bin/env bash
# The fuzz targets' short mode, run by .ci/run: each target for FUZZ_SECONDS (default 30) from
# its seed corpus, so a crash the seeds or a short search can reach fails CI. The long mode is the
# same command with a larger FUZZ_SECONDS (or `cargo fuzz run TARGET` by hand, see fuzz/Cargo.toml).
# Installs cargo-fuzz if it is missing. No sanitizer and an unoptimised build (`--dev`): the code
# under test is safe Rust, and the instrumented build then stays within CI's time. The build is
# bounded by FUZZ_BUILD_TIMEOUT seconds (default 1800): a build that cannot finish in time (a
# loaded machine) is reported and skipped, not failed; a crash found by a run always fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${FUZZ_SECONDS:-30}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi
cd "$root/fuzz"
# cargo-fuzz passes nightly-only flags; this toolchain is stable.
export RUSTC_BOOTSTRAP=1
build_timeout="${FUZZ_BUILD_TIMEOUT:-1800}"
status=0
timeout "$build_timeout" cargo fuzz build --dev -s none || status=$?
if ((status == 124)); then
    echo "WARNING: the fuzz targets did not build within ${build_timeout}s; fuzzing skipped" >&2
    exit 0
elif ((status != 0)); then
    exit "$status"
fi
for target in $(cargo fuzz list); do
    corpus="corpus/$target"
    mkdir -p "$corpus"
    # A scratch copy: what the run finds is not written into the repository's seeds.
    scratch="$(mktemp -d)"
    cp -r "$corpus/." "$scratch/"
    echo "==> fuzz $target for ${seconds}s"
    status=0
    cargo fuzz run --dev -s none "$target" "$scratch" -- \
        -max_total_time="$seconds" -print_final_stats=1 2>&1 | tail -n 12 || status=$?
    rm -rf "$scratch"
    if ((status != 0)); then
        echo "fuzz target $target failed (exit $status); the crash input is under fuzz/artifacts/$target/" >&2
        exit "$status"
    fi
done
