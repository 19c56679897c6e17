#!/usr/bin/env bash
# Build the libFuzzer harnesses (tests/fuzz, clang, ASan + UBSan) and run each for SECONDS
# (default 15), starting from the seed corpus in tests/fuzz/corpus/<harness>/. Fails on the
# first harness that crashes, leaks or times out; the crashing input is kept in
# $FUZZ_DIR/artifacts/ (reproduce: $FUZZ_DIR/build/tests/fuzz/fuzz_NAME that-file).
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     e.g. scripts/fuzz.sh 60 xml account
# Environment: FUZZ_DIR (default build-fuzz), JOBS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-15}
shift $(($# > 0 ? 1 : 0))
case "$seconds" in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, not '$seconds'" >&2; exit 2 ;; esac
dir=${FUZZ_DIR:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}
command -v clang >/dev/null 2>&1 || { echo "fuzz.sh: clang is not installed (scripts/install-deps.sh)" >&2; exit 2; }

cmake -S "$root" -B "$dir/build" -DCMAKE_C_COMPILER=clang -DSQLQ_FUZZ=ON -DSQLQ_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$dir/build" -j "$jobs" >/dev/null

harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
    for f in "$root"/tests/fuzz/fuzz_*.c; do
        n=${f##*/fuzz_}
        harnesses+=("${n%.c}")
    done
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
mkdir -p "$dir/artifacts"
printf '%-16s %8s %12s %10s  %s\n' harness seconds executions exec/s result
for h in "${harnesses[@]}"; do
    bin=$dir/build/tests/fuzz/fuzz_$h
    seeds=$root/tests/fuzz/corpus/$h
    [ -x "$bin" ] || { echo "fuzz.sh: no harness fuzz_$h" >&2; exit 2; }
    work=$dir/corpus/$h # grows across runs; the seeds in the repository stay as they are
    mkdir -p "$work"
    log=$dir/fuzz_$h.log
    rc=0
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/${h}-" "$work" "$seeds" \
        >"$log" 2>&1 || rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    if [ "$rc" -ne 0 ]; then
        printf '%-16s %8s %12s %10s  %s\n' "$h" "$seconds" "${runs:-?}" "${rate:-?}" "CRASH (exit $rc)"
        grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -20 >&2
        echo "fuzz.sh: fuzz_$h failed; full log: $log" >&2
        exit 1
    fi
    printf '%-16s %8s %12s %10s  %s\n' "$h" "$seconds" "${runs:-?}" "${rate:-?}" ok
done
