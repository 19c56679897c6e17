#!/usr/bin/env bash
# A cron-style `sqlq bridge --once` on a cursor source with a NUMBER cursor column, on the database
# $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb), delivers the rows older than the default
# safety lag (10 s; SQLite 0): it waits out the lag from its first sample, says so in the log,
# and polls again. Before, it published nothing and exited 0
# (the lag's samples live only in memory and were never 10 s old in a --once run).
# Also `sqlq status --table T` for a table bridged with --source cursor shows that source
# (before: "this table is not set up: run sqlq setup --table T", exit 1, JSON with no entry).
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() { echo "FAIL: $kind: $*" >&2; for f in "$tmp"/*; do echo "--- $f" >&2; tail -20 "$f" >&2; done; exit 1; }
unset SQLQ_DB_CONNECTION || true
prefix=curonce
. "$(dirname "$0")/../support/change_log_db.sh"
bin=$sqlq
q="curonce-$$"
queues+=("$q")
count() { "$bin" queue peek "$q" --limit 32 2>/dev/null | grep -c . || true; }
# The table as named, as status names it, and the default lag (SQLite: 0, one writer at a time).
case "$kind" in
sqlite) t=c; shown=c; lag=0 ;;
postgres) t=public.c; shown=public.c; lag=10 ;;
mariadb) t=c; shown=$name.c; lag=10 ;;
esac
sql "CREATE TABLE c (id integer PRIMARY KEY, seq bigint NOT NULL, v text)"
for i in 1 2 3 4 5; do sql "INSERT INTO c VALUES ($i, $i, 'x')"; done
"$bin" queue create "$q" >/dev/null

# Status before any bridge ran: not set up, and the hint names the table.
rc=0
"$bin" status --db "$conn" --table "$t" >"$tmp/status0.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "status of an unknown table: exit $rc, wanted 1"
grep -qF "run \`sqlq setup --table $t\`" "$tmp/status0.out" || fail "the hint does not name the table"

start=$(date +%s)
rc=0
"$bin" bridge --db "$conn" --table "$t" --queue "$q" --source cursor --cursor-column seq \
    --once >"$tmp/once1.log" 2>&1 || rc=$?
took=$(($(date +%s) - start))
[ "$rc" = 0 ] || fail "bridge --once: exit $rc"
if [ "$lag" -gt 0 ]; then
    grep -q "once_waits_safety_lag" "$tmp/once1.log" || fail "--once did not say it waits out the lag"
    [ "$took" -ge $((lag - 1)) ] || fail "--once returned after ${took}s, before the $lag s lag"
fi
n=$(count)
[ "$n" = 5 ] || fail "first --once run published $n of 5 rows"

# Status of that table: the cursor source (text and JSON), exit 0.
"$bin" status --db "$conn" --table "$t" >"$tmp/status.out" 2>&1 || fail "status --table exit $?"
grep -q "$shown (cursor source, bridge default): lag $((lag * 1000)) ms" "$tmp/status.out" \
    || fail "status --table does not show the cursor source"
"$bin" status --db "$conn" --table "$t" --json >"$tmp/status.json" 2>/dev/null \
    || fail "status --table --json failed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); \
    assert [c["table"] for c in d["cursor_sources"] if c["table"] == sys.argv[2]] == [sys.argv[2]], d' \
    "$tmp/status.json" "$shown" \
    || fail "status --json has no cursor source entry"

# A second run (cron): the new rows older than the lag arrive; nothing is published twice.
for i in 6 7 8; do sql "INSERT INTO c VALUES ($i, $i, 'y')"; done
"$bin" bridge --db "$conn" --table "$t" --queue "$q" --source cursor --cursor-column seq \
    --once >"$tmp/once2.log" 2>&1 || fail "second --once: exit $?"
n=$(count)
[ "$n" = 8 ] || fail "after the second --once run the queue holds $n of 8 rows"
echo "cursor --once: ok"
