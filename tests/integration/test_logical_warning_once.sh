#!/usr/bin/env bash
# A logical route that keeps reopening its source (its slot dropped under it: each reopen
# fails, with back-off) logs each of its setup warnings once per process, not at each reopen;
# `sqlq status` shows them. The fixtures' PostgreSQL runs max_slot_wal_keep_size = -1 (its default): the warning
# "max_slot_wal_keep_size is -1" is the one looked at.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
export SQLQ_QUEUE_CONNECTION=$(cat "$env_dir/azurite/conn")
port=$(cat "$env_dir/postgres/port")
name="lgwarn_$$_$RANDOM"
conn="$(cat "$env_dir/postgres/odbc")Database=$name;"
tmp=$(mktemp -d)
pid=""
q="lgwarn-$$"
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$sqlq" queue delete "$q" >/dev/null 2>&1 || true
    for _ in 1 2 3 4 5; do # the slot is active until the killed bridge's session ends
        psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
            WHERE database = '$name' AND NOT active" >/dev/null 2>&1 || true
        [ "$(psql_ -d postgres -c "SELECT count(*) FROM pg_replication_slots WHERE database = '$name'" 2>/dev/null)" = 0 ] && break
        sleep 0.5
    done
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/bridge.log" ] && tail -30 "$tmp/bridge.log" >&2
    exit 1
}
[ "$(psql_ -d postgres -c "SHOW max_slot_wal_keep_size")" = -1 ] ||
    fail "the fixture's server bounds max_slot_wal_keep_size: this test needs the default -1"
psql_ -d postgres -c "CREATE DATABASE $name" >/dev/null
psql_ -d "$name" -c "CREATE TABLE w (id int PRIMARY KEY, note text)" >/dev/null
"$sqlq" setup --db "$conn" --table w --source logical >"$tmp/setup.out" 2>&1 || { cat "$tmp/setup.out" >&2; fail "setup"; }

"$sqlq" bridge --db "$conn" --table w --queue "$q" --source logical --polling-interval-ms 100 \
    --log-level info >"$tmp/bridge.out" 2>"$tmp/bridge.log" &
pid=$!
opened() { grep -c "event=capture_opened" "$tmp/bridge.log" || true; }
wait_opened() { # N: until the capture was opened N times
    for _ in $(seq 300); do
        [ "$(opened)" -ge "$1" ] && return 0
        kill -0 "$pid" 2>/dev/null || fail "the bridge exited"
        sleep 0.1
    done
    fail "the capture was not opened $1 times within 30 s (opened $(opened))"
}
wait_opened 1
psql_ -d "$name" -c "INSERT INTO w VALUES (1, 'streamed')" >/dev/null
for _ in $(seq 300); do grep -q "event=logical_stream_started" "$tmp/bridge.log" && break; sleep 0.1; done

# sqlq status shows what the route warned about.
"$sqlq" status --db "$conn" --table w --json >"$tmp/status.json" 2>"$tmp/status.err" || true
grep -q "max_slot_wal_keep_size is -1" "$tmp/status.json" ||
    fail "sqlq status --json does not show the warning: $(cat "$tmp/status.json" "$tmp/status.err")"
"$sqlq" status --db "$conn" --table w >"$tmp/status.txt" 2>&1 || true
grep -q "warning: max_slot_wal_keep_size is -1" "$tmp/status.txt" ||
    fail "sqlq status does not show the warning: $(cat "$tmp/status.txt")"

# The slot dropped under the route (its stream terminated first): the route stops and tries to
# reopen its source, with back-off, for as long as it runs.
slot=$(psql_ -d postgres -c "SELECT slot_name FROM pg_replication_slots WHERE database = '$name'")
[ -n "$slot" ] || fail "no slot for $name"
psql_ -d postgres -c "DO \$\$ BEGIN
    PERFORM pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '$slot' AND active_pid IS NOT NULL;
    FOR i IN 1..500 LOOP
        BEGIN PERFORM pg_drop_replication_slot('$slot'); RETURN;
        EXCEPTION WHEN object_in_use THEN PERFORM pg_sleep(0.01); END;
    END LOOP;
    RAISE 'slot $slot stayed active'; END \$\$" >/dev/null || fail "could not drop the slot"
reopens() { grep -c "event=capture_open_failed" "$tmp/bridge.log" || true; }
for _ in $(seq 600); do
    [ "$(reopens)" -ge 3 ] && break
    kill -0 "$pid" 2>/dev/null || fail "the bridge exited"
    sleep 0.1
done
[ "$(reopens)" -ge 3 ] || fail "the route did not try to reopen 3 times within 60 s ($(reopens))"

warned=$(grep -c "event=logical_warning.*max_slot_wal_keep_size is -1" "$tmp/bridge.log" || true)
[ "$warned" = 1 ] || fail "the max_slot_wal_keep_size warning was logged $warned times over $(reopens) reopens, wanted once"
echo "logical_warning_once: $(reopens) reopens, the warning logged once, shown by sqlq status: ok"
