#!/usr/bin/env bash
# The logical source under faults, on a private PostgreSQL (wal_level = logical) and a private
# Azurite, with a writer inserting one row per transaction throughout:
# - two bridge instances of one bridge name: one streams from the slot, the other waits
#   (logical_standby); the streaming one is killed with SIGKILL three times at random moments
#   and started again, the other takes over each time;
# - PostgreSQL restarted (fast) and crashed (immediate) under the writer;
# - the queue service down for 60 s: the route holds what it received, the slot's confirmed
#   position stays where it was, /metrics shows the slot's retained WAL and a growing lag,
#   nothing is poisoned;
# then every row written arrives (0 lost, 0 poisoned). Last, a slot the server invalidated
# (max_slot_wal_keep_size passed) stops the route with an error naming sqlq backfill, and
# setup refuses to re-create it silently.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
tmp=$(mktemp -d)
chmod 755 "$tmp" # the private server runs as postgres when the tests run as root
pids=()
writer=""
# Runs on every exit (a failure anywhere, a signal): errexit off, so that a step failing here
# (the writer already gone, say) cannot end it before the servers are stopped.
cleanup() {
    set +e
    if [ -n "$writer" ]; then
        pkill -9 -P "$writer" 2>/dev/null # its psql
        kill -9 "$writer" 2>/dev/null
    fi
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    "$src/tests/support/azurite.sh" stop "$tmp/azurite" >/dev/null 2>&1 || true
    "$src/tests/support/postgres.sh" stop "$tmp/pg" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

SQLQ_PG_WAL_LEVEL=logical "$src/tests/support/postgres.sh" start "$tmp/pg" >/dev/null
pgport=$(cat "$tmp/pg/port")
azport=$("$src/tests/support/free_port.sh")
"$src/tests/support/azurite.sh" start "$tmp/azurite" "$azport" --disk >/dev/null
export SQLQ_QUEUE_CONNECTION=$(cat "$tmp/azurite/conn")
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgport" -U sqlq -d postgres "$@"; }
conn="$(cat "$tmp/pg/odbc")Database=postgres;"
q="lgfault-$$"
psql_ -c "CREATE TABLE w (id int PRIMARY KEY, note text)"
"$sqlq" setup --db "$conn" --table w --source logical >"$tmp/setup.out" 2>&1 || fail "setup"

mport=$("$src/tests/support/free_port.sh")
start_bridge() { # NAME [LISTEN]
    "$sqlq" bridge --db "$conn" --table w --queue "$q" --source logical --format batch \
        --polling-interval-ms 100 --log-level info ${2:+--listen 127.0.0.1:$2} \
        >>"$tmp/$1.out" 2>>"$tmp/$1.log" &
    pids+=($!)
}
holder_pid() { psql_ -c "SELECT active_pid FROM pg_replication_slots WHERE slot_name LIKE 'sqlq_w_%'" 2>/dev/null || true; }
# The sqlq process streaming from the slot: the one whose log names the walsender's pid last.
bridge_of() { # WALSENDER_PID
    for f in "$tmp"/a.log "$tmp"/b.log; do
        grep -q "logical_stream_started.* pid=$1\$" "$f" 2>/dev/null && { echo "${f##*/}"; return; }
    done
}

# The writer: ids 1..N, one transaction each (five per psql), retried until the server takes
# them (restarts; a retried insert of a row already there does nothing).
N=1500
(
    for i in $(seq 1 5 $N); do
        args=()
        for j in 0 1 2 3 4; do args+=(-c "INSERT INTO w VALUES ($((i + j)), 'row $((i + j))') ON CONFLICT DO NOTHING"); done
        until psql -X -q -h 127.0.0.1 -p "$pgport" -U sqlq -d postgres "${args[@]}" 2>/dev/null; do
            sleep 0.2
        done
    done
) &
writer=$!

start_bridge a
sleep 1
start_bridge b
sleep 2
grep -q "logical_standby" "$tmp/a.log" "$tmp/b.log" || fail "no instance waited as standby"

# kill -9 the streaming instance three times at random moments; start it again each time.
for k in 1 2 3; do
    sleep "0.$((RANDOM % 9 + 1))"
    h=$(holder_pid)
    [ -n "$h" ] || { sleep 1; h=$(holder_pid); }
    who=$(bridge_of "$h")
    [ -n "$who" ] || fail "no bridge instance streams from the slot (walsender $h)"
    idx=0; [ "$who" = b.log ] && idx=1
    victim=${pids[$idx]}
    kill -9 "$victim"
    wait "$victim" 2>/dev/null || true
    echo "${SECONDS}s: kill -9 of instance ${who%.log} (pid $victim)"
    start_bridge "${who%.log}"
    pids[$idx]=${pids[-1]}
    unset 'pids[-1]'
    sleep 1.5
done
# Each start, a takeover's too, says where it resumes: the slot's confirmed position, not 0/0.
! grep -h "logical_stream_started" "$tmp/a.log" "$tmp/b.log" | grep -q "confirmed=0/0 " ||
    fail "a stream start logged confirmed=0/0: $(grep -h logical_stream_started "$tmp/a.log" "$tmp/b.log")"

echo "${SECONDS}s: PostgreSQL fast restart"
as_pg "$bindir/pg_ctl" -D "$tmp/pg/data" restart -m fast -w >/dev/null 2>&1 || fail "pg restart"
sleep 3
echo "${SECONDS}s: PostgreSQL crash (immediate stop) and start"
as_pg "$bindir/pg_ctl" -D "$tmp/pg/data" stop -m immediate -w >/dev/null 2>&1 || true
sleep 1
as_pg "$bindir/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/server.log" -w -t 60 start \
    -o "-p $pgport -k $tmp/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c wal_level=logical -c max_replication_slots=50 -c max_wal_senders=50 -c max_connections=300" \
    >/dev/null || fail "pg start after crash"
sleep 3

# One instance with /metrics through a queue outage of 60 s.
for p in "${pids[@]}"; do kill -TERM "$p"; wait "$p" 2>/dev/null || true; done
pids=()
start_bridge c "$mport"
sleep 3
metric() { curl -s "http://127.0.0.1:$mport/metrics" | sed -n "s/^$1{table=\"w\"} \([0-9.e+]*\)$/\1/p"; }
"$src/tests/support/azurite.sh" stop "$tmp/azurite"
echo "${SECONDS}s: queue service down for 60 s"
# A change the queue cannot take: nothing at or after it is confirmed while the outage lasts.
# (What the queue accepted just before is confirmed within a second or so: measured from 5 s.)
psql_ -c "INSERT INTO w VALUES ($((N + 1)), 'during the outage')"
confirmed() { psql_ -c "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name LIKE 'sqlq_w_%'"; }
sleep 5
c0=$(confirmed) l0=$(metric sqlq_slot_lag_bytes)
sleep 25
psql_ -c "UPDATE w SET note = 'still during the outage' WHERE id = $((N + 1))" # WAL written
sleep 30
c1=$(confirmed) l1=$(metric sqlq_slot_lag_bytes) r1=$(metric sqlq_slot_retained_wal_bytes)
echo "${SECONDS}s: during the outage: confirmed $c0 -> $c1, lag $l0 -> $l1 bytes, retained $r1 bytes"
[ -n "$r1" ] && [ -n "$l1" ] || fail "no sqlq_slot_retained_wal_bytes / sqlq_slot_lag_bytes during the outage"
[ "$c0" = "$c1" ] || fail "the slot's confirmed position moved while the queue was down ($c0 -> $c1)"
python3 -c "import sys; sys.exit(0 if float('$l1') > float('${l0:-0}') else 1)" \
    || fail "the reported lag did not grow during the outage ($l0 -> $l1)"
"$src/tests/support/azurite.sh" start "$tmp/azurite" "$azport" --disk >/dev/null
wait "$writer" || fail "writer failed"
writer=""
before=$(psql_ -c "SELECT pg_current_wal_lsn()")
psql_ -c "INSERT INTO w VALUES ($((N + 1)), 'last') ON CONFLICT (id) DO UPDATE SET note = 'last'"

# Once the queue took the last change the route confirms past what was written before it (a
# slot that stayed at the outage's position would hold the server's WAL); then drain the queue
# into one file of bodies.
done_=""
for _ in $(seq 600); do
    done_=$(psql_ -c "SELECT confirmed_flush_lsn > '$before'::pg_lsn FROM pg_replication_slots WHERE slot_name LIKE 'sqlq_w_%'")
    [ "$done_" = t ] && break
    sleep 0.2
done
[ "$done_" = t ] || fail "the slot did not confirm past $before (the last change's start) within 120 s"
echo "${SECONDS}s: the slot confirmed past the last change's start; draining the queue"
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true; pids=()
mkdir "$tmp/bodies"
"$sqlq" consume "$q" --exit-when-empty --exec "cat > '$tmp/bodies/'\$SQLQ_MESSAGE_ID" \
    >/dev/null 2>"$tmp/consume.log" || fail "drain"
poisoned=$("$sqlq" queue stats "$q" | sed -n 's/.*"poison_approximate_count":\([0-9]*\).*/\1/p')
[ "${poisoned:-0}" = 0 ] || fail "$poisoned messages poisoned"
# The rows the server kept (synchronous_commit is off in the test server: a crash loses the last
# commits it acknowledged, before they reach the WAL; those were never changes).
psql_ -c "SELECT id FROM w ORDER BY id" >"$tmp/ids"
[ "$(wc -l <"$tmp/ids")" -ge $((N - 100)) ] || fail "the table holds only $(wc -l <"$tmp/ids") rows"
python3 - "$tmp/bodies" "$tmp/ids" <<'PY' || fail "changes lost"
import json, os, sys
seen, msgs = set(), 0
for name in os.listdir(sys.argv[1]):
    msgs += 1
    for c in json.load(open(os.path.join(sys.argv[1], name)))["changes"]:
        seen.add(c["key"]["id"])
want = {int(l) for l in open(sys.argv[2]) if l.strip()}
missing = sorted(want - seen)
print(f"{len(seen)} of {len(want)} rows arrived in {msgs} messages; missing: {missing[:20]}")
sys.exit(1 if missing else 0)
PY

# A slot the server invalidated: the route stops naming sqlq backfill; never re-created.
psql_ -c "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in 1 2 3 4; do
    psql_ -c "INSERT INTO w SELECT g, repeat('x', 500) FROM generate_series($((N + 2)) + 0, $((N + 2))) g ON CONFLICT DO NOTHING; CREATE TEMP TABLE junk AS SELECT g, md5(g::text) FROM generate_series(1, 20000) g" -c "SELECT pg_switch_wal()" -c "CHECKPOINT" >/dev/null
done
st=$(psql_ -c "SELECT wal_status FROM pg_replication_slots WHERE slot_name LIKE 'sqlq_w_%'")
[ "$st" = lost ] || fail "the slot is $st, not lost, after max_slot_wal_keep_size passed"
out=$("$sqlq" bridge --db "$conn" --table w --queue "$q" --source logical --once 2>&1) && fail "bridge ran on a lost slot"
echo "$out" | grep -q "is lost.*sqlq backfill" || fail "lost slot: $out"
# status names the stop a retention overrun (the reason alerts and the console key on)
out=$("$sqlq" status --db "$conn" --table w 2>&1) && fail "status exited 0 on a lost slot: $out"
echo "$out" | grep -q "capture stopped (retention_overrun)" || fail "status on a lost slot: $out"
doc=$("$sqlq" status --db "$conn" --table w --json 2>/dev/null) && fail "status --json exited 0 on a lost slot"
echo "$doc" | python3 -c '
import json, sys
b = json.load(sys.stdin)["tables"][0]["bridges"][0]
assert b.get("stopped") == "retention_overrun" and "is lost" in b["error"], b' ||
    fail "status --json on a lost slot"
out=$("$sqlq" setup --db "$conn" --table w --source logical 2>&1) && fail "setup re-created a lost slot"
echo "$out" | grep -q "is lost" || fail "setup on a lost slot: $out"
echo "logical_faults: ok"
