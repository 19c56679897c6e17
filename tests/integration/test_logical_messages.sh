#!/usr/bin/env bash
# The logical source (--source logical) against the fixtures' PostgreSQL (wal_level = logical)
# and Azurite: what a route publishes and what it refuses.
# - one transaction's changes of a key collapse to one message (insert + updates: an insert
#   with the last row); a key update is a delete of the old key and an insert of the new one;
#   a delete has row null; every change of a transaction has its commit LSN as version, and a
#   later transaction's is greater;
# - an idle route's heartbeat lets its slot confirm past WAL other tables wrote;
# - an unchanged TOASTed value ('u') is never sent null or missing: read by key under
#   REPLICA IDENTITY DEFAULT, filled from the old row under FULL, where before and changed
#   come from the old row;
# - a TRUNCATE stops the route before it (on_truncate stop, the default: nothing after it is
#   published), and with --on-truncate skip is passed with a counted warning;
# - refusals, each with its message: no replica identity (a unique key, REPLICA IDENTITY DEFAULT), before/changed without FULL, a role
#   without REPLICATION, the table not in the publication, a dropped slot (naming sqlq
#   backfill), another database than PostgreSQL; config check runs them; `setup --drop --force`
#   of a table dropped for good removes its slot and publication; the setup command a refusal
#   names for a table of a hostile name (quotes, spaces, unicode, a schema) runs as pasted;
# - sqlq status of a streaming route says pending is not counted (--json: null), never 0; of
#   a dropped table whose slot is left, the slot, the WAL it retains and the command to drop it.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
export SQLQ_QUEUE_CONNECTION=$(cat "$env_dir/azurite/conn")
port=$(cat "$env_dir/postgres/port")
name="lgmsg_$$_$RANDOM"
conn="$(cat "$env_dir/postgres/odbc")Database=$name;"
tmp=$(mktemp -d)
pids=()
q1="lgm1-$$" q2="lgm2-$$"
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for q in "$q1" "$q2"; do "$sqlq" queue delete "$q" >/dev/null 2>&1 || true; done
    psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE database = '$name' AND NOT active" >/dev/null 2>&1 || true
    psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE database = '${name}_b' AND NOT active" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS ${name}_b" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP ROLE IF EXISTS ${name}_norepl" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    exit 1
}
sql() { psql_ -d "$name" -c "$1"; }

psql_ -d postgres -c "CREATE DATABASE $name"
sql "CREATE TABLE t1 (id int PRIMARY KEY, note text, big text, amount numeric(10,2), at timestamptz)"
sql "CREATE TABLE t2 (id int PRIMARY KEY, note text, big text, n int)"
sql "ALTER TABLE t2 REPLICA IDENTITY FULL"
sql "CREATE TABLE t3 (a int NOT NULL, b text); CREATE UNIQUE INDEX t3_a ON t3 (a)"
# A value stored out of line (TOAST): 20 kB of hex that compresses to well over 2 kB.
big=$(psql_ -d "$name" -c "SELECT string_agg(md5(i::text), '') FROM generate_series(1, 640) i")

# --- refusals before anything is created ---
# A table without a primary key and no --key-columns: the operator must name a key (exit 2, as
# with the change log), before the replica identity is looked at.
code=0
out=$("$sqlq" setup --db "$conn" --table t3 --source logical 2>&1) || code=$?
[ "$code" = 2 ] || fail "setup of a table without a key gave exit $code: $out"
echo "$out" | grep -q "has no primary key.*--key-columns" || fail "no key: $out"
out=$("$sqlq" setup --db "$conn" --table t3 --key-columns a --source logical 2>&1) && fail "setup of a table without a replica identity succeeded"
echo "$out" | grep -q "has no replica identity (REPLICA IDENTITY DEFAULT and no primary key)" \
    || fail "no replica identity: $out"
[ "$(psql_ -d "$name" -c "SELECT count(*) FROM pg_publication")" = 0 ] || fail "a refused setup created a publication"
psql_ -d postgres -c "CREATE ROLE ${name}_norepl LOGIN"
psql_ -d "$name" -c "GRANT ALL ON t1 TO ${name}_norepl"
norepl="${conn/UID=sqlq/UID=${name}_norepl}"
out=$("$sqlq" setup --db "$norepl" --table t1 --source logical 2>&1) && fail "setup by a role without REPLICATION succeeded"
echo "$out" | grep -q "has no REPLICATION attribute" || fail "no REPLICATION: $out"
out=$("$sqlq" setup --db "$conn" --table t1 --source logical --before-image 2>&1) && fail "--before-image without FULL succeeded"
echo "$out" | grep -q "REPLICA IDENTITY FULL" || fail "before image without FULL: $out"
out=$("$sqlq" setup --db "Driver={SQLite3};Database=$tmp/x.db;" --table t1 --source logical 2>&1) && fail "logical on SQLite succeeded"
echo "$out" | grep -q "logical decoding is a PostgreSQL feature" || fail "SQLite: $out"

"$sqlq" setup --db "$conn" --table t1 --source logical >"$tmp/setup1.out" || fail "setup t1"
"$sqlq" setup --db "$conn" --table t2 --source logical --before-image >"$tmp/setup2.out" || fail "setup t2"
grep -q "replication slot sqlq_t1_.* created in" "$tmp/setup1.out" || fail "setup said: $(cat "$tmp/setup1.out")"
# Slots are the whole server's: a table of the same name in another database gets its own.
psql_ -d postgres -c "CREATE DATABASE ${name}_b"
psql_ -d "${name}_b" -c "CREATE TABLE t1 (id int PRIMARY KEY, note text)"
"$sqlq" setup --db "${conn/Database=$name;/Database=${name}_b;}" --table t1 --source logical \
    >"$tmp/setup_b.out" 2>&1 || fail "setup of t1 in a second database: $(cat "$tmp/setup_b.out")"
[ "$(psql_ -d postgres -c "SELECT count(DISTINCT database) FROM pg_replication_slots
    WHERE slot_name LIKE 'sqlq_t1_%'")" = 2 ] || fail "two databases' t1 share a slot"
out=$("$sqlq" bridge --db "$conn" --table t1 --queue "$q1" --source logical --before-image --once 2>&1) \
    && fail "a bridge with --before-image on a DEFAULT identity table started"
echo "$out" | grep -q "REPLICA IDENTITY FULL" || fail "bridge before image: $out"

# --- messages ---
sql "INSERT INTO t1 VALUES (1, 'a', '$big', 1.50, '2024-01-01T00:00:00Z'), (2, 'b', NULL, 2, 'infinity')"
sql "BEGIN; UPDATE t1 SET note = 'a2' WHERE id = 1; UPDATE t1 SET note = 'a3' WHERE id = 1;
     INSERT INTO t1 VALUES (3, 'c', NULL, 3, NULL); UPDATE t1 SET note = 'c2' WHERE id = 3; COMMIT"
sql "UPDATE t1 SET id = 10 WHERE id = 2"
sql "UPDATE t1 SET note = 'toast kept' WHERE id = 1"
sql "TRUNCATE t3" # not published: t3 is in no publication
sql "DELETE FROM t1 WHERE id = 3"
sql "INSERT INTO t2 VALUES (1, 'x', '$big', 1)"
sql "UPDATE t2 SET note = 'y' WHERE id = 1"
sql "DELETE FROM t2 WHERE id = 1"

bridge_t1() { # LOG [FLAGS…]: the t1 route in the background, its pid in b1
    local log=$1
    shift
    "$sqlq" bridge --db "$conn" --table t1 --queue "$q1" --source logical --polling-interval-ms 100 \
        --log-level info "$@" >"$tmp/b1.out" 2>"$log" &
    b1=$!
    pids+=("$b1")
}
mport=$("${SQLQ_SOURCE_DIR:?}/tests/support/free_port.sh")
bridge_t1 "$tmp/b1.log" --listen "127.0.0.1:$mport"
"$sqlq" bridge --db "$conn" --table t2 --queue "$q2" --source logical --before-image --changed \
    --polling-interval-ms 100 --log-level info >"$tmp/b2.out" 2>"$tmp/b2.log" &
pids+=($!)
count() { "$sqlq" queue stats "$1" 2>/dev/null | grep -o '"approximate_count":[0-9]*' | head -1 | cut -d: -f2; }
wait_count() { # QUEUE N
    for _ in $(seq 300); do [ "$(count "$1")" = "$2" ] && return 0; sleep 0.1; done
    fail "queue $1 holds $(count "$1") messages, wanted $2"
}
wait_count "$q1" 8
wait_count "$q2" 3
sql "TRUNCATE t1"
sql "INSERT INTO t1 VALUES (20, 'after truncate', NULL, 0, NULL)"
for _ in $(seq 300); do grep -q "public.t1 was truncated" "$tmp/b1.log" && break; sleep 0.1; done
grep -q "public.t1 was truncated.*--on-truncate skip" "$tmp/b1.log" \
    || fail "the TRUNCATE did not stop the route naming --on-truncate skip: $(cat "$tmp/b1.log")"
grep -q 'sqlq_route_stopped{table="t1",reason="table_truncated"} 1' <(curl -s "http://127.0.0.1:$mport/metrics") \
    || fail "metrics: no sqlq_route_stopped with reason table_truncated"
sleep 3 # the stopped route opens again (and stops again) meanwhile: nothing sent twice
[ "$(count "$q1")" = 8 ] || fail "published past a TRUNCATE, or again: $(count "$q1") messages"
grep -q "release_failed" "$tmp/b1.log" && fail "a release went to the capture opened again"
kill -TERM "$b1"
wait "$b1" || true
left_pids=()
for p in "${pids[@]}"; do [ "$p" = "$b1" ] || left_pids+=("$p"); done
pids=("${left_pids[@]}")
grep -q "logical_truncate_skipped" "$tmp/b1.log" && fail "skipped a TRUNCATE by default"
bridge_t1 "$tmp/b1-skip.log" --on-truncate skip
wait_count "$q1" 9
grep -q "logical_truncate_skipped" "$tmp/b1-skip.log" || fail "no logical_truncate_skipped line"
"$sqlq" queue peek "$q1" --limit 32 >"$tmp/q1.jsonl"
"$sqlq" queue peek "$q2" --limit 32 >"$tmp/q2.jsonl"

python3 - "$tmp/q1.jsonl" "$tmp/q2.jsonl" "${#big}" <<'PY' || fail "messages"
import json, sys
def load(p):
    return [json.loads(json.loads(l)["body"]) for l in open(p) if l.strip()]
m1, m2, biglen = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
def ops(ms): return [(m["op"], m["key"]) for m in ms]
want = [("insert", {"id": 1}), ("insert", {"id": 2}), ("update", {"id": 1}),
        ("insert", {"id": 3}), ("delete", {"id": 2}), ("insert", {"id": 10}),
        ("update", {"id": 1}), ("delete", {"id": 3}), ("insert", {"id": 20})]
assert sorted(ops(m1), key=str) == sorted(want, key=str), ops(m1)
by = {}
for m in sorted(m1, key=lambda m: m["version"]):
    by.setdefault(m["key"]["id"], []).append(m)
ins, a3, kept = by[1]
assert ins["row"]["amount"] == "1.50" and len(ins["row"]["big"]) == biglen, ins["row"]["amount"]
assert ins["version"] < a3["version"] < kept["version"], [m["version"] for m in by[1]]
# its big value came as 'u' (unchanged, TOASTed) under DEFAULT: the row was read by key, as it
# is now (the bridge started after every write): the later state, never a missing value
assert a3["op"] == "update" and a3["row"] == kept["row"], a3["row"]["note"]
# the same transaction's insert of 3 collapsed with its update: one insert, the last row
assert by[3][0]["op"] == "insert" and by[3][0]["row"]["note"] == "c2"
assert by[3][0]["version"] == a3["version"]
assert kept["row"]["note"] == "toast kept"
assert kept["row"]["big"] is not None and len(kept["row"]["big"]) == biglen, "TOAST value lost"
assert by[2][0]["row"]["at"] == "infinity", by[2][0]["row"]
assert by[3][1]["row"] is None and by[3][1]["version"] > by[3][0]["version"]
d2, i10 = by[2][1], by[10][0]
assert d2["op"] == "delete" and i10["op"] == "insert" and d2["version"] == i10["version"]
assert i10["row"]["note"] == "b"
assert len({m["id"] for m in m1}) == len(m1)
# FULL: before and changed from the old row; the TOASTed value filled from it.
o = {m["op"]: m for m in m2}
assert o["update"]["row"]["big"] is not None and len(o["update"]["row"]["big"]) == biglen
assert o["update"]["before"]["note"] == "x" and o["update"]["changed"] == ["note"], o["update"]
assert o["delete"]["row"] is None and o["delete"]["before"]["note"] == "y", o["delete"]
assert o["insert"]["version"] < o["update"]["version"] < o["delete"]["version"]
print("messages ok")
PY

# --- an idle route on a busy server: its heartbeat lets the slot confirm past other work ---
sql "INSERT INTO t3 SELECT g, repeat('w', 200) FROM generate_series(1, 2000) g"
busy=$(psql_ -d "$name" -c "SELECT pg_current_wal_lsn()")
released=""
for _ in $(seq 300); do
    released=$(psql_ -d "$name" -c "SELECT confirmed_flush_lsn >= '$busy' FROM pg_replication_slots
        WHERE slot_name LIKE 'sqlq_t1_%' AND database = current_database()")
    [ "$released" = t ] && break
    sleep 0.1
done
[ "$released" = t ] || fail "an idle route's slot did not confirm past WAL written elsewhere within 30 s"

# --- the slot confirmed, the route's state shown ---
"$sqlq" status --db "$conn" --table t1 | grep -q "replication slot sqlq_t1_.*: streaming" \
    || fail "status: $("$sqlq" status --db "$conn" --table t1)"
# What waits is in the slot and the bridge's memory, which status cannot count: never a 0.
out=$("$sqlq" status --db "$conn" --table t1)
echo "$out" | grep -q "bridge default: sync version [0-9]*, pending not counted" || fail "status: $out"
echo "$out" | grep -q "pending [0-9]" && fail "status counted a logical route's pending: $out"
"$sqlq" status --db "$conn" --table t1 --json | python3 -c '
import json, sys
b = json.load(sys.stdin)["tables"][0]["bridges"][0]
assert b["pending"] is None and b["leased"] is None, b
assert b["slot"]["lag_bytes"] >= 0, b' || fail "status --json of a logical route"
for p in "${pids[@]}"; do kill -TERM "$p"; wait "$p" || fail "bridge exited $? on SIGTERM"; done
pids=()
# Nothing published is left unconfirmed: the slot still holds no row change (pgoutput's
# Insert, Update, Delete: 'I', 'U', 'D') of its publication (the slot's name without its
# _<8 hex> suffix). Other tests share the server, so WAL written since is not a measure.
left=$(psql_ -d "$name" -c "SELECT count(*) FROM pg_replication_slots s, LATERAL
    pg_logical_slot_peek_binary_changes(s.slot_name, NULL, NULL, 'proto_version', '1',
    'publication_names', left(s.slot_name, length(s.slot_name) - 9)) c
    WHERE s.slot_name LIKE 'sqlq_t1_%' AND s.database = current_database()
    AND get_byte(c.data, 0) IN (73, 85, 68)")
[ "$left" = 0 ] || fail "the slot was not confirmed up to what was published ($left row changes left)"

# --- the table left the publication; a dropped slot is a retention overrun ---
sql "ALTER PUBLICATION sqlq_t1 DROP TABLE t1"
out=$("$sqlq" config check --db "$conn" --table t1 --queue "$q1" --source logical 2>&1) && fail "config check passed"
echo "$out" | grep -q "is not in publication sqlq_t1" || fail "config check: $out"
out=$("$sqlq" status --db "$conn" --table t1 2>&1) && fail "status of a stopped route exited 0"
echo "$out" | grep -q "bridge default: capture stopped (capture_source_gone)" || fail "status: $out"
sql "ALTER PUBLICATION sqlq_t1 ADD TABLE t1"
psql_ -d "$name" -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'sqlq_t2_%' AND database = current_database()" >/dev/null
out=$("$sqlq" bridge --db "$conn" --table t2 --queue "$q2" --source logical --once 2>&1) && fail "bridge ran without its slot"
echo "$out" | grep -q "does not exist.*sqlq backfill" || fail "slot missing: $out"
"$sqlq" setup --db "$conn" --table t1 --source logical --drop >"$tmp/drop.out" || fail "drop: $(cat "$tmp/drop.out")"
grep -q "replication slot sqlq_t1_.*: dropped" "$tmp/drop.out" || fail "drop said: $(cat "$tmp/drop.out")"
grep -q "publication sqlq_t1: dropped" "$tmp/drop.out" || fail "drop said: $(cat "$tmp/drop.out")"

# --- a table dropped for good: --drop removes its slot (which would keep WAL for ever) ---
sql "CREATE TABLE public.t4 (id int PRIMARY KEY)"
"$sqlq" setup --db "$conn" --table t4 --source logical >/dev/null 2>&1 || fail "setup t4"
sql "DROP TABLE public.t4"
# status shows the slot left behind, the WAL it keeps, and the command that drops it
for args in "--table t4" "--table public.t4" ""; do
    out=$("$sqlq" status --db "$conn" $args 2>&1) && fail "status $args of a dropped table exited 0: $out"
    echo "$out" | grep -q "table public.t4 does not exist; its replication slot sqlq_t4_[0-9a-f]* still exists and retains [0-9]* bytes of WAL" \
        || fail "status $args of a dropped table: $out"
    echo "$out" | grep -qF '`sqlq setup --table t4 --source logical --drop --force`' || fail "status $args: no drop command: $out"
done
out=$("$sqlq" setup --db "$conn" --table t4 --source logical --drop 2>&1) && fail "--drop of a dropped table passed without --force: $out"
echo "$out" | grep -q -- "--force" || fail "the refusal does not say --force: $out"
"$sqlq" setup --db "$conn" --table t4 --source logical --drop --force >"$tmp/drop4.out" 2>&1 || fail "drop t4: $(cat "$tmp/drop4.out")"
grep -q "replication slot sqlq_t4_.*: dropped" "$tmp/drop4.out" || fail "drop t4 said: $(cat "$tmp/drop4.out")"
grep -q "publication sqlq_t4: dropped" "$tmp/drop4.out" || fail "drop t4 said: $(cat "$tmp/drop4.out")"
[ "$(sql "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'sqlq_t4_%'")" = 0 ] || fail "t4's slot is left"
[ "$(sql "SELECT count(*) FROM sqlq.tables WHERE table_name = 'public.t4'")" = 0 ] || fail "t4's registry rows are left"

# --- a hostile name: the command a refusal says to run, pasted into a shell, runs ---
sql 'CREATE SCHEMA "S p"; CREATE TABLE "S p"."it'"'"'s ""Odd"" ✓" (id int PRIMARY KEY)'
odd='"S p"."it'"'"'s ""Odd"" ✓"'
"$sqlq" setup --db "$conn" --table "$odd" --source logical >/dev/null 2>&1 || fail "setup of $odd"
pub=$(sql "SELECT pubname FROM pg_publication_tables WHERE schemaname = 'S p'")
sql "ALTER PUBLICATION $pub DROP TABLE \"S p\".\"it's \"\"Odd\"\" ✓\""
out=$("$sqlq" config check --db "$conn" --table "$odd" --queue "$q1" --source logical 2>&1) && fail "config check passed"
cmd=$(echo "$out" | grep -o '`sqlq setup --table .* --source logical`' | head -1 | tr -d '`')
[ -n "$cmd" ] || fail "no setup command in: $out"
eval "\"\$sqlq\" ${cmd#sqlq } --db \"\$conn\"" >"$tmp/odd.out" 2>&1 || fail "the command said ($cmd) failed: $(cat "$tmp/odd.out")"
out=$("$sqlq" config check --db "$conn" --table "$odd" --queue "$q1" --source logical 2>&1) || fail "after $cmd: $out"
echo "logical_messages: ok"
