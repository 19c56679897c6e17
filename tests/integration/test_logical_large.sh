#!/usr/bin/env bash
# The logical source with large work, memory measured (VmHWM of the bridge):
# - one transaction of 100,000 rows: every change published, peak memory under 120 MB (the
#   transaction waits as its pgoutput messages, spilled to a temporary file past 4 MB, and is
#   handed to the route two batches at a time; it used to be held whole as JSON: 170 MB);
# - one row of 20 MB: published key-only (truncated, as the trigger source does past the
#   message limit), peak memory under 200 MB.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
export SQLQ_QUEUE_CONNECTION=$(cat "$env_dir/azurite/conn")
port=$(cat "$env_dir/postgres/port")
name="lglarge_$$_$RANDOM"
conn="$(cat "$env_dir/postgres/odbc")Database=$name;"
tmp=$(mktemp -d)
q="lglarge-$$"
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    "$sqlq" queue delete "$q" >/dev/null 2>&1 || true
    psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE database = '$name' AND NOT active" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -20 "$tmp/bridge.log" >&2 2>/dev/null; exit 1; }

psql_ -d postgres -c "CREATE DATABASE $name"
psql_ -d "$name" -c "CREATE TABLE big (id int PRIMARY KEY, note text)"
"$sqlq" setup --db "$conn" --table big --source logical >/dev/null 2>&1 || fail "setup"

# AddressSanitizer's quarantine keeps freed memory: under it the RSS bounds are reported, not
# enforced.
asan=$(ldd "$sqlq" 2>/dev/null | grep -o libasan | head -1) || true
[ -z "$asan" ] || echo "built with AddressSanitizer: peak RSS reported, not bounded"

# run_once: the bridge with --once in the background; its peak RSS (kB) into $hwm.
run_once() {
    "$sqlq" bridge --db "$conn" --table big --queue "$q" --source logical --once "$@" \
        >"$tmp/bridge.out" 2>"$tmp/bridge.log" &
    local pid=$! h
    hwm=0
    while kill -0 "$pid" 2>/dev/null; do
        h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null || true)
        [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
        sleep 0.05
    done
    wait "$pid" || fail "bridge --once exited $?"
}

psql_ -d "$name" -c "INSERT INTO big SELECT g, 'row ' || g || repeat('.', 150) FROM generate_series(1, 100000) g"
run_once --format batch
grep -q "bridge_done changes=100000 " "$tmp/bridge.log" || fail "not every change of the transaction: $(grep bridge_done "$tmp/bridge.log")"
echo "100,000-row transaction: peak RSS $((hwm / 1024)) MB"
[ "$hwm" -lt $((120 * 1024)) ] || [ -n "$asan" ] || fail "peak RSS $((hwm / 1024)) MB for one 100,000-row transaction"

"$sqlq" queue clear "$q" >/dev/null
psql_ -d "$name" -c "INSERT INTO big SELECT 0, string_agg(md5(g::text), '') FROM generate_series(1, 655360) g"
run_once
grep -q "bridge_done changes=1 " "$tmp/bridge.log" || fail "the 20 MB row: $(grep bridge_done "$tmp/bridge.log")"
"$sqlq" queue peek "$q" >"$tmp/peek"
python3 - "$tmp/peek" <<'PY' || fail "the 20 MB row's message"
import json, sys
m = json.loads(json.loads(open(sys.argv[1]).readline())["body"])
assert m["key"] == {"id": 0} and m.get("truncated") is True and "row" not in m, m
PY
echo "20 MB row: peak RSS $((hwm / 1024)) MB"
[ "$hwm" -lt $((200 * 1024)) ] || [ -n "$asan" ] || fail "peak RSS $((hwm / 1024)) MB for one 20 MB row"
echo "logical_large: ok"
