#!/usr/bin/env bash
# The README's test command: install what is needed, build with warnings as errors, and run
# every test (unit + integration against a private Azurite and PostgreSQL on 127.0.0.1).
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -L unit   or   -R bridge
# Environment: BUILD_DIR (default build), SQLQ_SANITIZE=ON for ASan/UBSan or =thread for
# ThreadSanitizer (use its own BUILD_DIR), JOBS, FUZZ_SECONDS (per harness, default 10; 0 skips).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

"$root/scripts/install-deps.sh"
# Tests always on, even in a build directory configured without them.
cmake -S "$root" -B "$build" -DSQLQ_BUILD_TESTS=ON -DSQLQ_WERROR=ON -DSQLQ_SANITIZE="${SQLQ_SANITIZE:-OFF}" >/dev/null
cmake --build "$build" -j "$jobs"
if [ "${SQLQ_SANITIZE:-OFF}" = ON ]; then
    # Leaks inside the ODBC drivers and unixODBC are theirs, not ours: suppressed by library.
    export LSAN_OPTIONS="suppressions=$root/tests/support/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
fi
if [ "${SQLQ_SANITIZE:-OFF}" = thread ]; then
    # A data race fails the test that hit it; the suppressions each say why they are not ours.
    export TSAN_OPTIONS="suppressions=$root/tests/support/tsan.supp:halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
fi
cd "$build"
# One test per core: several integration tests share one Azurite, which stalls for seconds
# when more run at once on a 2-core machine (seen at -j3: requests unanswered for 10 s).
# --no-tests=error: running no test is a failure, never a pass.
# No retries: a failed test fails the run. (The shared test Azurite's 15-30 s pauses, which a
# retry used to cover, were its extent GC deleting one by one; tests/support/azurite_queue.js
# batches it, and tests/support/azurite_probe.js saw no pause over a whole suite run.)
ctest --output-on-failure --no-tests=error -j "$jobs" --timeout 600 "$@"

# Fuzzing smoke run (after the tests): every libFuzzer harness for FUZZ_SECONDS from its seed
# corpus, in its own build tree. A crash fails the run. clang comes with install-deps.sh.
fuzz_seconds=${FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" != 0 ] && command -v clang >/dev/null 2>&1; then
    FUZZ_DIR=${FUZZ_DIR:-$root/build-fuzz} JOBS=$jobs "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi
