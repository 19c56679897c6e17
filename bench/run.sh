#!/usr/bin/env bash
# Run the sqlq benchmarks and write docs/benchmarks.md: one command for all, or name scenarios.
#
#   bench/run.sh [--quick] [--no-docs | --write-docs] [SCENARIO...]
#
# Scenarios (default: all, in this order; about 20 minutes in all, --quick about 6):
#   ceiling   1+2  Azurite's Put Message ceiling; sqlq queue put and the Node SDK against it
#   bridge    3    sqlq bridge --once draining 10k..1M change backlogs, SQLite and PostgreSQL
#   latency   4    commit-to-visible p50/p99 at the default and a short polling interval
#   consumer  5    sqlq consume vs the Node SDK; requests on an empty queue over a minute
#   overhead  6    inserts/s with and without the change-log trigger (pgbench, sqlite3)
#   backfill       sqlq backfill (bench/backfill.sh, its own section)
#
# A full run writes each scenario's section of docs/benchmarks.md and the Summary at the top;
# --quick (smaller sizes, fewer rounds) writes nothing unless --write-docs is given.
# Environment: SQLQ_BIN (measure this binary instead of building one), SQLQ_BENCH_BUILD (Release
# build directory, default build-bench/), SQLQ_BENCH_RESULTS (JSON results), SQLQ_BENCH_KEEP=1
# (keep the temporary directories). Each scenario also runs alone: bench/<scenario>.py --help.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=""
docs=auto
scenarios=()
for a in "$@"; do
    case "$a" in
        --quick) quick=--quick ;;
        --no-docs) docs=no ;;
        --write-docs) docs=yes ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        ceiling|bridge|latency|consumer|overhead|backfill) scenarios+=("$a") ;;
        *) echo "bench/run.sh: unknown argument $a (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#scenarios[@]} -gt 0 ] || scenarios=(ceiling bridge latency consumer overhead backfill)
[ "$docs" != auto ] || { [ -n "$quick" ] && docs=no || docs=yes; }
write=()
[ "$docs" = yes ] && write=(--write-docs)

"$root/bench/setup.sh"
export SQLQ_BENCH_BUILD=${SQLQ_BENCH_BUILD:-$root/build-bench}
export SQLQ_BIN=${SQLQ_BIN:-$SQLQ_BENCH_BUILD/cli/sqlq}

started=$(date +%s)
for s in "${scenarios[@]}"; do
    t0=$(date +%s)
    echo "=== $s ($(date -u +%H:%M:%S) UTC)"
    case "$s" in
        overhead) python3 "$root/bench/write_overhead.py" $quick "${write[@]}" ;;
        backfill)
            if [ -n "$quick" ]; then
                ROW_N=5000 "$root/bench/backfill.sh" 20000 "${write[@]}"
            else
                "$root/bench/backfill.sh" 100000 "${write[@]}"
            fi ;;
        *) python3 "$root/bench/$s.py" $quick "${write[@]}" ;;
    esac
    echo "=== $s done in $(( $(date +%s) - t0 )) s"
done
[ "$docs" = yes ] && python3 "$root/bench/summary.py"
echo "=== all done in $(( $(date +%s) - started )) s; results in ${SQLQ_BENCH_RESULTS:-$SQLQ_BENCH_BUILD/bench-results}"
