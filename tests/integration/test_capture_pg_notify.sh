#!/usr/bin/env bash
# PostgreSQL capture's wake-up, as a session listening on the log's channel sees it (the
# bridge's listener is tested by test_bridge_wakeup*.sh). The trigger functions evaluate the
# wake-up once per call, after their upserts (docs/capture.md, Wake-ups). With sqlq.notify = on:
# an INSERT, an UPDATE, an UPDATE of the key and a DELETE each notify once; a transaction of
# several statements once (PostgreSQL folds them); an INSERT statement that inserts nothing
# (its statement trigger fires all the same) and an UPDATE of no row do not; an application's
# INSERT … ON CONFLICT DO UPDATE that only updates notifies once (the row trigger). With
# sqlq.notify = off nothing does. PostgreSQL delivers a session's own notifications to it, so
# one psql session listens and writes.
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
db="cpn_$$"
cleanup() { psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true; }
trap cleanup EXIT
fail() { echo "capture_pg_notify: $*" >&2; exit 1; }

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
# everything above was logged, notified or not: keys 1, 3, 5 deleted, 4, 6, 7 present
[ "$(psql_ -d "$db" -c "SELECT string_agg(id || sqlq_op, ',' ORDER BY id) FROM sqlq.log_kv")" \
    = "1D,3D,4U,5D,6I,7U" ] || fail "the log: $(psql_ -d "$db" -c "TABLE sqlq.log_kv")"
echo "capture_pg_notify: ok"
