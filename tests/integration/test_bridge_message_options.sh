#!/usr/bin/env bash
# Per route: --columns / --exclude-columns (the key always sent), --ops (the other
# operations released unsent and counted in /metrics), --initial-visibility-s, --where; as
# flags, environment variables and config-file route keys, on the database $SQLQ_TEST_DATABASE
# names (sqlite, postgres, mariadb).
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
bridge_pid=
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -8 >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_COLUMNS SQLQ_EXCLUDE_COLUMNS SQLQ_OPS \
    SQLQ_INITIAL_VISIBILITY_S || true
prefix=msgopt
. "$(dirname "$0")/../support/change_log_db.sh"
trap '[ -z "$bridge_pid" ] || kill "$bridge_pid" 2>/dev/null || true; cleanup' EXIT

# bodies QUEUE: each visible message's body, one a line, keys sorted
bodies() {
    "$sqlq" queue peek "$1" --limit 32 | python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        print(json.dumps(json.loads(json.loads(line)["body"]), sort_keys=True))'
}
rows() { # rows QUEUE: "op id sorted-row-columns" per message
    bodies "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    print(m["op"], m["key"]["id"], ",".join(sorted(m["row"])) if m.get("row") else "-")' | sort
}

# One table per route: a caught-up bridge trims the change log for the next bridge name.
for t in orders excl cfg wh; do
    sql "CREATE TABLE $t (id INTEGER PRIMARY KEY, email TEXT, status TEXT, total INTEGER)"
done
# Set up for each bridge name that reads it (a logical source's slot is one bridge name's).
for tb in orders:cols orders:typo excl:excl cfg:cfg wh:default wh:bad; do
    "$sqlq" setup --db "$conn" --table "${tb%%:*}" --bridge-name "${tb#*:}" >"$tmp/setup.log" 2>&1 ||
        fail "setup $tb"
done

# --columns and --ops as flags: inserts and updates of status only; the delete is released.
q="cols-$kind-$$"; queues+=("$q")
sql "INSERT INTO orders VALUES (1, 'a@x', 'new', 5); INSERT INTO orders VALUES (2, 'b@x', 'new', 7)"
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --bridge-name cols --columns status \
    --ops insert,update --once >"$tmp/cols1.log" 2>&1 || fail "bridge --columns (1)"
sql "UPDATE orders SET status = 'paid' WHERE id = 1; DELETE FROM orders WHERE id = 2"
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --bridge-name cols --columns status \
    --ops insert,update --once >"$tmp/cols2.log" 2>&1 || fail "bridge --columns (2)"
grep -q "messages=1 released=2 " "$tmp/cols2.log" || fail "the filtered delete was not released"
got=$(rows "$q" | tr '\n' ';')
[ "$got" = "insert 1 id,status;insert 2 id,status;update 1 id,status;" ] || fail "--columns/--ops sent $got"
bodies "$q" | grep -q '"status": "paid"' || fail "the update's status is missing"

# --exclude-columns and --ops from the environment, --format functions keeps its shape.
q="excl-$kind-$$"; queues+=("$q")
sql "INSERT INTO excl VALUES (1, 'a@x', 'new', 5); INSERT INTO excl VALUES (2, 'b@x', 'new', 7)"
SQLQ_EXCLUDE_COLUMNS="email, total" SQLQ_OPS=insert,delete "$sqlq" bridge --db "$conn" --table excl \
    --queue "$q" --bridge-name excl --format functions --once >"$tmp/excl.log" 2>&1 || fail "bridge env"
items=$(bodies "$q" | python3 -c '
import json, sys
for line in sys.stdin:
    for c in json.loads(line):
        print(c["Operation"], ",".join(sorted(c["Item"])))' | sort | tr '\n' ';')
[ "$items" = "0 id,status;0 id,status;" ] || fail "env exclude_columns/ops with --format functions sent $items"

# Config-file route keys, initial visibility: accepted but not visible yet; filtered changes
# counted in /metrics.
q="cfg-$kind-$$"; queues+=("$q")
sql "INSERT INTO cfg VALUES (1, 'a@x', 'new', 5); INSERT INTO cfg VALUES (2, 'b@x', 'new', 7)"
mport=$("${SQLQ_SOURCE_DIR:?}/tests/support/free_port.sh")
cat >"$tmp/cfg.json" <<JSON
{"db": "$conn", "routes": [{"table": "cfg", "queue": "$q", "bridge_name": "cfg",
  "exclude_columns": "email", "ops": "update", "initial_visibility_s": 300}]}
JSON
"$sqlq" bridge --config "$tmp/cfg.json" --listen "127.0.0.1:$mport" >"$tmp/cfg.out" 2>"$tmp/cfg.log" &
bridge_pid=$!
metric() { # metric NAME: its value for this route, empty until it exists
    curl -s "http://127.0.0.1:$mport/metrics" | sed -n "s/^$1{table=\"cfg\",queue=\"$q\"} \([0-9]*\)$/\1/p"
}
wait_metric() { # wait_metric NAME VALUE
    for _ in $(seq 1 150); do [ "$(metric "$1")" = "$2" ] && return 0; sleep 0.2; done
    fail "$1 is '$(metric "$1")' (want $2)"
}
wait_metric sqlq_changes_filtered_total 2 # the two inserts
sql "UPDATE cfg SET total = 10 WHERE id = 1"
wait_metric sqlq_changes_published_total 1
kill "$bridge_pid"; wait "$bridge_pid" || true; bridge_pid=
[ -z "$(bodies "$q")" ] || fail "a message with initial_visibility_s 300 is visible at once"
"$sqlq" queue stats "$q" >"$tmp/stats.log" 2>/dev/null || fail "queue stats"
grep -q '"approximate_count": *1[,}]' "$tmp/stats.log" || fail "the update message was not put: $(cat "$tmp/stats.log")"

# The logical source refuses --where at start: the stream carries no predicate
# (docs/logical-source.md); the cases below are the change log's.
if [ "${SQLQ_TEST_SOURCE:-}" = logical ]; then
    set +e
    "$sqlq" bridge --db "$conn" --table wh --queue "where-$kind-$$" --where "status = 'paid'" --once \
        >"$tmp/where-logical.log" 2>&1
    code=$?
    set -e
    [ "$code" = 2 ] || fail "--where with source logical gave exit $code"
    grep -q "key where: not supported with source logical" "$tmp/where-logical.log" ||
        fail "--where with source logical: $(tail -1 "$tmp/where-logical.log")"
fi

# --where, evaluated by the database on the current row: an insert that does not match is
# released unsent; an update that leaves the filter is published as a delete; one that
# enters it as an update.
q="where-$kind-$$"; queues+=("$q")
if [ "${SQLQ_TEST_SOURCE:-}" != logical ]; then
sql "INSERT INTO wh VALUES (1, 'a@x', 'paid', 5); INSERT INTO wh VALUES (2, 'b@x', 'new', 7)"
"$sqlq" bridge --db "$conn" --table wh --queue "$q" --where "status = 'paid' AND r.total > 1" \
    --once >"$tmp/where1.log" 2>&1 || fail "bridge --where (1)"
grep -q "messages=1 released=2 " "$tmp/where1.log" || fail "the unmatched insert was not released"
sql "UPDATE wh SET status = 'refunded' WHERE id = 1; UPDATE wh SET status = 'paid' WHERE id = 2"
SQLQ_WHERE="status = 'paid' AND r.total > 1" "$sqlq" bridge --db "$conn" --table wh --queue "$q" \
    --once >"$tmp/where2.log" 2>&1 || fail "bridge --where (2)"
got=$(rows "$q" | tr '\n' ';')
[ "$got" = "delete 1 -;insert 1 email,id,status,total;update 2 email,id,status,total;" ] || fail "--where sent $got"
set +e
"$sqlq" bridge --db "$conn" --table wh --queue "$q" --bridge-name bad --where "no_such_column = 1" --once >"$tmp/badwhere.log" 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "a bad --where gave exit $code"
grep -q "key where: 'no_such_column = 1' is not a predicate on table wh" "$tmp/badwhere.log" || fail "bad --where message"
fi

# A column that does not exist: the route stops at start naming it.
set +e
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --bridge-name typo --columns totl --once >"$tmp/typo.log" 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "an unknown column gave exit $code"
grep -q "table orders has no column 'totl'" "$tmp/typo.log" || fail "the error does not name the column"
echo "$kind: ok"

# Usage errors name the key, the value and what is allowed.
set +e
"$sqlq" bridge --db "$conn" --table orders --queue xyz --ops insert,upsert --once >"$tmp/usage.log" 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "--ops upsert gave exit $code"
grep -q "key ops: 'upsert' is not allowed (a comma-separated subset of insert,update,delete)" "$tmp/usage.log" || fail "usage message"
echo ok
