#!/usr/bin/env bash
# `sqlq consume --sql` end to end, into the database $SQLQ_TEST_DATABASE names (sqlite, postgres,
# mariadb): bridge-shaped messages put on a queue (base64, as the bridge sends them) are applied
# to a table; a second pass over the same messages changes nothing; a missing table is refused
# at start (exit 2); messages that do not fit or cannot be trusted are poisoned with their
# reason while the consumer keeps running.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() { echo "consume_sql: $kind: $*" >&2; exit 1; }
unset SQLQ_DB_CONNECTION || true
prefix=csql
. "$(dirname "$0")/../support/change_log_db.sh"
odbc=$conn
work=$tmp
q="csql-$$"
queues+=("$q" "$q-poison")
# total as the database writes numeric(10,2) back (SQLite: NUMERIC affinity, a REAL)
case "$kind" in
sqlite) cents() { echo "$1" | sed 's/\.00$//; s/\(\.[0-9]\)0$/\1/'; } ;;
*) cents() { echo "$1"; } ;;
esac
sql "CREATE TABLE orders (region $(case $kind in mariadb) echo 'varchar(8)' ;; *) echo text ;; esac), id int,
     total numeric(10,2), note text, PRIMARY KEY (region, id))"
"$SQLQ_BIN" queue create "$q" >/dev/null
put() { "$SQLQ_BIN" queue put "$q" "$1" >/dev/null; }
msgs=(
  '{"id":"1","op":"insert","table":"orders","key":{"region":"eu","id":1},"row":{"region":"eu","id":1,"total":"10.00","note":"first"},"version":1,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
  '{"id":"2","op":"insert","table":"orders","key":{"region":"us","id":2},"row":{"region":"us","id":2,"total":"20.00","note":"second"},"version":2,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
  '{"changes":[{"id":"3","op":"update","table":"orders","key":{"region":"eu","id":1},"row":{"region":"eu","id":1,"total":"11.50","note":"it'"'"'s; DROP TABLE orders"},"version":3,"bridge":"default","ts":"x"},{"id":"4","op":"delete","table":"orders","key":{"region":"us","id":2},"row":null,"version":4,"bridge":"default","ts":"x"}]}'
  '[{"Operation":0,"Item":{"region":"eu","id":5,"total":"5.00","note":"functions"}}]'
)
want="eu|1|$(cents 11.50)|it's; DROP TABLE orders"$'\n'"eu|5|$(cents 5.00)|functions"
for pass in 1 2; do
    # Messages one by one (a single worker), so later changes land after earlier ones.
    for m in "${msgs[@]}"; do put "$m"; done
    timeout 60 "$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --exit-when-empty \
        --batch-size 1 --new-batch-threshold 1 --max-polling-interval-ms 300 2> "$work/log" \
        || fail "pass $pass: consume exited $?: $(tail -3 "$work/log")"
    got=$(query "SELECT region, id, total, note FROM orders ORDER BY region, id")
    [ "$got" = "$want" ] || fail "pass $pass: rows:\n$got\nwant:\n$want"
done
echo "consume_sql: applied and re-applied: ok"

set +e
"$SQLQ_BIN" consume "$q" --sql "$odbc" --table missing_table --exit-when-empty 2> "$work/err"
code=$?
set -e
[ "$code" = 2 ] || fail "missing table: exit $code"
grep -q 'missing_table: the table does not exist' "$work/err" || fail "missing table: $(cat "$work/err")"

echo "consume_sql: refusals: ok"

# Message-level faults take the message path: the consumer starts, each bad message
# fails with its reason and is poisoned; the good one behind them is applied. Before, a bad first
# message made every start exit 2 and the queue stalled. A defect of the message itself (not
# JSON, \u0000, not UTF-8, no key, truncated, no or a bad version, a row naming another key,
# duplicate fields) is poisoned at once (dequeue count 1: no retry can cure it); a change that
# does not fit the table (a column it lacks, another key) after the usual attempts (2 here),
# since the operator may ALTER TABLE and requeue.
c='{"id":"x","op":"update","table":"orders","bridge":"default","ts":"x",'
bad=(
  "${c}\"key\":{\"id\":9},\"row\":{\"id\":9,\"total\":\"1\"},\"version\":9}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"truncated\":true,\"version\":10}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"colour\":\"red\"},\"version\":10}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":5,\"note\":\"hijack\"},\"version\":10}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"note\":\"a\",\"note\":\"b\"},\"version\":10}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"note\":\"frozen\"},\"version\":9223372036854775807}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"note\":\"v\"},\"version\":\"10\"}"
  'not json at all'
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"note\":\"nul\\u0000\"},\"version\":11}"
  "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"note\":\"bad"$'\xff'"\"},\"version\":11}"
  "${c}\"row\":{\"region\":\"eu\",\"id\":1,\"note\":\"keyless\"},\"version\":11}"
)
reasons=("primary key of orders is (region, id)" "without its row" "column colour of the message is not in table orders: the table lacks it (add it with ALTER TABLE"
         "row.id (5) disagrees with the message key" "duplicate JSON fields" "is implausible" "is not an integer"
         "body is not JSON: invalid token" "u0000 is not allowed" "unable to decode byte 0xff" "change without a")
# The dequeue count each was poisoned at: 1 for a defect of the message, 2 for a table misfit.
attempts=(2 1 2 1 1 1 1 1 1 1 1)
for m in "${bad[@]}"; do put "$m"; done
put "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"12.00\",\"note\":\"good\"},\"version\":10}"
timeout 60 "$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --exit-when-empty --max-dequeue-count 2 \
    --batch-size 1 --new-batch-threshold 1 --max-polling-interval-ms 300 2> "$work/log" \
    || fail "bad messages: consume exited $?: $(tail -3 "$work/log")"
for i in "${!reasons[@]}"; do
    r=${reasons[$i]}
    grep -F "$r" "$work/log" | grep -q "event=consumer.poisoned .*dequeue_count=${attempts[$i]} " \
        || fail "not poisoned at dequeue count ${attempts[$i]} naming: $r: $(grep -F "$r" "$work/log")"
done
"$SQLQ_BIN" queue stats "$q-poison" | grep -Eq '"approximate_count":11[,}]' \
    || fail "bad messages were not all poisoned: $("$SQLQ_BIN" queue stats "$q-poison")"
got=$(query "SELECT region, id, total, note FROM orders ORDER BY region, id")
want2="eu|1|$(cents 12.00)|good"$'\n'"eu|5|$(cents 5.00)|functions"
[ "$got" = "$want2" ] || fail "after bad messages: rows:\n$got\nwant:\n$want2"
echo "consume_sql: untrustworthy messages poisoned with their reason, consumer kept running: ok"

# Skipped (older) changes are counted and logged at info level, rate-limited; --reset-version
# forgets a key's version so an older state can be applied again.
for v in 3 4 5; do
    put "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"1.00\",\"note\":\"old$v\"},\"version\":$v}"
done
mport=$("$(dirname "$0")/../support/free_port.sh")
"$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --listen "127.0.0.1:$mport" \
    --batch-size 1 --new-batch-threshold 1 --max-polling-interval-ms 300 2> "$work/log" &
cpid=$!
metric=""
for _ in $(seq 1 100); do
    metric=$(curl -s "http://127.0.0.1:$mport/metrics" | grep '^sqlq_sink_changes_skipped_total{table="orders"}' || true)
    [ "$metric" = 'sqlq_sink_changes_skipped_total{table="orders"} 3' ] && break
    sleep 0.1
done
kill "$cpid"
wait "$cpid" || true
[ "$metric" = 'sqlq_sink_changes_skipped_total{table="orders"} 3' ] || fail "skip metric: '$metric'"
n=$(grep -c 'sink.skipped' "$work/log" || true)
[ "$n" = 1 ] || fail "expected one rate-limited skip line, got $n: $(cat "$work/log")"
grep 'sink.skipped' "$work/log" | grep -q 'stored_version=10' || fail "skip line without the stored version"
[ "$(query "SELECT note FROM orders WHERE id = 1")" = good ] || fail "an older change was applied"
put "${c}\"key\":{\"region\":\"eu\",\"id\":1},\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"1.00\",\"note\":\"restored\"},\"version\":2}"
timeout 60 "$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --exit-when-empty \
    --reset-version '{"id":1,"region":"eu"}' --max-polling-interval-ms 300 2> "$work/log" \
    || fail "reset: consume exited $?: $(tail -3 "$work/log")"
grep -q 'forgotten=1' "$work/log" || fail "reset: $(cat "$work/log")"
[ "$(query "SELECT note FROM orders WHERE id = 1")" = restored ] || fail "reset did not let version 2 apply"
timeout 60 "$SQLQ_BIN" consume "$q" --sql "$odbc" --table orders --exit-when-empty --reset-version all \
    --max-polling-interval-ms 300 2> "$work/log" || fail "reset all: exit $?"
grep -q 'forgotten=' "$work/log" || fail "reset all: $(cat "$work/log")"
echo "consume_sql: skips counted and logged once, versions reset: ok"
