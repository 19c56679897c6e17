#!/usr/bin/env bash
# A backfill repairs a `consume --sql` replica that missed changes, on one change-log source
# database (argument: sqlite, postgres or mariadb; the replica is SQLite):
# 1. a replica kept by the bridge misses changes (the consumer is stopped and the messages are
#    lost) whose change-log entries the bridge has trimmed since: updates, deletes, an insert;
# 2. `sqlq backfill` fixes every row that exists: each row carries a version above every
#    earlier message of its key, also a row whose log entry was trimmed (it carried 0 and the
#    sink kept its stale row);
# 3. `sqlq backfill --repair` also removes the replica's rows whose key is gone from the source,
#    while a writer and the bridge keep changing the table: the replica equals the source;
# 4. a skipped backfill row older than what the sink holds is counted and warned about.
# docs/cursor-source.md (Backfill), docs/messages.md (Versions, Repair manifests).
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:-${1:?usage: test_backfill_repair.sh sqlite|postgres|mariadb (or through ctest)}}
pids=()
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -8 "$f" >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true
prefix=bfrepair
. "$(dirname "$0")/../support/change_log_db.sh"
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; cleanup' EXIT

q() { # q SQL: one statement on the source, its rows as text (| between columns)
    case "$kind" in
    sqlite) sqlite3 -cmd ".timeout 5000" "$tmp/shop.db" "$1" ;;
    postgres) psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq -d "$name" -c "$1" ;;
    mariadb) mariadb --no-defaults -N -B -h 127.0.0.1 -P "$port" -u sqlq "$name" -e "$1" | tr '\t' '|' ;;
    esac
}
rep="$tmp/replica.db"
rconn="Driver={SQLite3};Database=$rep;Timeout=10000;"
r() { sqlite3 -cmd ".timeout 10000" "$rep" "$1"; }
dump='SELECT id, n, name FROM items ORDER BY id'
converge() { # converge WHAT
    for _ in $(seq 1 200); do
        [ "$(q "$dump")" = "$(r "$dump")" ] && { echo "$kind: $1: replica equals source"; return 0; }
        sleep 0.2
    done
    diff <(q "$dump") <(r "$dump") | head -20 >&2 || true
    fail "$1: the replica does not equal the source"
}
start() { # start NAME CMD…
    local n=$1
    shift
    "$@" >"$tmp/$n.out" 2>"$tmp/$n.log" &
    pids+=($!)
    eval "pid_$n=$!"
}
stop() { # stop NAME
    local p
    eval "p=\$pid_$1"
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
}
pending() {
    "$sqlq" status --db "$conn" --table items --json 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tables"][0]["bridges"][0]["pending"])' 2>/dev/null || echo "?"
}

sql "CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, name VARCHAR(20))"
r "CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, name VARCHAR(20))"
for i in 1 2 3 4 5; do sql "INSERT INTO items VALUES ($i, $i, 'before setup')"; done
"$sqlq" setup --db "$conn" --table items >/dev/null
for i in 6 7 8 9 10; do sql "INSERT INTO items VALUES ($i, $i, 'after setup')"; done
qn="bfrepair-$kind-$$"
queues+=("$qn")
start bridge "$sqlq" bridge --db "$conn" --table items --queue "$qn" --polling-interval-ms 100
"$sqlq" backfill --db "$conn" --table items --queue "$qn" 2>"$tmp/backfill0.log" || fail "seed backfill"
start consume "$sqlq" consume "$qn" --sql "$rconn" --table items --max-polling-interval-ms 200
converge "seeded"

# 1. the replica misses changes: consumer stopped, the messages lost, the log trimmed
stop consume
sql "UPDATE items SET n = n + 100 WHERE id IN (1, 2, 6, 7)"
sql "DELETE FROM items WHERE id IN (3, 8)"
sql "INSERT INTO items VALUES (11, 11, 'missed insert')"
for _ in $(seq 150); do [ "$(pending)" = 0 ] && break; sleep 0.2; done
[ "$(pending)" = 0 ] || fail "the bridge did not deliver the changes"
log=$("$sqlq" status --db "$conn" --table items --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tables"][0]["log"])')
for _ in $(seq 100); do [ "$(q "SELECT count(*) FROM $log WHERE id IN (1, 2, 6, 7)")" = 0 ] && break; sleep 0.2; done
[ "$(q "SELECT count(*) FROM $log WHERE id IN (1, 2, 6, 7)")" = 0 ] || fail "the log entries were not trimmed"
"$sqlq" queue clear "$qn" >/dev/null
start consume "$sqlq" consume "$qn" --sql "$rconn" --table items --max-polling-interval-ms 200
sleep 1
[ "$(r "SELECT n FROM items WHERE id = 1")" = 1 ] || fail "the replica did not miss the update"

# 2. a backfill fixes every row that exists (not the deleted ones)
"$sqlq" backfill --db "$conn" --table items --queue "$qn" --restart 2>"$tmp/backfill1.log" || fail "backfill exited $?"
want=$(q "$dump")
for _ in $(seq 150); do
    got=$(r "SELECT id, n, name FROM items WHERE id NOT IN (3, 8) ORDER BY id")
    [ "$got" = "$want" ] && break
    sleep 0.2
done
[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got") >&2 || true; fail "the backfill did not repair the rows that exist"; }
[ "$(r "SELECT count(*) FROM items WHERE id IN (3, 8)")" = 2 ] || fail "rows gone without --repair"
echo "$kind: backfill: rows whose log entry was trimmed repaired (they carried version 0 before): ok"

# 3. --repair, while a writer and the bridge keep changing the table
(for i in $(seq 1 40); do
    case $((i % 4)) in
    0) sql "UPDATE items SET n = n + 1 WHERE id = $((i % 10 + 1))" ;;
    1) sql "INSERT INTO items VALUES ($((100 + i)), $i, 'during')" ;;
    2) sql "DELETE FROM items WHERE id = $((100 + i - 1))" ;;
    3) sql "UPDATE items SET name = 'w$i' WHERE id = 9" ;;
    esac
    sleep 0.05
done) &
writer=$!
"$sqlq" backfill --db "$conn" --table items --queue "$qn" --restart --repair --batch-size 3 \
    2>"$tmp/backfill2.log" || fail "backfill --repair exited $?"
wait "$writer"
converge "backfill --repair while a writer and the bridge run"
# rows 3 and 8 had their deletes lost: only the sweep removes them (more rows when the writer
# deleted some before a page's snapshot while their delete was still on its way)
n=$(sed -n 's/.*event=sink.repaired .* deleted=\([0-9]*\) .*/\1/p' "$tmp/consume.log" | tail -1)
[ -n "$n" ] && [ "$n" -ge 2 ] || fail "the sink did not log a repair deleting the 2 rows: $(grep 'sink.repaired' "$tmp/consume.log")"
echo "$kind: backfill --repair: the rows gone from the source are gone from the replica: ok"

# 4. a backfill row older than what the sink holds (a wrong stored version): counted, warned
stop consume
lport=$("$(dirname "$0")/../support/free_port.sh")
r "UPDATE sqlq_sink_versions SET version = 9000000000000000"
start consume "$sqlq" consume "$qn" --sql "$rconn" --table items --max-polling-interval-ms 200 \
    --listen "127.0.0.1:$lport"
"$sqlq" backfill --db "$conn" --table items --queue "$qn" --restart 2>"$tmp/backfill3.log" || fail "backfill exited $?"
for _ in $(seq 100); do grep -q "event=sink.backfill_row_skipped" "$tmp/consume.log" && break; sleep 0.2; done
grep -q "event=sink.backfill_row_skipped .*stored_version=9000000000000000" "$tmp/consume.log" ||
    fail "no warning for backfill rows older than the stored version"
m=$(curl -s "http://127.0.0.1:$lport/metrics" | sed -n 's/^sqlq_sink_backfill_rows_older_total{table="items"} \([0-9]*\)$/\1/p')
[ -n "$m" ] && [ "$m" -ge 1 ] || fail "sqlq_sink_backfill_rows_older_total is '$m'"
echo "$kind: backfill rows older than the stored version: counted ($m) and warned about: ok"
