#!/usr/bin/env bash
# sqlq bridge on a real MariaDB (issue 17): every change of a composite-key table with DECIMAL,
# utf8mb4 (a 4-byte character), an update, a key that changes and a delete is published; the
# late commit: T1 writes and stays open, T2 writes and commits and is delivered (without waiting
# for T1), T1 commits later and is delivered; kill -9 of a bridge mid-backlog loses nothing
# (a second run delivers the rest, at least once); two instances share one table; --drop.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
azurite=$(cat "$env_dir/azurite/conn")
port=$(cat "$env_dir/mariadb/port")
base=$(cat "$env_dir/mariadb/odbc")
tmp=$(mktemp -d)
db="br_$$_$RANDOM"
q="mdb-$$-$RANDOM"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    SQLQ_QUEUE_CONNECTION=$azurite "$sqlq" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -8 >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true
export SQLQ_QUEUE_CONNECTION=$azurite
my() { mariadb --no-defaults --default-character-set=utf8mb4 -h 127.0.0.1 -P "$port" -u sqlq "$db" "$@"; }
mariadb --no-defaults -h 127.0.0.1 -P "$port" -u sqlq -e "CREATE DATABASE $db" || fail "create database"
conn="${base}Database=$db;"
once() { timeout 60 "$sqlq" bridge --db "$conn" --table orders --queue "$q" --once "$@"; }
# The queue's bodies as "op key-json row-json" lines, sorted; then emptied.
drain() {
    "$sqlq" queue peek "$q" --count 32 >"$tmp/peek" 2>/dev/null || true
    node -e '
        const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
        const out = lines.map(l => JSON.parse(JSON.parse(l).body))
            .map(m => `${m.op} ${JSON.stringify(m.key)} ${JSON.stringify(m.row)}`).sort();
        console.log(out.join("\n"));' "$tmp/peek"
    "$sqlq" queue clear "$q" >/dev/null 2>&1 || fail "queue clear"
}

my -e "CREATE TABLE orders (region varchar(8) NOT NULL, id int NOT NULL, total decimal(30,10),
       note text, PRIMARY KEY (region, id)) DEFAULT CHARSET=utf8mb4"
"$sqlq" setup --db "$conn" --table orders >"$tmp/setup.log" 2>&1 || fail "setup"
"$sqlq" queue create "$q" >/dev/null 2>&1 || true
once --start-from now >"$tmp/start.log" 2>&1 || fail "first run"

# 1. operations
my -e "INSERT INTO orders VALUES ('eu', 1, 12345678901234567890.0123456789, 'a 😀'), ('eu', 2, 2, NULL), ('us', 1, 3, 'x');
       UPDATE orders SET total = 9.5 WHERE region = 'eu' AND id = 2;
       UPDATE orders SET id = 5 WHERE region = 'eu' AND id = 1;
       DELETE FROM orders WHERE region = 'us'"
once >"$tmp/ops.log" 2>&1 || fail "ops run"
got=$(drain)
# eu/1 was inserted and its key changed since the last run: one delete (docs/capture.md, op)
want='delete {"region":"eu","id":1} null
delete {"region":"us","id":1} null
insert {"region":"eu","id":2} {"region":"eu","id":2,"total":"9.5000000000","note":null}
insert {"region":"eu","id":5} {"region":"eu","id":5,"total":"12345678901234567890.0123456789","note":"a 😀"}'
[ "$got" = "$want" ] || fail "operations: got
$got
want
$want"
echo "ok: inserts, an update, a changed key and a delete (the old key deleted) delivered"

# 1b. column types (docs/types.md, MariaDB)
my -e "CREATE TABLE ty (id int PRIMARY KEY, bt bit(1), b tinyint(1), n tinyint(1), t tinyint,
       ts timestamp(3) NULL, dt datetime(6), j json, vb varbinary(8), u bigint unsigned, e enum('a','b'))"
"$sqlq" setup --db "$conn" --table ty >"$tmp/setup_ty.log" 2>&1 || fail "setup ty"
my -e "INSERT INTO ty VALUES (1, b'1', 1, 7, 1, '2024-05-01 12:00:00.5', '2024-02-29 23:59:59.123456',
       '{\"a\": [1, 2]}', 0x00FF10, 18446744073709551615, 'b'), (2, b'0', 0, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL)"
timeout 60 "$sqlq" bridge --db "$conn" --table ty --queue "$q" --once --start-from beginning >"$tmp/ty.log" 2>&1 \
    || fail "types run"
got=$(drain)
want='insert {"id":1} {"id":1,"bt":true,"b":true,"n":7,"t":1,"ts":"2024-05-01T12:00:00.500+00:00","dt":"2024-02-29T23:59:59.123456","j":"{\"a\": [1, 2]}","vb":{"$base64":"AP8Q"},"u":"18446744073709551615","e":"b"}
insert {"id":2} {"id":2,"bt":false,"b":false,"n":null,"t":0,"ts":null,"dt":null,"j":null,"vb":null,"u":0,"e":null}'
[ "$got" = "$want" ] || fail "types: got
$got
want
$want"
echo "ok: BIT(1) and TINYINT(1) booleans, TIMESTAMP in UTC, DATETIME, JSON as text, binary, BIGINT UNSIGNED"

# 2. late commit
(my -e "BEGIN; INSERT INTO orders VALUES ('late', 1, 1, 'T1'); SELECT SLEEP(8); COMMIT;" >/dev/null 2>&1) &
t1=$!
pids+=("$t1")
sleep 1
my -e "INSERT INTO orders VALUES ('early', 2, 2, 'T2')"
t0=$(date +%s)
once >"$tmp/late1.log" 2>&1 || fail "run while T1 is open"
took=$(($(date +%s) - t0))
got=$(drain)
[ "$got" = 'insert {"region":"early","id":2} {"region":"early","id":2,"total":"2.0000000000","note":"T2"}' ] \
    || fail "while T1 is open: got $got"
[ "$took" -lt 6 ] || fail "the run waited for T1 ($took s)"
wait "$t1" || fail "T1 did not commit"
once >"$tmp/late2.log" 2>&1 || fail "run after T1"
got=$(drain)
[ "$got" = 'insert {"region":"late","id":1} {"region":"late","id":1,"total":"1.0000000000","note":"T1"}' ] \
    || fail "after T1 committed: got $got"
echo "ok: T2 delivered while T1 was open (in $took s), T1 delivered after its commit"

# 3. kill -9 mid-backlog: nothing lost
my -e "INSERT INTO orders SELECT 'k', seq, seq, NULL FROM seq_1_to_300"
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --max-batch-size 10 --polling-interval-ms 50 \
    >"$tmp/kill.log" 2>&1 &
bp=$!
pids+=("$bp")
for _ in $(seq 1 100); do
    grep -q 'event=progress' "$tmp/kill.log" && break
    sleep 0.1
done
kill -9 "$bp"
wait "$bp" 2>/dev/null || true
once --lease-s 1 >"$tmp/after_kill.log" 2>&1 || fail "run after kill -9"
sleep 1.5 # leases of the killed instance expire
once --lease-s 1 >"$tmp/after_kill2.log" 2>&1 || fail "second run after kill -9"
drain_all() {
    : >"$tmp/ids"
    while true; do
        "$sqlq" queue get "$q" --count 32 --visibility-s 600 >"$tmp/got" 2>/dev/null || break
        [ -s "$tmp/got" ] || break
        node -e '
            const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
            for (const l of lines) console.log(JSON.parse(JSON.parse(l).body).key.id);' "$tmp/got" >>"$tmp/ids"
    done
    sort -n -u "$tmp/ids" | wc -l
}
distinct=$(drain_all)
[ "$distinct" = 300 ] || fail "after kill -9: $distinct of 300 keys delivered"
echo "ok: kill -9 mid-backlog, then runs again: all 300 keys delivered"

# 4. two instances of one bridge share the table (their polls take turns on the state row)
"$sqlq" queue clear "$q" >/dev/null 2>&1 || fail "queue clear"
my -e "INSERT INTO orders SELECT 'two', seq, seq, NULL FROM seq_1_to_200"
once --max-batch-size 10 >"$tmp/two_a.log" 2>&1 &
a=$!
once --max-batch-size 10 >"$tmp/two_b.log" 2>&1 &
b=$!
pids+=("$a" "$b")
wait "$a" || fail "instance a exited $?"
wait "$b" || fail "instance b exited $?"
distinct=$(drain_all)
[ "$distinct" = 200 ] || fail "two instances: $distinct of 200 keys delivered"
sum=0
for f in "$tmp/two_a.log" "$tmp/two_b.log"; do
    m=$(sed -n 's/.*event=bridge_done changes=[0-9]* messages=\([0-9]*\).*/\1/p' "$f")
    sum=$((sum + ${m:-0}))
done
[ "$sum" -ge 200 ] || fail "two instances published $sum messages for 200 changes"
echo "ok: two instances delivered all 200 keys ($sum messages)"

# 5. backfill (keyset pages in key order) and a cursor source (read-only polling on a DATETIME
#    column, with the safety lag computed by MariaDB's SYSDATE)
"$sqlq" queue clear "$q" >/dev/null 2>&1 || fail "queue clear"
timeout 60 "$sqlq" backfill --db "$conn" --table orders --queue "$q" --batch-size 7 >"$tmp/backfill.log" 2>&1 \
    || fail "backfill"
n=$(my -N -e "SELECT count(*) FROM orders")
grep -q "event=backfill_done .* rows=$n " "$tmp/backfill.log" || fail "backfill did not publish the $n rows"
distinct=$(drain_all)
[ "$distinct" -ge 300 ] || fail "backfill: $distinct distinct ids"
my -e "CREATE TABLE ev (id int PRIMARY KEY, at datetime(3) NOT NULL, v text);
       INSERT INTO ev VALUES (1, UTC_TIMESTAMP(3) - INTERVAL 2 MINUTE, 'old'),
       (2, UTC_TIMESTAMP(3) - INTERVAL 1 MINUTE, 'older than the lag'),
       (3, UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, 'inside the lag')"
"$sqlq" queue clear "$q" >/dev/null 2>&1 || fail "queue clear"
timeout 60 "$sqlq" bridge --db "$conn" --table ev --queue "$q" --source cursor --cursor-column at \
    --once >"$tmp/cursor.log" 2>&1 || fail "cursor run"
got=$(drain | cut -d' ' -f2)
[ "$got" = '{"id":1}
{"id":2}' ] || fail "cursor: got keys $got (want 1 and 2; 3 is inside the safety lag)"
echo "ok: backfill of $n rows in pages of 7; a cursor source delivers the rows older than its lag only"

# 6. --drop (sqlq's database stays while other databases of the server use it); --force: an
# instance killed with -9 above counts as working on the table until its lease runs out
"$sqlq" setup --db "$conn" --table orders --table ty --drop --force >"$tmp/drop.log" 2>&1 || fail "drop: $(cat "$tmp/drop.log")"
n=$(my -N -e "SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = '$db'")
[ "$n" = 0 ] || fail "$n triggers left after --drop"
grep -q 'change log and triggers removed' "$tmp/drop.log" || fail "--drop did not say what it removed"
echo "ok: --drop removed the triggers and the logs"
mariadb --no-defaults -h 127.0.0.1 -P "$port" -u sqlq -e "DROP DATABASE $db" || true
