#!/usr/bin/env bash
# During a queue outage the backlog is seen growing, and /readyz
# turns at once. The queue service (a private Azurite) stops; changes made meanwhile are
# polled (leased) and held back: sqlq_pending_changes and `sqlq status` count them (leased
# ones included) and keep counting while the route waits in its publish back-off; /readyz is
# 503 within 3 s of the first failed put (the client's own retries take 5 s); capture_opened
# is logged once per route. The oldest change's age keeps up with the clock through the
# outage's back-off waits (found by a user: it used to stand still for 15 s). After the
# restart everything arrives.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
tmp=$(mktemp -d)
pid=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    "$src/tests/support/azurite.sh" stop "$tmp/azurite" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/metrics" ] && grep '^sqlq_pending' "$tmp/metrics" >&2
    [ -f "$tmp/bridge.log" ] && tail -30 "$tmp/bridge.log" >&2
    exit 1
}

azport=$("$src/tests/support/free_port.sh")
"$src/tests/support/azurite.sh" start "$tmp/azurite" "$azport" --disk >/dev/null
export SQLQ_QUEUE_CONNECTION=$(cat "$tmp/azurite/conn")
db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 "$db" "CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT)"
"$sqlq" setup --db "$conn" --table orders >/dev/null
q="outmetrics-$$"
port=$("$src/tests/support/free_port.sh")
base="http://127.0.0.1:$port"

"$sqlq" bridge --db "$conn" --table orders --queue "$q" --polling-interval-ms 100 \
    --listen "127.0.0.1:$port" >"$tmp/bridge.out" 2>"$tmp/bridge.log" &
pid=$!

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
metric_at_least() { # NAME MIN
    curl -s "$base/metrics" >"$tmp/metrics" || return 1
    local n
    n=$(sed -n "s/^$1 \([0-9.]*\)$/\1/p" "$tmp/metrics")
    [ -n "$n" ] && [ "${n%.*}" -ge "$2" ]
}
insert() { # FROM TO
    sqlite3 -cmd ".timeout 5000" "$db" "WITH RECURSIVE s(i) AS (SELECT $1 UNION ALL SELECT i + 1 \
        FROM s WHERE i < $2) INSERT INTO orders SELECT i, 'item ' || i FROM s"
}
status_pending_at_least() {
    local n
    n=$("$sqlq" status --db "$conn" --table orders | sed -n 's/.*pending \([0-9]*\),.*/\1/p' | head -1)
    [ -n "$n" ] && [ "$n" -ge "$1" ]
}

wait_for "/readyz 200 after start" 20 ready_is 200
insert 1 10
wait_for "10 changes published" 30 metric_at_least "sqlq_changes_published_total{table=\"orders\",queue=\"$q\"}" 10
[ "$(grep -c 'event=capture_opened' "$tmp/bridge.log")" = 1 ] || fail "capture_opened not logged exactly once"

# The queue service goes away; the next changes are polled, leased and held back.
"$src/tests/support/azurite.sh" stop "$tmp/azurite"
insert 11 40
oldest_at=$(date +%s)
t0=$(date +%s%N)
wait_for "/readyz 503 once a put failed" 20 ready_is 503
ms=$((($(date +%s%N) - t0) / 1000000))
echo "readyz 503 after ${ms} ms"
[ "$ms" -lt 3000 ] || fail "/readyz took ${ms} ms to turn 503 (the first failed put should turn it)"
wait_for "the 30 held-back changes counted as pending" 20 metric_at_least 'sqlq_pending_changes{table="orders"}' 30
insert 41 60
wait_for "the backlog seen growing to 50" 20 metric_at_least 'sqlq_pending_changes{table="orders"}' 50
wait_for "sqlq status shows the backlog" 10 status_pending_at_least 50

# 20 s of the outage, the back-off at its 10 s steps: the age metric lags the oldest change's
# real age by at most two refresh intervals (first seen by a refresh, shown until the next;
# 5-7 s apart through the put retries and back-off waits). It lagged by 18-20 s when only
# the route's loop refreshed.
lag_max=0
for _ in $(seq 20); do
    curl -s "$base/metrics" >"$tmp/metrics" || fail "no /metrics during the outage"
    age=$(sed -n 's/^sqlq_oldest_pending_change_age_seconds{table="orders"} \([0-9]*\).*$/\1/p' "$tmp/metrics")
    [ -n "$age" ] || fail "no sqlq_oldest_pending_change_age_seconds"
    lag=$(($(date +%s) - oldest_at - age))
    [ "$lag" -le "$lag_max" ] || lag_max=$lag
    sleep 1
done
echo "oldest pending age: lagged the clock by at most $lag_max s"
[ "$lag_max" -le 14 ] || fail "the age metric lagged the oldest change's real age by $lag_max s"

"$src/tests/support/azurite.sh" start "$tmp/azurite" "$azport" --disk >/dev/null
wait_for "/readyz 200 after Azurite restarts" 40 ready_is 200
wait_for "all 60 changes published" 40 metric_at_least "sqlq_changes_published_total{table=\"orders\",queue=\"$q\"}" 60
kill -TERM "$pid"
wait "$pid" || fail "bridge did not exit 0 after SIGTERM"
pid=""
echo "bridge outage metrics: ok"
