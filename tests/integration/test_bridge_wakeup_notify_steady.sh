#!/usr/bin/env bash
# Wake-ups under a steady load (1,000 single-row transactions/s): after a short
# batch the route polls again at once (after what is left of the 5 ms coalescing window)
# instead of waiting: a hint came while the batch was on the wire (the version sequence read
# during its puts shows versions taken since its poll; then its release rides along with the
# next batch, released by the route's helper while that one is on the wire), or the arm at
# the start of its wait finds them (the trigger notifies only while a bridge is armed,
# docs/capture.md). The bridge runs at a 3 s
# polling interval and debug level, fed by pgbench with single-row commits at 300/s for 4 s:
#  1. the path is taken: no batch of the load waited for the polling interval (each wait
#     before a poll ended on a hint), and most polled again within 20 ms;
#  2. every change arrives, exactly once (still exactly once a polling interval later);
#  3. nothing is left leased: once the load stops, status shows no pending change and no held
#     lease well within one polling interval (a deferred release that was never made would
#     hold its leases until they expire and show the changes as pending).
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
db="wks_$$"
q="wks-$$-$RANDOM"
work=$(mktemp -d)
bridge_pid=""
cleanup() {
    [ -n "$bridge_pid" ] && kill -9 "$bridge_pid" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bridge_wakeup_notify_steady: $*" >&2
    [ -f "$work/bridge.log" ] && grep -v 'event=batch\|event=advanced' "$work/bridge.log" | tail -15 >&2
    exit 1
}
. "$(dirname "$0")/../support/queue_count.sh"
. "$(dirname "$0")/../support/wait_log.sh"
conn="${pgodbc}Database=$db;"

psql_ -d postgres -c "CREATE DATABASE $db"
# The test server allows prepared transactions: say that no writer here prepares (docs/capture.md).
psql_ -d postgres -c "ALTER DATABASE $db SET sqlq.notify = on"
psql_ -d "$db" -c "CREATE TABLE kv (id bigserial PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "$conn" --table kv >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null
SQLQ_LOG_LEVEL=debug "$SQLQ_BIN" bridge --db "$conn" --table kv --queue "$q" \
    --polling-interval-ms 3000 >/dev/null 2>"$work/bridge.log" &
bridge_pid=$!
wait_log "$work/bridge.log" "event=listen_started" || fail "the bridge did not start listening"

echo "INSERT INTO kv (v) VALUES ('steady');" >"$work/insert.sql"
pgbench -n -h 127.0.0.1 -p "$port" -U sqlq -c 1 -R 300 -T 4 -f "$work/insert.sql" "$db" >"$work/pgbench.log" 2>&1 ||
    fail "pgbench failed: $(tail -3 "$work/pgbench.log")"
n=$(psql_ -d "$db" -c "SELECT count(*) FROM kv")
[ "$n" -ge 300 ] || fail "pgbench committed only $n rows"

# 2. every change, exactly once.
ms=$(wait_count "$n" 20000)
echo "bridge_wakeup_notify_steady: $n single-row commits, the last arrived $ms ms after the load"

# 3. nothing left leased, well within the 3 s polling interval.
settled "$conn" kv 20 || fail "changes still pending or leases held 2 s after the load: $status"
echo "bridge_wakeup_notify_steady: no change pending, no lease held after the load: ok"
sleep 3.5 # one more polling interval: a change published twice would show now
[ "$(count)" = "$n" ] || fail "queue holds $(count) messages, wanted $n (each change exactly once)"
echo "bridge_wakeup_notify_steady: $n messages for $n changes: ok"

# 1. the path was taken: no batch's poll waited for the interval, most came at once.
short=$(grep -c 'event=batch .*full=0' "$work/bridge.log" || true)
hinted=$(grep -c 'event=batch .*full=0 .*hinted=1' "$work/bridge.log" || true)
slow=$(grep 'event=batch ' "$work/bridge.log" | grep -c ' wait_ms=\(2[5-9]\|[3-9][0-9]\)[0-9][0-9] ' || true)
quick=$(grep 'event=batch .*full=0' "$work/bridge.log" | grep -c ' wait_ms=\([0-9]\|1[0-9]\|20\) ' || true)
[ "$slow" = 0 ] || fail "$slow batches waited for the polling interval under a steady load (no hint)"
[ "$quick" -ge $((short / 2)) ] ||
    fail "only $quick of $short short batches polled again within 20 ms: the next poll waited"
echo "bridge_wakeup_notify_steady: $quick of $short short batches polled again within 20 ms ($hinted on a hint while on the wire), none waited for the interval: ok"
kill -TERM "$bridge_pid"
wait "$bridge_pid" || fail "bridge exited $?"
bridge_pid=""
