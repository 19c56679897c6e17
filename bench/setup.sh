#!/usr/bin/env bash
# Prepare the benchmarks: the tools they use and a Release build of sqlq.
#   - wrk (Debian package) for the Put Message ceiling, tcpdump for bench/latency.py's
#     passive capture of the queue service's port (bench/tap.py) and valgrind for
#     bench/trigger_cost.py's instruction counts, installed with apt-get when missing;
#     benchmark tools are installed here, not by scripts/install-deps.sh (build/test/run only);
#   - bench/putload.c and bench/getload.c, the minimal SAS put and get+delete clients, compiled
#     against libcurl; bench/fakequeue.c, a queue service that costs next to nothing
#     (bench/latency.py --queue fake), against libmicrohttpd; bench/listen_count.c (counts a
#     channel's notifications, against libpq); and
#     bench/measure.c, which reports a command's CPU time and peak RSS;
#   - sqlq built with -DCMAKE_BUILD_TYPE=Release in $SQLQ_BENCH_BUILD (default build-bench/),
#     unless SQLQ_BIN names a binary to measure.
# Idempotent: a second run only checks (and rebuilds what changed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${SQLQ_BENCH_BUILD:-$root/build-bench}
tools=${SQLQ_BENCH_TOOLS:-$build/bench-tools}

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v tcpdump >/dev/null 2>&1 || [ -x /usr/bin/tcpdump ] || missing+=(tcpdump)
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql-contrib)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind) # bench/trigger_cost.py
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "bench/setup.sh: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ -x "$root/node_modules/.bin/azurite-queue" ] && [ -d "$root/node_modules/@azure/storage-queue" ] \
    || "$root/scripts/install-deps.sh"

if [ -z "${SQLQ_BIN:-}" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j"$(nproc)" --target sqlq >/dev/null
    echo "bench/setup.sh: sqlq (Release) in $build/cli/sqlq"
fi

mkdir -p "$tools"
# tool NAME [PKG-CONFIG MODULE]: compile bench/NAME.c when it is newer than the binary.
tool() {
    local name=$1 flags=""
    [ -z "${2:-}" ] || flags=$(pkg-config --cflags --libs "$2")
    if [ ! -x "$tools/$name" ] || [ "$root/bench/$name.c" -nt "$tools/$name" ]; then
        # shellcheck disable=SC2086 # pkg-config's flags are words
        cc -O2 -Wall -Wextra -o "$tools/$name" "$root/bench/$name.c" $flags
    fi
}
tool putload libcurl
tool getload libcurl
tool fakequeue libmicrohttpd
tool listen_count libpq
tool measure
echo "bench/setup.sh: putload, getload, fakequeue, listen_count and measure in $tools; wrk $(dpkg-query -W -f='${Version}' wrk 2>/dev/null || wrk -v 2>&1 | head -1)"
