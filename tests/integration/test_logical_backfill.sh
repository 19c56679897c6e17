#!/usr/bin/env bash
# Backfill without a gap (docs/logical-source.md, Versions): a table with rows written before
# its slot existed, a logical route streaming into a queue, a writer updating, deleting and
# inserting throughout, and `sqlq backfill` of the table into the same queue meanwhile; a
# replica fed by `sqlq consume --sql` converges on the source (the backfill's version 0 loses
# to every streamed change, and a row no change followed keeps its backfilled state).
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
tmp=$(mktemp -d)
pids=()
q="lgbf-$$"
src_db="lgbf_src_$$" rep_db="lgbf_rep_$$"
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    "$bin" queue delete "$q" >/dev/null 2>&1 || true
    psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE database = '$src_db' AND NOT active" >/dev/null 2>&1 || true
    for d in "$src_db" "$rep_db"; do psql_ -d postgres -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}
psql_ -d postgres -c "CREATE DATABASE $src_db" -c "CREATE DATABASE $rep_db" >/dev/null
src="${pgodbc}Database=$src_db;" rep="${pgodbc}Database=$rep_db;"
ddl="CREATE TABLE items (id integer PRIMARY KEY, name text, n integer NOT NULL)"
psql_ -d "$src_db" -c "$ddl" -c "INSERT INTO items SELECT g, 'old ' || g, 0 FROM generate_series(1, 400) g"
psql_ -d "$rep_db" -c "$ddl"
"$bin" setup --db "$src" --table items --source logical >/dev/null 2>&1 || fail "setup"

"$bin" bridge --db "$src" --table items --queue "$q" --source logical \
    --polling-interval-ms 100 >/dev/null 2>"$tmp/bridge.log" &
pids+=($!)
(
    for i in $(seq 1 60); do
        psql_ -d "$src_db" -c "UPDATE items SET n = n + 1, name = 'upd $i' WHERE id % 7 = $((i % 7))" \
            -c "DELETE FROM items WHERE id = $((i * 5))" \
            -c "INSERT INTO items VALUES ($((1000 + i)), 'new $i', $i)" \
            -c "INSERT INTO items VALUES ($((i * 5)), 're-inserted $i', $i) ON CONFLICT DO NOTHING"
        sleep 0.05
    done
) >"$tmp/writer.log" 2>&1 &
writer=$!
sleep 0.5
"$bin" backfill --db "$src" --table items --queue "$q" --batch-size 25 2>"$tmp/backfill.log" \
    || fail "backfill exited $?"
wait "$writer" || fail "writer"
# The route has read everything once its slot confirmed the WAL written up to now.
end=$(psql_ -d "$src_db" -c "SELECT pg_current_wal_lsn()")
for _ in $(seq 300); do
    ok=$(psql_ -d "$src_db" -c "SELECT confirmed_flush_lsn >= '$end' FROM pg_replication_slots
        WHERE slot_name LIKE 'sqlq_items_%' AND database = current_database()")
    [ "$ok" = t ] && break
    sleep 0.1
done
[ "$ok" = t ] || fail "the route did not confirm the writer's changes"
"$bin" consume "$q" --sql "$rep" --table items --exit-when-empty >/dev/null 2>"$tmp/consume.log" \
    || fail "consume --sql exited $?"
dump='SELECT id, name, n FROM items ORDER BY id'
psql_ -d "$src_db" -c "$dump" >"$tmp/src"
psql_ -d "$rep_db" -c "$dump" >"$tmp/rep"
diff "$tmp/src" "$tmp/rep" >"$tmp/diff" || fail "the replica differs from the source: $(head -20 "$tmp/diff")"
echo "logical_backfill: $(wc -l <"$tmp/src") rows, the replica equals the source: ok"
