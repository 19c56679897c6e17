#!/usr/bin/env bash
# `sqlq consume --sql` end to end: bridge-shaped messages put on a queue (base64, as the bridge
# sends them) are applied to a PostgreSQL table; a second pass over the same messages changes
# nothing; a missing table and a queue whose messages do not fit the table are refused at start
# (exit 2) before any message is touched.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
port=$(cat "$SQLQ_TEST_ENV_DIR/postgres/port")
db="csql_$$"
odbc="$(cat "$SQLQ_TEST_ENV_DIR/postgres/odbc")Database=$db;"
work=$(mktemp -d)
q="csql-$$"
psql_() { psql -X -q -A -t -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consume_sql: $*" >&2; exit 1; }

psql_ -d postgres -c "CREATE DATABASE $db"
psql_ -d "$db" -c "CREATE TABLE orders (region text, id int, total numeric(10,2), note text, PRIMARY KEY (region, id))"
"$SQLQ_BIN" queue create "$q" >/dev/null
put() { "$SQLQ_BIN" queue put "$q" "$1" >/dev/null; }
msgs=(
  '{"id":"1","op":"insert","table":"orders","key":{"region":"eu","id":1},"row":{"region":"eu","id":1,"total":"10.00","note":"first"},"version":1,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
  '{"id":"2","op":"insert","table":"orders","key":{"region":"us","id":2},"row":{"region":"us","id":2,"total":"20.00","note":"second"},"version":2,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
  '{"changes":[{"id":"3","op":"update","table":"orders","key":{"region":"eu","id":1},"row":{"region":"eu","id":1,"total":"11.50","note":"it'"'"'s; DROP TABLE orders"},"version":3,"bridge":"default","ts":"x"},{"id":"4","op":"delete","table":"orders","key":{"region":"us","id":2},"row":null,"version":4,"bridge":"default","ts":"x"}]}'
  '[{"Operation":0,"Item":{"region":"eu","id":5,"total":"5.00","note":"functions"}}]'
)
want=$'eu|1|11.50|it\'s; DROP TABLE orders\neu|5|5.00|functions'
for pass in 1 2; do
    # Messages one by one (a single worker), so later changes land after earlier ones.
    for m in "${msgs[@]}"; do put "$m"; done
    timeout 60 "$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --exit-when-empty \
        --batch-size 1 --new-batch-threshold 1 --max-polling-interval-ms 300 2> "$work/log" \
        || fail "pass $pass: consume exited $?: $(tail -3 "$work/log")"
    got=$(psql_ -d "$db" -c "SELECT region, id, total, note FROM orders ORDER BY region, id")
    [ "$got" = "$want" ] || fail "pass $pass: rows:\n$got\nwant:\n$want"
done
echo "consume_sql: applied and re-applied: ok"

set +e
"$SQLQ_BIN" consume "$q" --sql "$odbc" --table missing_table --exit-when-empty 2> "$work/err"
code=$?
set -e
[ "$code" = 2 ] || fail "missing table: exit $code"
grep -q 'missing_table: the table does not exist' "$work/err" || fail "missing table: $(cat "$work/err")"

put '{"id":"9","op":"insert","table":"orders","key":{"id":9},"row":{"id":9,"total":"1"},"version":9,"bridge":"default","ts":"x"}'
set +e
"$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --exit-when-empty 2> "$work/err"
code=$?
set -e
[ "$code" = 2 ] || fail "key mismatch: exit $code"
grep -q 'does not fit the messages.*primary key of orders is (region, id)' "$work/err" \
    || fail "key mismatch: $(cat "$work/err")"
"$SQLQ_BIN" queue stats "$q" | grep -q '"approximate_count":1,' || fail "the refused run touched the queue"
echo "consume_sql: refusals: ok"
