#!/usr/bin/env bash
# The --sql sink decides, on the database $SQLQ_TEST_DATABASE names (sqlite,
# postgres, mariadb): a NOT NULL violation sends the message to QUEUE-poison on its first attempt,
# with the database's reason logged and the poison text byte-identical; a foreign key violation,
# which may pass once the parent arrives, is retried. (--exec and --http: test_consumer_reject.sh.)
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() { echo "FAIL: $kind: $*" >&2; for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -6 "$f" >&2; }; done; exit 1; }
unset SQLQ_DB_CONNECTION SQLQ_POISON_ENVELOPE || true
prefix=sqlreject
. "$(dirname "$0")/../support/change_log_db.sh"

# What differs: the words of a NOT NULL violation, and the tables of a foreign key (none where
# the database does not check them by default).
case "$kind" in
sqlite)
    not_null="NOT NULL constraint failed"
    fk="" ;; # checked only with PRAGMA foreign_keys = ON, per connection
postgres)
    not_null="violates not-null constraint"
    fk="CREATE TABLE parents (id text PRIMARY KEY); CREATE TABLE kids (id int PRIMARY KEY, v text REFERENCES parents)" ;;
mariadb)
    not_null="cannot be null"
    fk="CREATE TABLE parents (id varchar(9) PRIMARY KEY); CREATE TABLE kids (id int PRIMARY KEY, v varchar(9), FOREIGN KEY (v) REFERENCES parents (id))" ;;
esac

msg='{"id":"1","op":"insert","table":"orders","key":{"id":1},"row":{"id":1,"v":null},"version":1,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
newq() { q="rej-$1-$$"; queues+=("$q" "$q-poison"); "$sqlq" queue create "$q" >/dev/null; "$sqlq" queue put "$q" "$msg" >/dev/null; }
consume() { # consume LOG ARGS...: drain the queue
    local log=$1; shift
    timeout 60 "$sqlq" consume "$q" --exit-when-empty --max-polling-interval-ms 300 "$@" >"$tmp/$log" 2>&1 \
        || fail "$log: consume exited $?"
}
poison_body() { "$sqlq" queue peek "$q-poison" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["body"])'; }

sql "CREATE TABLE orders (id int PRIMARY KEY, v text NOT NULL)"
newq "nn-$kind"
consume notnull.log --sql "$conn" --table orders
grep -q "event=consumer.poisoned .*dequeue_count=1 .*$not_null" "$tmp/notnull.log" || fail "not poisoned on its first attempt"
grep -q "event=consumer.poisoned .*$not_null" "$tmp/notnull.log" || fail "not poisoned with reason '$not_null'"
[ "$(poison_body)" = "$msg" ] || fail "the poison text changed: $(poison_body)"
echo "$kind: a NOT NULL violation poisoned: ok"

# A foreign key violation may pass once the parent arrives: retried.
if [ -n "$fk" ]; then
    sql "$fk"
    q="rej-fk-$kind-$$"; queues+=("$q" "$q-poison"); "$sqlq" queue create "$q" >/dev/null
    "$sqlq" queue put "$q" '{"id":"1","op":"insert","table":"kids","key":{"id":1},"row":{"id":1,"v":"p"},"version":1,"bridge":"default","ts":"x"}' >/dev/null
    consume fk.log --sql "$conn" --table kids --max-dequeue-count 2
    grep -q "event=consumer.poisoned .*dequeue_count=2 " "$tmp/fk.log" || fail "a foreign key violation was not retried"
    echo "$kind: a foreign key violation retried: ok"
fi
