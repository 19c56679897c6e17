#!/usr/bin/env bash
# A cron-style `sqlq bridge --once` on a cursor source with a NUMBER cursor column on PostgreSQL
# (default safety lag 10 s) delivers the rows older than the lag: it waits out the lag from its
# first sample, says so in the log, and polls again. Before, it published nothing and exited 0
# (the lag's samples live only in memory and were never 10 s old in a --once run).
# Also `sqlq status --table T` for a table bridged with --source cursor shows that source
# (before: "this table is not set up: run sqlq setup --table T", exit 1, JSON with no entry).
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
tmp=$(mktemp -d)
q="curonce-$$"
db="curonce_$$"
cleanup() {
    "$bin" queue delete "$q" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*; do echo "--- $f" >&2; tail -20 "$f" >&2; done; exit 1; }
count() { "$bin" queue peek "$q" --count 32 2>/dev/null | grep -c . || true; }

psql_ -d postgres -c "CREATE DATABASE $db" >/dev/null
psql_ -d "$db" -c "CREATE TABLE public.c (id integer PRIMARY KEY, seq bigint NOT NULL, v text)" \
    -c "INSERT INTO public.c SELECT g, g, 'x' FROM generate_series(1, 5) g" >/dev/null
conn="${pgodbc}Database=$db;"
"$bin" queue create "$q" >/dev/null

# Status before any bridge ran: not set up, and the hint names the table.
rc=0
"$bin" status --db "$conn" --table public.c >"$tmp/status0.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "status of an unknown table: exit $rc, wanted 1"
grep -q "run sqlq setup --table public.c" "$tmp/status0.out" || fail "the hint does not name the table"

start=$(date +%s)
rc=0
"$bin" bridge --db "$conn" --table public.c --queue "$q" --source cursor --cursor-column seq \
    --once >"$tmp/once1.log" 2>&1 || rc=$?
took=$(($(date +%s) - start))
[ "$rc" = 0 ] || fail "bridge --once: exit $rc"
grep -q "once_waits_safety_lag" "$tmp/once1.log" || fail "--once did not say it waits out the lag"
[ "$took" -ge 9 ] || fail "--once returned after ${took}s, before the 10 s lag"
n=$(count)
[ "$n" = 5 ] || fail "first --once run published $n of 5 rows"

# Status of that table: the cursor source (text and JSON), exit 0.
"$bin" status --db "$conn" --table public.c >"$tmp/status.out" 2>&1 || fail "status --table exit $?"
grep -q "public.c (cursor source, bridge default): lag 10000 ms" "$tmp/status.out" \
    || fail "status --table does not show the cursor source"
"$bin" status --db "$conn" --table public.c --json >"$tmp/status.json" 2>/dev/null \
    || fail "status --table --json failed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); \
    assert [c["table"] for c in d["cursor_sources"]] == ["public.c"], d' "$tmp/status.json" \
    || fail "status --json has no cursor source entry"

# A second run (cron): the new rows older than the lag arrive; nothing is published twice.
psql_ -d "$db" -c "INSERT INTO public.c SELECT g, g, 'y' FROM generate_series(6, 8) g" >/dev/null
"$bin" bridge --db "$conn" --table public.c --queue "$q" --source cursor --cursor-column seq \
    --once >"$tmp/once2.log" 2>&1 || fail "second --once: exit $?"
n=$(count)
[ "$n" = 8 ] || fail "after the second --once run the queue holds $n of 8 rows"
echo "cursor --once: ok"
