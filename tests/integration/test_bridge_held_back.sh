#!/usr/bin/env bash
# PostgreSQL capture end to end, with a running `sqlq bridge`:
#  1. open transactions that do not write the change log (another database, another table of
#     this one) delay nothing: 20 inserts arrive within 2 polling intervals;
#  2. transaction A takes its xid early (writes another table), B updates key 1 and commits (it
#     arrives at once), A updates key 1 and stays open: a later insert waits for A, and the
#     bridge's log, `sqlq status` and the /metrics age gauge say so, naming A, and the pending
#     gauge counts the held-back change;
#  3. A commits: everything arrives, and `sqlq consume --sql` into a second database (newest
#     version per key wins) gives a replica equal to the source: A's newer state of key 1 has
#     the larger version.
set -euo pipefail
: "${SQLQ_BIN:?run through ctest}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
port=$(cat "$SQLQ_TEST_ENV_DIR/postgres/port")
odbc=$(cat "$SQLQ_TEST_ENV_DIR/postgres/odbc")
src="cw_src_$$"
other="cw_other_$$"
dst="cw_dst_$$"
q="cw-$$-$RANDOM"
work=$(mktemp -d)
bridge_pid=""
fds=()
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    [ -n "$bridge_pid" ] && kill -9 "$bridge_pid" 2>/dev/null || true
    for fd in "${fds[@]}"; do eval "exec $fd>&-" 2>/dev/null || true; done
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    for d in "$src" "$other" "$dst"; do
        psql_ -d postgres -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bridge_held_back: $*" >&2
    [ -f "$work/bridge.log" ] && tail -20 "$work/bridge.log" >&2
    exit 1
}
. "$(dirname "$0")/../support/queue_count.sh" # now_ms, count, wait_count

# session NAME DB: a psql session kept open on a pipe; statements go in with `say NAME SQL`.
session() {
    local fd
    exec {fd}> >(PGAPPNAME="$1" psql_ -d "$2" >"$work/$1.out" 2>&1)
    fds+=("$fd")
    eval "fd_$1=$fd"
}
# say NAME SQL: run SQL in session NAME and wait until it is done (idle in its transaction).
say() {
    local fd marker="step$RANDOM$RANDOM"
    eval "fd=\$fd_$1"
    printf '%s;\nSELECT '"'"'%s'"'"';\n' "$2" "$marker" >&"$fd"
    for _ in $(seq 1 100); do
        [ "$(psql_ -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = \
'$1' AND state <> 'active' AND query LIKE '%$marker%'")" = 1 ] && return 0
        sleep 0.05
    done
    fail "session $1 did not finish: $2 ($(cat "$work/$1.out"))"
}

for d in "$src" "$other" "$dst"; do psql_ -d postgres -c "CREATE DATABASE $d"; done
psql_ -d "$src" -c "CREATE TABLE kv (id int PRIMARY KEY, v text); CREATE TABLE side (id int PRIMARY KEY)"
psql_ -d "$other" -c "CREATE TABLE jobs (id int PRIMARY KEY)"
psql_ -d "$dst" -c "CREATE TABLE kv (id int PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "${odbc}Database=$src;" --table kv >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null
mport=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
SQLQ_LOG_LEVEL=info "$SQLQ_BIN" bridge --db "${odbc}Database=$src;" --table kv --queue "$q" \
    --polling-interval-ms 1000 --listen "127.0.0.1:$mport" >/dev/null 2>"$work/bridge.log" &
bridge_pid=$!
for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$mport/readyz" && break
    sleep 0.1
done

# ---- 1. unrelated open transactions ---------------------------------------------------------
session cw_other "$other"
say cw_other "BEGIN"
say cw_other "INSERT INTO jobs VALUES (1)"
session cw_side "$src"
say cw_side "BEGIN"
say cw_side "INSERT INTO side VALUES (1)"
sleep 1.2 # the bridge has polled with both open
psql_ -d "$src" -c "INSERT INTO kv SELECT i, 'x' FROM generate_series(1, 20) i"
ms=$(wait_count 20 2000)
echo "bridge_held_back: 20 changes arrived in $ms ms (polling interval 1000 ms) while other transactions stayed open: ok"
say cw_other "COMMIT"
say cw_side "COMMIT"

# ---- 2. a writer of the change log holds back what it must, and is named ---------------------
session cw_writer "$src"
say cw_writer "BEGIN"
say cw_writer "INSERT INTO side VALUES (2)" # A's xid, early
a_pid=$(psql_ -d postgres -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'cw_writer'")
psql_ -d "$src" -c "UPDATE kv SET v = 'B' WHERE id = 1" # B, committed
wait_count 21 2000 >/dev/null
say cw_writer "UPDATE kv SET v = 'A' WHERE id = 1" # A writes the log and stays open
psql_ -d "$src" -c "INSERT INTO kv VALUES (100, 'after A wrote')"
for _ in $(seq 1 150); do
    grep -q "event=capture_held_back.*pid=$a_pid application_name=\"cw_writer\"" "$work/bridge.log" && break
    sleep 0.1
done
grep -q "event=capture_held_back.*pid=$a_pid application_name=\"cw_writer\" database=$src state=\"idle in transaction\"" "$work/bridge.log" \
    || fail "no capture_held_back line naming pid $a_pid"
[ "$(count)" = 21 ] || fail "a change after A's version was delivered before A ended"
"$SQLQ_BIN" status --db "${odbc}Database=$src;" --table kv >"$work/status" 2>&1 || fail "status: $(cat "$work/status")"
grep -q "held back: 1 committed change" "$work/status" || fail "status: $(cat "$work/status")"
# status counts it pending, as the metric below does (found by a user: it said pending 0)
grep -q "pending 1, " "$work/status" || fail "status does not count the held-back change pending: $(cat "$work/status")"
grep -q "pid $a_pid, application_name 'cw_writer', database $src, state idle in transaction" "$work/status" \
    || fail "status does not name A: $(cat "$work/status")"
"$SQLQ_BIN" status --db "${odbc}Database=$src;" --table kv --json >"$work/status.json"
grep -q "\"pid\": $a_pid" "$work/status.json" || fail "status --json: $(cat "$work/status.json")"
age=""
for _ in $(seq 1 60); do
    age=$(curl -s "http://127.0.0.1:$mport/metrics" | grep '^sqlq_oldest_pending_change_age_seconds{table="kv"}' | awk '{print $2}')
    [ -n "$age" ] && awk "BEGIN{exit !($age >= 1)}" && break
    sleep 0.2
done
[ -n "$age" ] && awk "BEGIN{exit !($age >= 1)}" || fail "oldest pending age gauge '$age'"
# The change held back is pending (committed, not delivered): the gauge an autoscaler reads
# must not say 0.
pending=$(curl -s "http://127.0.0.1:$mport/metrics" | grep '^sqlq_pending_changes{table="kv"}' | awk '{print $2}')
[ "$pending" = 1 ] || fail "pending changes gauge '$pending' while 1 committed change is held back"
echo "bridge_held_back: held back by A (pid $a_pid), named by log, status and metric (age ${age}s): ok"

# ---- 3. A commits: everything arrives; the replica equals the source --------------------------
say cw_writer "COMMIT"
wait_count 23 2500 >/dev/null
kill -TERM "$bridge_pid"
wait "$bridge_pid" || fail "bridge exited $?"
bridge_pid=""
timeout 60 "$SQLQ_BIN" consume "$q" --sql "${odbc}Database=$dst;" --table kv --exit-when-empty \
    --max-polling-interval-ms 300 2>"$work/consume.log" || fail "consume: $(tail -3 "$work/consume.log")"
want=$(psql_ -d "$src" -c "SELECT id, v FROM kv ORDER BY id")
got=$(psql_ -d "$dst" -c "SELECT id, v FROM kv ORDER BY id")
[ "$got" = "$want" ] || fail "replica differs: $(diff <(echo "$want") <(echo "$got"))"
[ "$(psql_ -d "$dst" -c "SELECT v FROM kv WHERE id = 1")" = A ] || fail "key 1 is not A's state"
echo "bridge_held_back: replica through consume --sql equals the source: ok"
