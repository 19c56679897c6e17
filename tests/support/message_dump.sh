#!/usr/bin/env bash
# What the bridge publishes in the type, late-commit and chaos tests, normalised for comparing
# two builds (tests/support/message_dump.py says how):
#   tests/support/message_dump.sh BUILD_DIR OUTDIR    run the tests in BUILD_DIR, write OUTDIR
#   tests/support/message_dump.py compare OUTDIR_A OUTDIR_B
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: message_dump.sh BUILD_DIR OUTDIR}
out=${2:?usage: message_dump.sh BUILD_DIR OUTDIR}
tests='types_roundtrip|bridge_scenarios|bridge_postgres|bridge_key_columns|bridge_changed_before'
tests+='|bridge_message_options|bridge_mariadb|cursor_defaults|bridge_crash|bridge_instances'
tests+='|bridge_outage$|cursor_failover'
mkdir -p "$out"
dump=$(cd "$out" && pwd)/dump.jsonl
rm -f "$dump"
rc=0
(cd "$build" && SQLQ_TEST_MESSAGE_DUMP=$dump ctest --output-on-failure -j 2 -R "$tests") || rc=$?
python3 "$here/message_dump.py" normalise "$dump" "$out/queues" \
    --distinct mdb- curdef- --form crash- inst- outage cursor-failover
exit $rc
