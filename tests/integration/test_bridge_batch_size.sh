#!/usr/bin/env bash
# The poll size when max_batch_size is unset: 100 changes in row format (a crash duplicates
# little), 1000 in batch format (a poll fills several messages: fewer round trips per change);
# an explicit value wins in either format, and 0 stays a usage error.
set -euo pipefail

bin=${SQLQ_BIN:?}
azurite=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
tmp=$(mktemp -d)
q="bsize-$$-$RANDOM"
cleanup() {
    SQLQ_QUEUE_CONNECTION=$azurite "$bin" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/err" ] && tail -20 "$tmp/err" >&2
    exit 1
}
unset SQLQ_QUEUE_CONNECTION SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_MAX_BATCH_SIZE || true

# first_poll NAME ARGS...: drains a fresh backlog of 1,500 changes, prints the first poll's size
first_poll() {
    local name=$1
    shift
    local db="$tmp/$name.db" conn
    conn="Driver={SQLite3};Database=$db;Timeout=5000;"
    sqlite3 "$db" "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"
    "$bin" setup --db "$conn" --table t >/dev/null 2>&1 || fail "setup $name"
    sqlite3 "$db" "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1500)
                   INSERT INTO t SELECT i, 'v' || i FROM s"
    SQLQ_QUEUE_CONNECTION=$azurite "$bin" bridge --once --db "$conn" --table t --queue "$q" \
        --log-level debug "$@" 2>"$tmp/err" >/dev/null || fail "bridge $name exited $?"
    grep -q "event=bridge_done changes=1500 " "$tmp/err" || fail "$name: not every change published"
    grep -m1 -o "event=capture_polled .* n=[0-9]*" "$tmp/err" | sed 's/.* n=//'
}

n=$(first_poll row --format row)
[ "$n" = 100 ] || fail "row format, unset: first poll of $n changes (want 100)"
n=$(first_poll batch --format batch)
[ "$n" = 1000 ] || fail "batch format, unset: first poll of $n changes (want 1000)"
n=$(first_poll batch50 --format batch --max-batch-size 50)
[ "$n" = 50 ] || fail "batch format, --max-batch-size 50: first poll of $n changes (want 50)"
n=$(SQLQ_MAX_BATCH_SIZE=200 first_poll row200 --format row)
[ "$n" = 200 ] || fail "row format, SQLQ_MAX_BATCH_SIZE=200: first poll of $n changes (want 200)"

set +e
"$bin" bridge --once --db "Driver={SQLite3};Database=$tmp/row.db;" --table t --queue "$q" \
    --max-batch-size 0 >/dev/null 2>"$tmp/err"
code=$?
set -e
[ "$code" = 2 ] || fail "--max-batch-size 0 exited $code (want 2)"
grep -q "max-batch-size: 0 is out of range" "$tmp/err" || fail "0 not refused by name"
echo "ok"
