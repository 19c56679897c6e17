#!/usr/bin/env bash
# Every suite that sqlq_database_test registers runs on each (database, source) combination that
# has a server here, or names why it does not; and no test needs a database fixture without it.
# Prints the matrix: which combinations each suite runs, which it leaves out and why.
# Usage: test_database_tests.sh MANIFEST (written at configure time, tests/support/database_test.cmake).
set -euo pipefail
manifest=${1:?usage: test_database_tests.sh MANIFEST}
[ -s "$manifest" ] || { echo "no manifest at $manifest: configure again" >&2; exit 1; }
status=0
suites=0
while IFS='|' read -r kind suite registered left_out missing; do
    case "$kind" in
    '#'* | '') continue ;;
    single)
        echo "integration.$suite $missing: register it with sqlq_database_test" >&2
        status=1 ;;
    capture | sql)
        suites=$((suites + 1))
        printf '%-26s %-7s %s\n' "$suite" "$kind" "${registered:-(none)}"
        [ -z "$left_out" ] || printf '%-34s left out: %s\n' "" "$left_out"
        if [ -n "$missing" ]; then
            echo "$suite: neither runs on nor says why not: $missing (add the word to SOURCES or DATABASES, or WITHOUT \"key: why\")" >&2
            status=1
        fi ;;
    *)
        echo "unknown line in $manifest: $kind|$suite" >&2
        status=1 ;;
    esac
done <"$manifest"
[ "$suites" -gt 0 ] || { echo "no suite registered by sqlq_database_test" >&2; status=1; }
exit $status
