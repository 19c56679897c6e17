#!/usr/bin/env bash
# `sqlq bridge --once` as a cron job runs it: when the database or the queue service cannot be
# reached it gives up after --once-outage-s and exits 1 naming the cause, instead of retrying for
# ever; when the queue is down and nothing is pending it does not exit 0 either.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
azurite=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
tmp=$(mktemp -d)
q="once-$$-$RANDOM"
cleanup() {
    SQLQ_QUEUE_CONNECTION=$azurite "$sqlq" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -8 >&2; }; done
    exit 1
}
unset SQLQ_QUEUE_CONNECTION SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true

# expect_once LOG WANT-IN-STDERR MAX-SECONDS -- ARGS: exit 1 within MAX-SECONDS, message names WANT
expect_once() {
    local log=$1 want=$2 max=$3
    shift 4
    local t0 code
    t0=$(date +%s)
    set +e
    timeout 120 "$sqlq" bridge "$@" --once --once-outage-s 3 >"$tmp/$log" 2>&1
    code=$?
    set -e
    local took=$(($(date +%s) - t0))
    [ "$code" = 1 ] || fail "$log: exit $code after $took s (want 1; 124 = still retrying after 120 s)"
    [ "$took" -le "$max" ] || fail "$log: took $took s (want at most $max)"
    grep -q "sqlq bridge: .*$want" "$tmp/$log" || fail "$log: the message does not name the cause ($want)"
}

closed=$("$src/tests/support/free_port.sh") # nothing listens there
dead_queue="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$(echo "$azurite" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p');QueueEndpoint=http://127.0.0.1:$closed/devstoreaccount1;"

# The database cannot be reached (PostgreSQL on a port where nothing listens).
dead_db="Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$closed;UID=sqlq;PWD=;Database=shop;"
expect_once db.log "database unavailable for 3 s (once_outage_s), giving up: " 30 -- --db "$dead_db" --table orders --queue "$q" \
    --queue-connection "$azurite"

db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 -cmd ".timeout 5000" "$db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, v TEXT);"
"$sqlq" setup --db "$conn" --table orders >/dev/null 2>&1 || fail "setup"

# The queue service cannot be reached, nothing pending: not a silent success.
expect_once idle.log "queue service unavailable for 3 s (once_outage_s), giving up: queue service unreachable" 40 -- \
    --db "$conn" --table orders --queue "$q" --queue-connection "$dead_queue"

# The queue service cannot be reached with changes pending: exit 1, nothing counted, and a run
# once it is back delivers them all.
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES (1, 'a'), (2, 'b');"
expect_once pending.log "queue service unavailable for 3 s (once_outage_s), giving up: queue service unreachable" 40 -- \
    --db "$conn" --table orders --queue "$q" --queue-connection "$dead_queue"
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --once --queue-connection "$azurite" >"$tmp/after.log" 2>&1 \
    || fail "bridge --once with the queue back exited $?"
grep -q "messages=2 released=2 poisoned=0" "$tmp/after.log" || fail "the 2 changes were not delivered after the outage"
echo ok
