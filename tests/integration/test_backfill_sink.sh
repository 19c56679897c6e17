#!/usr/bin/env bash
# One version contract across producers, end to end on PostgreSQL and SQLite:
# `sqlq backfill` seeds a replica through `sqlq consume --sql`, then `sqlq bridge` streams later
# updates, deletes and inserts through the same sink; the replica must equal the source. The
# same with the cursor source (PostgreSQL: a timestamp cursor, SQLite: an integer one), and a
# backfill taken while a writer and the bridge are running. Before, a backfill's version was
# its run id (ms since the epoch), larger than every change-log version, so the sink skipped
# every later change of a seeded key.
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
tmp=$(mktemp -d)
pids=()
queues=()
dbs=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for q in "${queues[@]}"; do "$bin" queue delete "$q" >/dev/null 2>&1 || true; done
    for d in "${dbs[@]}"; do psql_ -d postgres -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}

# Per database: src_sql / rep_sql run SQL on the source / replica; the connection strings.
setup_db() { # setup_db KIND NAME
    kind=$1
    if [ "$kind" = postgres ]; then
        src_db="bfs_src_$2_$$" rep_db="bfs_rep_$2_$$"
        dbs+=("$src_db" "$rep_db")
        psql_ -d postgres -c "CREATE DATABASE $src_db" -c "CREATE DATABASE $rep_db" >/dev/null
        src_conn="${pgodbc}Database=$src_db;" rep_conn="${pgodbc}Database=$rep_db;"
        ts_type=timestamptz now="clock_timestamp()"
    else
        src_file="$tmp/src_$2.db" rep_file="$tmp/rep_$2.db"
        src_conn="Driver={SQLite3};Database=$src_file;Timeout=10000;"
        rep_conn="Driver={SQLite3};Database=$rep_file;Timeout=10000;"
        ts_type=TEXT now="strftime('%Y-%m-%d %H:%M:%f', 'now')"
    fi
    local ddl="CREATE TABLE items (id integer PRIMARY KEY, name text, n integer NOT NULL,
                                   rev bigint NOT NULL, updated_at $ts_type NOT NULL)"
    src_sql "$ddl"
    rep_sql "$ddl"
}
src_sql() {
    if [ "$kind" = postgres ]; then psql_ -d "$src_db" -c "$1"; else sqlite3 -cmd ".timeout 10000" "$src_file" "$1"; fi
}
rep_sql() {
    if [ "$kind" = postgres ]; then psql_ -d "$rep_db" -c "$1"; else sqlite3 -cmd ".timeout 10000" "$rep_file" "$1"; fi
}
# The next value of the rev counter (an integer cursor that grows with every write).
next_rev="(SELECT coalesce(max(rev), 0) + 1 FROM items)"
dump='SELECT id, name, n, rev FROM items ORDER BY id'

start() { # start NAME CMD…: run in the background, log in $tmp/NAME.log
    local name=$1
    shift
    "$@" >"$tmp/$name.log" 2>&1 &
    pids+=($!)
}
stop_all() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    pids=()
}
converge() { # converge WHAT: wait until the replica equals the source
    local i
    for i in $(seq 1 150); do
        [ "$(src_sql "$dump")" = "$(rep_sql "$dump")" ] && { echo "$kind: $1: replica equals source"; return 0; }
        sleep 0.2
    done
    diff <(src_sql "$dump") <(rep_sql "$dump") | head -20 >&2 || true
    fail "$kind: $1: the replica does not equal the source"
}
consume() { # consume QUEUE: the --sql sink, running
    start "consume-$1" "$bin" consume "$1" --sql "$rep_conn" --table items --max-polling-interval-ms 200
}
changes() { # 20 updates, 5 deletes, 5 inserts
    src_sql "UPDATE items SET n = n + 100, rev = $next_rev, updated_at = $now WHERE id <= 20"
    src_sql "DELETE FROM items WHERE id > 45"
    for i in 51 52 53 54 55; do
        src_sql "INSERT INTO items VALUES ($i, 'new$i', $i, $next_rev, $now)"
    done
}
seed() { # 50 rows, each with its own rev
    for i in $(seq 1 50); do
        src_sql "INSERT INTO items VALUES ($i, 'row$i', $i, $next_rev, $now)"
    done
}

for kind in sqlite postgres; do
    # 1. change log: rows written before setup (no logged change: version 0) and after.
    setup_db "$kind" log
    seed
    "$bin" setup --db "$src_conn" --table items >/dev/null
    src_sql "UPDATE items SET n = n + 1, rev = $next_rev WHERE id <= 10"
    q="bfs-log-$kind-$$"
    queues+=("$q")
    "$bin" backfill --db "$src_conn" --table items --queue "$q" 2>"$tmp/backfill.log" \
        || fail "backfill exited $?"
    grep -q 'source=change_log' "$tmp/backfill.log" || fail "backfill did not read the change log's versions"
    # Backfill's messages never expire, as the bridge's: checked with the SDK.
    node "$(dirname "$0")/../support/queue_sas.js" peek "$SQLQ_QUEUE_CONNECTION" "$q" >"$tmp/peek.json" \
        || fail "peek failed"
    [ -s "$tmp/peek.json" ] || fail "no backfill message to peek at"
    if grep -v '"expiresOn":"9999-12-31' "$tmp/peek.json" | grep -q .; then
        fail "a backfill message expires: $(head -c 300 "$tmp/peek.json")"
    fi
    consume "$q"
    converge "change log: seeded by backfill"
    start bridge "$bin" bridge --db "$src_conn" --table items --queue "$q" --polling-interval-ms 100
    changes
    converge "change log: backfill, then bridge"
    # 2. a backfill taken while a writer and the bridge run, into the same queue and sink.
    src_sql "UPDATE items SET n = n + 1 WHERE id = 1" # keeps the bridge busy from the start
    (for i in $(seq 1 60); do
        src_sql "UPDATE items SET n = n + 1, rev = $next_rev, name = 'w$i' WHERE id = $((i % 30 + 1))"
    done) &
    writer=$!
    "$bin" backfill --db "$src_conn" --table items --queue "$q" --restart --batch-size 7 \
        2>"$tmp/backfill2.log" || fail "backfill while streaming exited $?"
    wait "$writer"
    converge "change log: backfill while the bridge streams"
    stop_all

    # 3. cursor source: PostgreSQL on a timestamp cursor, SQLite on an integer one.
    setup_db "$kind" cursor
    cursor=rev
    [ "$kind" = postgres ] && cursor=updated_at
    seed
    q="bfs-cursor-$kind-$$"
    queues+=("$q")
    "$bin" backfill --db "$src_conn" --table items --queue "$q" --cursor-column "$cursor" \
        2>"$tmp/backfill.log" || fail "cursor backfill exited $?"
    grep -q 'source=cursor' "$tmp/backfill.log" || fail "backfill did not use the cursor as version"
    consume "$q"
    converge "cursor: seeded by backfill"
    start bridge "$bin" bridge --db "$src_conn" --table items --queue "$q" --source cursor \
        --cursor-column "$cursor" --polling-interval-ms 100
    src_sql "UPDATE items SET n = n + 100, rev = $next_rev, updated_at = $now WHERE id <= 20"
    for i in 51 52 53; do src_sql "INSERT INTO items VALUES ($i, 'new$i', $i, $next_rev, $now)"; done
    converge "cursor: backfill, then bridge"
    stop_all
done
