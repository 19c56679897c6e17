#!/usr/bin/env bash
# `sqlq consume --sql` while the target database is down: an outage, never the messages' fault.
# On a private PostgreSQL server (it is stopped and started): the server stopped, the database
# closed to connections (ALLOW_CONNECTIONS false, its sessions terminated), and a role allowed
# fewer connections than the consumer has workers. In each case no message is poisoned or
# counted as failed, /readyz is 503 naming the database and sqlq_handler_unavailable is 1 while
# it lasts, the log says so once, and every message is applied once the database is back.
# A drain (--exit-when-empty) that meets such an outage stops with exit 1 naming the database
# (never "the queue could not be read"), leaving its message in the queue, not counted.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
sqlq=$SQLQ_BIN
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
chmod 755 "$work" # the private server runs as postgres when the test runs as root
export SQLQ_STATE_DIR="$work/state"
pg="$work/pg"
q="csqlout-$$"
pid=
holder=
cleanup() {
    [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
    [ -z "$holder" ] || kill "$holder" 2>/dev/null || true
    "$sqlq" queue delete "$q" >/dev/null 2>&1 || true
    "$sqlq" queue delete "$q-poison" >/dev/null 2>&1 || true
    "$SQLQ_SOURCE_DIR/tests/support/postgres.sh" stop "$pg" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consume_sql_outage: $*" >&2; tail -15 "$work/log" >&2 2>/dev/null || true; exit 1; }
source "$SQLQ_SOURCE_DIR/tests/support/wait_log.sh"

"$SQLQ_SOURCE_DIR/tests/support/postgres.sh" start "$pg" >/dev/null
pgport=$(cat "$pg/port")
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgport" -U sqlq "$@"; }
psql_ -d postgres -c "CREATE DATABASE tgt"
psql_ -d tgt -c "CREATE TABLE orders (id int PRIMARY KEY, v text)"
odbc="$(cat "$pg/odbc")Database=tgt;"
"$sqlq" queue create "$q" >/dev/null

msg() { echo "{\"id\":\"$1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"id\":$1},\"row\":{\"id\":$1,\"v\":\"$2\"},\"version\":$1,\"bridge\":\"default\",\"ts\":\"2024-05-01T00:00:00Z\"}"; }
put() { "$sqlq" queue put "$q" "$(msg "$1" "$2")" >/dev/null; }
rows() { psql_ -d tgt -c "SELECT count(*) FROM orders WHERE id BETWEEN $1 AND $2"; }
wait_rows() { # FROM TO N TENTHS
    for _ in $(seq 1 "$4"); do [ "$(rows "$1" "$2" 2>/dev/null || echo 0)" = "$3" ] && return 0; sleep 0.1; done
    fail "rows $1..$2: $(rows "$1" "$2") applied, wanted $3"
}
poisoned() { { "$sqlq" queue stats "$q-poison" 2>/dev/null || true; } | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
no_poison() { local n; n=$(poisoned); [ "${n:-0}" = 0 ] || fail "$1: $n message(s) poisoned: $(grep 'consumer.poisoned' "$work/log" | head -3)"; }
mport=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
ready() { curl -s -o "$work/ready" -w '%{http_code}' "http://127.0.0.1:$mport/readyz"; }
metric() { curl -s "http://127.0.0.1:$mport/metrics" | sed -n "s/^$1{queue=\"$q\"} //p"; }
during_outage() { # WHAT: checked a few seconds into the outage
    local code=
    for _ in $(seq 1 100); do code=$(ready); [ "$code" = 503 ] && grep -q 'database' "$work/ready" && break; sleep 0.1; done
    [ "$code" = 503 ] || fail "$1: /readyz answered $code during the outage"
    grep -q 'tgt' "$work/ready" || fail "$1: /readyz does not name the database: $(cat "$work/ready")"
    [ "$(metric sqlq_handler_unavailable)" = 1 ] || fail "$1: sqlq_handler_unavailable is '$(metric sqlq_handler_unavailable)'"
    sleep 3 # the old consumer poisoned every message within a second
    no_poison "$1"
    wait_log "$work/log" 'event=consumer.handler_outage ' 50 || fail "$1: no consumer.handler_outage line"
}
after_outage() { # WHAT
    local code=
    for _ in $(seq 1 100); do code=$(ready); [ "$code" = 200 ] && break; sleep 0.1; done
    [ "$code" = 200 ] || fail "$1: /readyz answered $code after the outage: $(cat "$work/ready")"
    [ "$(metric sqlq_handler_unavailable)" = 0 ] || fail "$1: sqlq_handler_unavailable stayed '$(metric sqlq_handler_unavailable)'"
    [ "$(metric sqlq_messages_failed_total)" = 0 ] || fail "$1: $(metric sqlq_messages_failed_total) attempt(s) counted as failed"
    wait_log "$work/log" 'event=consumer.handler_outage_over' 50 || fail "$1: no consumer.handler_outage_over line"
    no_poison "$1"
}

"$sqlq" consume "$q" --sql "$odbc" --table orders --listen "127.0.0.1:$mport" \
    --max-polling-interval-ms 300 2> "$work/log" &
pid=$!
put 1 first
wait_rows 1 1 1 300

# 1. The server stops (pg_ctl stop: its sessions are terminated, then connections refused).
"$SQLQ_SOURCE_DIR/tests/support/postgres.sh" stop "$pg"
for i in 2 3 4; do put "$i" down; done
during_outage "server stopped"
"$SQLQ_SOURCE_DIR/tests/support/postgres.sh" start "$pg" "$pgport" >/dev/null
wait_rows 2 4 3 600
after_outage "server stopped"
echo "consume_sql_outage: server stopped and started: held, none poisoned, all applied: ok"

# 2. The database closed to connections and its sessions terminated.
lines=$(wc -l < "$work/log")
psql_ -d postgres -c "ALTER DATABASE tgt ALLOW_CONNECTIONS false" \
    -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'tgt'" >/dev/null
for i in 5 6 7 8 9; do put "$i" closed; done
during_outage "ALLOW_CONNECTIONS false"
tail -n +"$((lines + 1))" "$work/log" | grep 'event=consumer.handler_outage ' | grep -q 'not currently accepting connections' \
    || fail "the outage line does not carry the server's reason"
psql_ -d postgres -c "ALTER DATABASE tgt ALLOW_CONNECTIONS true" >/dev/null
wait_rows 5 9 5 600
after_outage "ALLOW_CONNECTIONS false"
kill -TERM "$pid"; wait "$pid" || fail "consumer exit $?"; pid=
echo "consume_sql_outage: database closed to connections: held, none poisoned, all applied: ok"

# 3. A role allowed 2 connections, 24 workers: the consumer applies everything with what it gets.
psql_ -d postgres -c "CREATE ROLE lim LOGIN CONNECTION LIMIT 2" -c "GRANT ALL ON DATABASE tgt TO lim" >/dev/null
psql_ -d tgt -c "GRANT ALL ON SCHEMA public TO lim" -c "GRANT ALL ON ALL TABLES IN SCHEMA public TO lim" >/dev/null
limodbc="${odbc/UID=sqlq/UID=lim}"
for i in $(seq 10 29); do put "$i" limited; done
timeout 120 "$sqlq" consume "$q" --sql "$limodbc" --table orders --exit-when-empty \
    --max-polling-interval-ms 300 2> "$work/log" \
    || fail "limited connections: drain exited $?: $(grep -v level=debug "$work/log" | tail -3)"
wait_rows 10 29 20 10
no_poison "limited connections"
grep -q 'event=consumer.handler_failed' "$work/log" && fail "limited connections: attempts failed"
echo "consume_sql_outage: 24 workers on 2 connections: all applied, none failed: ok"

# 4. A drain whose database goes away mid-message: exit 1 naming the database; the message
# stays in the queue, its dequeue not counted; the next drain applies it.
put 40 drained
( psql_ -d tgt -c "BEGIN; LOCK TABLE orders IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60)" >/dev/null 2>&1 || true ) &
holder=$!
for _ in $(seq 1 50); do
    [ "$(psql_ -d tgt -c "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'orders' AND l.mode = 'AccessExclusiveLock' AND l.granted")" = 1 ] && break
    sleep 0.1
done
[ "$(psql_ -d tgt -c "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'orders' AND l.mode = 'AccessExclusiveLock' AND l.granted")" = 1 ] \
    || fail "the table lock was not taken"
set +e
timeout 120 "$sqlq" consume "$q" --sql "$odbc" --table orders --exit-when-empty \
    --max-polling-interval-ms 300 > "$work/out" 2> "$work/log" &
pid=$!
set -e
for _ in $(seq 1 100); do
    [ "$(psql_ -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'tgt' AND wait_event_type = 'Lock'")" -ge 1 ] && break
    sleep 0.1
done
[ "$(psql_ -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'tgt' AND wait_event_type = 'Lock'")" -ge 1 ] \
    || fail "the drain's upsert never waited for the table lock: $(cat "$work/log")"
# Only the drain's session: the lock holder stays, so the upsert cannot slip through.
psql_ -d postgres -c "ALTER DATABASE tgt ALLOW_CONNECTIONS false" \
    -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'tgt' AND wait_event_type = 'Lock'" >/dev/null
code=0; wait "$pid" || code=$?; pid=
psql_ -d postgres -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'tgt'" >/dev/null
wait "$holder" 2>/dev/null || true; holder=
[ "$code" = 1 ] || fail "drain in a database outage: exit $code"
grep -q 'the queue could not be read' "$work/log" && fail "the drain blames the queue: $(grep 'sqlq consume:' "$work/log")"
grep 'sqlq consume:' "$work/log" | grep -q 'target database' || fail "the drain's error does not name the database: $(grep 'sqlq consume:' "$work/log")"
grep 'sqlq consume:' "$work/log" | grep -q 'Database=tgt' || fail "the drain's error does not name the database: $(grep 'sqlq consume:' "$work/log")"
no_poison "drain"
psql_ -d postgres -c "ALTER DATABASE tgt ALLOW_CONNECTIONS true" >/dev/null
timeout 60 "$sqlq" consume "$q" --sql "$odbc" --table orders --exit-when-empty --max-polling-interval-ms 300 \
    --log-level debug 2> "$work/log" || fail "drain after the outage: exit $?"
wait_rows 40 40 1 10
# The dequeue the outage spent was given back: this delivery is the message's first attempt.
grep 'event=consumer.done' "$work/log" | grep -q 'dequeue_count=2 attempt=1' \
    || fail "the abandoned dequeue was counted: $(grep 'event=consumer.done' "$work/log")"
echo "consume_sql_outage: drain stopped naming the database, message kept and applied next time: ok"
