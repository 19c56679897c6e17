#!/usr/bin/env bash
# PostgreSQL capture's wake-up, as a session listening on the log's channel sees it (the
# bridge's listener is tested by test_bridge_wakeup_notify*.sh). The trigger functions evaluate the
# wake-up once per call, before their upserts take versions (docs/capture.md, Wake-ups), and
# notify only while a bridge is armed: another session holds the log's wake-up lock here, as
# an armed bridge's listener does; with nobody holding it nothing is notified. With
# sqlq.notify = on and the lock held:
# an INSERT, an UPDATE, an UPDATE of the key and a DELETE each notify once; a transaction of
# several statements once (PostgreSQL folds them); an INSERT statement that inserts nothing
# (its statement trigger fires all the same) and an UPDATE of no row do not; an application's
# INSERT … ON CONFLICT DO UPDATE that only updates notifies once (the row trigger). With
# sqlq.notify = off nothing does. PostgreSQL delivers a session's own notifications to it, so
# one psql session listens and writes.
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
db="cpn_$$"
cleanup() { psql_ -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; }
trap cleanup EXIT
fail() { echo "capture_notify: $*" >&2; exit 1; }

psql_ -d postgres -c "CREATE DATABASE $db"
psql_ -d "$db" -c "CREATE TABLE kv (id int PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "${pgodbc}Database=$db;" --table kv >/dev/null 2>&1 ||
    fail "sqlq setup failed"

# notes SETTING SQL: how many notifications on sqlq.log_kv a session listening on it receives
# while it runs SQL (psql prints one line per notification after the statement that got it).
notes() {
    psql -X -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq -d "$db" \
        -c "SET sqlq.notify = $1" -c 'LISTEN "sqlq.log_kv"' -c "$2" -c "SELECT 1" 2>&1 |
        grep -c 'Asynchronous notification "sqlq.log_kv"' || true
}
expect() { # expect N SETTING SQL
    local got
    got=$(notes "$2" "$3")
    [ "$got" = "$1" ] || fail "sqlq.notify = $2, $3: $got notification(s), wanted $1"
}

# The wake-up lock, held as an armed listener holds it (sql/postgres/pg_listen.c), by a session that
# sleeps; the first expectation is made before it is taken.
expect 0 on "INSERT INTO kv VALUES (8, 'h')"
holder_pid=""
psql -X -q -A -t -h 127.0.0.1 -p "$port" -U sqlq -d "$db" -c "SET application_name = 'cpn_holder'" \
    -c "SELECT pg_advisory_lock(1936813169, hashtext('sqlq.log_kv'))" -c "SELECT pg_sleep(120)" \
    >/dev/null 2>&1 &
holder_pid=$!
trap 'kill $holder_pid 2>/dev/null || true; cleanup' EXIT # cleanup's DROP DATABASE needs it gone: WITH (FORCE)
for _ in $(seq 1 100); do
    [ "$(psql_ -d "$db" -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
        AND mode = 'ExclusiveLock' AND objid = hashtext('sqlq.log_kv')::oid")" = 1 ] && break
    sleep 0.05
done
expect 1 on "INSERT INTO kv VALUES (1, 'a')"
expect 0 on "INSERT INTO kv SELECT 2, 'b' WHERE false"
expect 1 on "UPDATE kv SET v = 'a2' WHERE id = 1"
expect 1 on "UPDATE kv SET id = 3 WHERE id = 1"
expect 0 on "UPDATE kv SET v = 'none' WHERE false"
expect 1 on "BEGIN; INSERT INTO kv VALUES (4, 'd'); INSERT INTO kv VALUES (5, 'e'), (6, 'f');
             UPDATE kv SET v = 'd2' WHERE id = 4; DELETE FROM kv WHERE id = 5; COMMIT"
expect 1 on "INSERT INTO kv VALUES (4, 'd3') ON CONFLICT (id) DO UPDATE SET v = excluded.v"
expect 1 on "DELETE FROM kv WHERE id = 3"
expect 0 off "INSERT INTO kv VALUES (7, 'g')"
expect 0 off "UPDATE kv SET v = 'g2' WHERE id = 7"
# Its backend would sleep on after its client went: end the session on the server.
psql_ -d "$db" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'cpn_holder'" >/dev/null
wait "$holder_pid" 2>/dev/null || true
expect 0 on "UPDATE kv SET v = 'g3' WHERE id = 7" # the lock let go: nobody waits
# everything above was logged, notified or not: keys 1, 3, 5 deleted, 4, 6, 7, 8 present
[ "$(psql_ -d "$db" -c "SELECT string_agg(id || sqlq_op, ',' ORDER BY id) FROM sqlq.log_kv")" \
    = "1D,3D,4U,5D,6I,7U,8I" ] || fail "the log: $(psql_ -d "$db" -c "TABLE sqlq.log_kv")"
echo "capture_notify: ok"
