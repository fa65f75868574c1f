#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60) with cargo-fuzz on the
# nightly toolchain, installing cargo-fuzz if it is missing. A crash stops the
# script with the failing input in fuzz/artifacts/<target>/; turn it into a
# regression test next to the code it broke.
#
#   scripts/fuzz.sh            # one minute per target
#   scripts/fuzz.sh 600        # ten minutes per target
#   scripts/fuzz.sh 20 matching
#   scripts/fuzz.sh --smoke 5  # CI: an unoptimised build without ASan
#
# --smoke builds the targets unoptimised (overflow checks on) and without
# AddressSanitizer: every crate whose parsers are fuzzed forbids unsafe
# code (`#![forbid(unsafe_code)]`), so ASan would only watch dependencies, and the optimised ASan build is most of a
# short run's time (about 160 s against 86 s on the 2-core CI machine).
# A real session keeps the default: optimised, with ASan.
set -euo pipefail
cd "$(dirname "$0")/.."

build=()
if [ "${1:-}" = "--smoke" ]; then
    build=(--dev --sanitizer none)
    shift
fi
seconds="${1:-60}"
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked --quiet
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for target in "${targets[@]}"; do
    echo "fuzz: $target for ${seconds}s"
    mkdir -p "fuzz/corpus/$target"
    # The exit status is kept: a target that fails to build, a crash, an
    # out-of-memory or a timeout all end the run non-zero.
    status=0
    cargo +nightly fuzz run "${build[@]}" "$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY|Done)" "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -n 40 "$log" >&2
        echo "fuzz: $target FAILED (exit $status); any failing input is in fuzz/artifacts/$target/" >&2
        exit 1
    fi
done
echo "fuzz: all targets ran ${seconds}s without a failure"
