#!/usr/bin/env bash
# /readyz of the bridge and the consumer when the queue service accepts connections but stops
# answering (a proxy in front of a private Azurite holds each request): 503 naming the silence
# within SQLQ_QUEUE_SILENT_MS (3 s) of the first request left unanswered, long before the
# request's own timeout, and 200 again once the service answers.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
support="$src/tests/support"
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    "$support/azurite.sh" stop "$tmp/azurite" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in bridge.log consume.log; do [ -f "$tmp/$f" ] && tail -20 "$tmp/$f" >&2; done
    exit 1
}
# The bound asserted: the 3 s of silence plus 2 s for a loaded machine and the 0.2 s polling
# here; a request's own timeout (10 s for the bridge, 30 s for the consumer) is far above it.
bound=5

azport=$("$support/free_port.sh")
"$support/azurite.sh" start "$tmp/azurite" "$azport" >/dev/null
conn=$(cat "$tmp/azurite/conn")
# One proxy per daemon, so each one's first unanswered request is known.
proxy_start() {
    mkdir -p "$tmp/$1"
    echo pass >"$tmp/$1/mode"
    python3 "$support/fault_proxy.py" "$azport" "$tmp/$1" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$tmp/$1/port" ] && return 0; sleep 0.05; done
    fail "proxy $1 did not start"
}
proxy_start pb
proxy_start pc
bconn=$(printf '%s' "$conn" | sed "s/:$azport/:$(cat "$tmp/pb/port")/")
cconn=$(printf '%s' "$conn" | sed "s/:$azport/:$(cat "$tmp/pc/port")/")

db="$tmp/shop.db"
dbconn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 "$db" "CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT)"
"$sqlq" setup --db "$dbconn" --table orders >/dev/null
q="hung-$$"
bport=$("$support/free_port.sh")
cport=$("$support/free_port.sh")
SQLQ_QUEUE_CONNECTION=$bconn "$sqlq" bridge --db "$dbconn" --table orders --queue "$q" \
    --polling-interval-ms 100 --listen "127.0.0.1:$bport" >"$tmp/bridge.out" 2>"$tmp/bridge.log" &
pids+=($!)
SQLQ_QUEUE_CONNECTION=$cconn "$sqlq" consume "$q" --noop --max-polling-interval-ms 500 \
    --listen "127.0.0.1:$cport" >"$tmp/consume.out" 2>"$tmp/consume.log" &
pids+=($!)

code() { curl -s -m 2 -o "$tmp/body" -w '%{http_code}' "http://127.0.0.1:$1/readyz" || true; }
wait_code() { # PORT CODE SECONDS
    for _ in $(seq $(($3 * 5))); do
        [ "$(code "$1")" = "$2" ] && return 0
        sleep 0.2
    done
    fail "/readyz on port $1 never answered $2 within $3 s (last: $(cat "$tmp/body" 2>/dev/null))"
}
wait_code "$bport" 200 30
wait_code "$cport" 200 30

# check NAME PORT PROXY: 503 naming the silence within $bound s of the first held request.
check() {
    for _ in $(seq 100); do [ -s "$tmp/$3/hung" ] && break; sleep 0.1; done
    [ -s "$tmp/$3/hung" ] || fail "$1 sent no request to the hung service within 10 s"
    local first now
    first=$(head -1 "$tmp/$3/hung")
    while :; do
        if [ "$(code "$2")" = 503 ]; then break; fi
        now=$(date +%s.%N)
        python3 -c "import sys; sys.exit(float(sys.argv[1]) - float(sys.argv[2]) > $bound)" "$now" "$first" ||
            fail "$1: /readyz still '$(cat "$tmp/body")' $bound s after the first unanswered request"
        sleep 0.2
    done
    now=$(date +%s.%N)
    grep -q "answered no request" "$tmp/body" || fail "$1: 503 without naming the silence: $(cat "$tmp/body")"
    echo "$1: /readyz 503 after $(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$now" "$first") s: $(cat "$tmp/body")"
}
echo hang >"$tmp/pb/mode"
check bridge "$bport" pb
echo hang >"$tmp/pc/mode"
check consumer "$cport" pc

# The service answers again: both ready again, and a change made meanwhile arrives.
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES (1, 'after the hang')"
echo pass >"$tmp/pb/mode"
echo pass >"$tmp/pc/mode"
wait_code "$bport" 200 40
wait_code "$cport" 200 40
published() { curl -s "http://127.0.0.1:$bport/metrics" | grep -qx "sqlq_changes_published_total{table=\"orders\",queue=\"$q\"} 1"; }
for _ in $(seq 150); do published && break; sleep 0.2; done
published || fail "the change made during the hang was not published after it"
echo "readyz_hung_queue: ok"
