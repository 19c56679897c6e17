#!/usr/bin/env bash
# Wake-ups on SQLite: a bridge at a 3 s polling interval probes PRAGMA data_version
# every 10 ms and polls at once when another connection committed: single-row commits made by
# another process arrive within 600 ms (5 samples; a 3 s poll alone would make that in 20% of
# the cases each). With --no-wakeup the same commits wait for the next poll.
set -euo pipefail
: "${SQLQ_BIN:?run through ctest}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
q="wks-$$-$RANDOM"
work=$(mktemp -d)
db="$work/wk.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
bridge_pid=""
cleanup() {
    [ -n "$bridge_pid" ] && kill -9 "$bridge_pid" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bridge_wakeup_data_version: $*" >&2
    [ -f "$work/bridge.log" ] && tail -15 "$work/bridge.log" >&2
    exit 1
}
. "$(dirname "$0")/../support/queue_count.sh"
start_bridge() {
    local before
    before=$(grep -c "event=route_started" "$work/bridge.log" 2>/dev/null || true)
    SQLQ_LOG_LEVEL=info "$SQLQ_BIN" bridge --db "$conn" --table kv --queue "$q" \
        --polling-interval-ms 3000 "$@" >/dev/null 2>>"$work/bridge.log" &
    bridge_pid=$!
    for _ in $(seq 1 100); do
        [ "$(grep -c "event=route_started" "$work/bridge.log")" -gt "${before:-0}" ] && break
        sleep 0.1
    done
    sleep 0.5
}
n=0
insert() {
    sleep 0.$((RANDOM % 9 + 1))
    sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO kv VALUES ($1, 'x')"
    n=$((n + 1))
    ms=$(wait_count "$n" 3600)
}

sqlite3 "$db" "CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT)"
"$SQLQ_BIN" setup --db "$conn" --table kv >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null
start_bridge
for i in 1 2 3 4 5; do
    insert "$i"
    [ "$ms" -le 600 ] || fail "row $i arrived after $ms ms: not woken (polling interval 3000 ms)"
    echo "bridge_wakeup_data_version: row $i arrived in $ms ms: ok"
done
kill -TERM "$bridge_pid"
wait "$bridge_pid" || fail "bridge exited $?"

# The same without wake-ups: at least one of 5 commits waits longer (the check can fail).
start_bridge --no-wakeup
slow=0
for i in 11 12 13 14 15; do
    insert "$i"
    [ "$ms" -gt 600 ] && slow=$((slow + 1))
done
[ "$slow" -ge 1 ] || fail "without wake-ups every commit arrived within 600 ms: the check above proves nothing"
echo "bridge_wakeup_data_version: --no-wakeup: $slow of 5 commits waited for the poll: ok"
kill -TERM "$bridge_pid"
wait "$bridge_pid" || fail "bridge exited $?"
bridge_pid=""
