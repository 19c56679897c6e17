#!/usr/bin/env bash
# The bridge's and the consumer's /metrics and /readyz during a real run: counters move with
# the work done, /readyz turns 503 while the queue service (a private Azurite) is stopped and
# 200 again after it restarts, and every change made meanwhile still arrives and is consumed.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
tmp=$(mktemp -d)
pid=""
cpid=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null
    "$src/tests/support/azurite.sh" stop "$tmp/azurite" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/bridge.log" ] && tail -30 "$tmp/bridge.log" >&2
    [ -f "$tmp/consume.log" ] && tail -10 "$tmp/consume.log" >&2
    exit 1
}

azport=$("$src/tests/support/free_port.sh")
"$src/tests/support/azurite.sh" start "$tmp/azurite" "$azport" --disk >/dev/null
export SQLQ_QUEUE_CONNECTION=$(cat "$tmp/azurite/conn")
db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 "$db" "CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT)"
"$sqlq" setup --db "$conn" --table orders >/dev/null
q="health-$$"
port=$("$src/tests/support/free_port.sh")
base="http://127.0.0.1:$port"
cport=$("$src/tests/support/free_port.sh")
cbase="http://127.0.0.1:$cport"

"$sqlq" bridge --db "$conn" --table orders --queue "$q" --polling-interval-ms 100 \
    --listen "127.0.0.1:$port" >"$tmp/bridge.out" 2>"$tmp/bridge.log" &
pid=$!

# wait_for DESCRIPTION SECONDS COMMAND…: retry every 0.2 s until the command succeeds.
wait_for() {
    local what=$1 secs=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || fail "bridge exited while waiting for: $what"
        sleep 0.2
    done
    fail "timed out waiting for: $what"
}
ready_is() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = "$1" ]; }
consumer_ready_is() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$cbase/readyz")" = "$1" ]; }
consumed_at_least() {
    curl -s "$cbase/metrics" >"$tmp/cmetrics" || return 1
    local n
    n=$(sed -n "s/^sqlq_messages_consumed_total{queue=\"$q\"} \([0-9]*\)$/\1/p" "$tmp/cmetrics")
    [ "${n:-0}" -ge "$1" ]
}
published_is() {
    curl -s "$base/metrics" >"$tmp/metrics" || return 1
    grep -qx "sqlq_changes_published_total{table=\"orders\",queue=\"$q\"} $1" "$tmp/metrics"
}

wait_for "/readyz 200 after start" 20 ready_is 200
"$sqlq" consume "$q" --noop --max-polling-interval-ms 500 --lease-s 5 --listen "127.0.0.1:$cport" \
    >"$tmp/consume.out" 2>"$tmp/consume.log" &
cpid=$!
wait_for "consumer /readyz 200" 20 consumer_ready_is 200
[ "$(curl -s "$base/healthz")" = ok ] || fail "/healthz"
for i in $(seq 20); do sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES ($i, 'item $i')"; done
wait_for "20 changes counted as published" 30 published_is 20
grep -q "^sqlq_publish_duration_seconds_count{queue=\"$q\"} [1-9]" "$tmp/metrics" || fail "no publish latency observed"
grep -q "^sqlq_pending_changes{table=\"orders\"}" "$tmp/metrics" || fail "no pending gauge"

# Queue service down: not ready, and changes wait.
"$src/tests/support/azurite.sh" stop "$tmp/azurite"
wait_for "/readyz 503 while Azurite is stopped" 30 ready_is 503
wait_for "consumer /readyz 503 while Azurite is stopped" 30 consumer_ready_is 503
curl -s "$base/readyz" | grep -q "queue" || fail "/readyz reason does not name the queue"
for i in $(seq 21 25); do sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES ($i, 'late $i')"; done
sleep 1
"$src/tests/support/azurite.sh" start "$tmp/azurite" "$azport" --disk >/dev/null
wait_for "/readyz 200 after Azurite restarts" 40 ready_is 200
wait_for "consumer /readyz 200 after Azurite restarts" 70 consumer_ready_is 200
wait_for "the 5 changes made during the outage published" 40 published_is 25
grep -q "^sqlq_retries_total{reason=\"queue_unavailable\"} [1-9]" "$tmp/metrics" || { grep retries "$tmp/metrics" >&2; fail "outage retries not counted"; }

# A message the consumer had taken when Azurite stopped stays hidden for its lease (5 s here)
# and is then consumed again: at least once, so at least 25.
wait_for "the consumer consumed all 25 messages" 70 consumed_at_least 25
kill -TERM "$pid"
wait "$pid" || fail "bridge did not exit 0 after SIGTERM"
pid=""
kill -TERM "$cpid"
wait "$cpid" || fail "consumer did not exit 0 after SIGTERM"
cpid=""
echo "bridge health: ok"
