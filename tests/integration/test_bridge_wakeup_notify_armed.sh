#!/usr/bin/env bash
# Wake-ups notify only while a bridge is armed (a NOTIFY in every writing transaction would
# serialize their commits). The trigger tries the log's wake-up lock shared and
# notifies only when that fails; an idle bridge's listener holds it exclusively, or waits for it
# (docs/capture.md, Wake-ups). On PostgreSQL:
#  1. no bridge: a commit sends no notification (a LISTEN session sees none), and the writer
#     holds the lock shared to its end; with the lock held by another session (standing in for
#     an armed bridge), or waited for behind an open writer, a commit notifies without
#     waiting, and the open writer that took it shared does not; sqlq.notify = off (or unset
#     where transactions may be prepared: a writer then PREPAREs): neither the notification
#     nor the lock;
#  2. the arm race: a writer inserts and stays open (it holds the lock shared and will not
#     notify); a bridge at a 30 s polling interval starts and goes idle, its arm waiting behind
#     the writer; another commit meanwhile; the writer commits: both are published within
#     1 s, not after the interval;
#  3. an open writer that will notify holds the read horizon back while another commit
#     arrives: the bridge polls, then waits armed (no poll storm: at most 3 wake-ups in 3 s),
#     and when the writer commits both arrive within 1 s;
#  4. two instances sharing the table, both with wake-ups at a 30 s interval: 12 commits at
#     random pauses, each published within 1 s, each exactly once, nothing left leased.
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
db="wka_$$"
q="wka-$$-$RANDOM"
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bridge_wakeup_notify_armed: $*" >&2
    for f in "$work"/*.log "$work"/*.out; do
        [ -f "$f" ] && { echo "== $f" >&2; grep -v 'event=route_state' "$f" | tail -15 >&2; }
    done
    exit 1
}
. "$(dirname "$0")/../support/queue_count.sh"
. "$(dirname "$0")/../support/wait_log.sh"
conn="${pgodbc}Database=$db;"
key="1936813169, hashtext('sqlq.log_kv')" # the wake-up lock of kv's log (docs/capture.md)

# session NAME: a psql session on $db fed through a FIFO (say NAME SQL), output in NAME.out.
session() {
    mkfifo "$work/$1.in"
    psql_ -d "$db" <"$work/$1.in" >"$work/$1.out" 2>&1 &
    pids+=($!)
    local fd
    exec {fd}>"$work/$1.in"
    eval "fd_$1=$fd"
}
say() {
    local fd
    eval "fd=\$fd_$1"
    echo "$2" >&"$fd"
}
# synced NAME: until the session has run everything said to it so far.
synced() {
    local m="mark_$RANDOM$RANDOM"
    say "$1" "SELECT '$m';"
    for _ in $(seq 1 100); do
        grep -q "^$m\$" "$work/$1.out" && return 0
        sleep 0.05
    done
    fail "session $1 did not answer"
}
notifications() { grep -c 'Asynchronous notification "sqlq.log_kv"' "$work/lis.out" || true; }
# commit ID: one single-row transaction, which must not wait for the wake-up lock.
commit() { timeout 5 psql -X -q -h 127.0.0.1 -p "$port" -U sqlq -d "$db" -c "INSERT INTO kv VALUES ($1, 'x')" >/dev/null || fail "insert $1 waited or failed"; }
wake_locks() { psql_ -d "$db" -c "SELECT coalesce(string_agg(mode || CASE WHEN granted THEN '' ELSE '?' END, ',' ORDER BY mode), '') FROM pg_locks WHERE locktype = 'advisory' AND classid = 1936813169 AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"; }
# start_bridge NAME [LEVEL]: a bridge at a 30 s polling interval, logging to NAME.log.
start_bridge() {
    SQLQ_LOG_LEVEL=${2:-info} "$SQLQ_BIN" bridge --db "$conn" --table kv --queue "$q" \
        --polling-interval-ms 30000 >/dev/null 2>>"$work/$1.log" &
    pids+=($!)
    eval "pid_$1=$!"
    wait_log "$work/$1.log" "event=listen_started" || fail "$1 did not start listening"
}
stop_bridge() {
    eval "kill -TERM \$pid_$1"
    eval "wait \$pid_$1" || fail "$1 exited $?"
}
# listeners_waiting N: until N listeners wait for the wake-up lock (their arm is pending).
listeners_waiting() {
    for _ in $(seq 1 100); do
        [ "$(psql_ -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND application_name = 'sqlq-listen' AND wait_event = 'advisory'")" = "$1" ] && return 0
        sleep 0.05
    done
    fail "expected $1 listener(s) waiting for the wake-up lock"
}

psql_ -d postgres -c "CREATE DATABASE $db"
# The test server allows prepared transactions: say that no writer here prepares.
psql_ -d postgres -c "ALTER DATABASE $db SET sqlq.notify = on"
psql_ -d "$db" -c "CREATE TABLE kv (id int PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "$conn" --table kv >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null
session lis
say lis 'LISTEN "sqlq.log_kv";'
synced lis

# ---- 1. no bridge: no notification; the lock held or waited for: notified -----------------------
commit 1
synced lis
[ "$(notifications)" = 0 ] || fail "a commit with no bridge waiting notified"
session w
say w "BEGIN; INSERT INTO kv VALUES (2, 'open');"
synced w
[ "$(wake_locks)" = ShareLock ] || fail "an open writer holds '$(wake_locks)', wanted the wake-up lock shared"
say w "COMMIT;"
synced w
synced lis
[ "$(notifications)" = 0 ] || fail "the writer that held the lock shared notified"
echo "bridge_wakeup_notify_armed: no bridge waiting: no notification, the writer held the lock shared: ok"

session arm
say arm "SELECT pg_advisory_lock($key);"
synced arm
commit 3
synced lis
[ "$(notifications)" = 1 ] || fail "a commit with the wake-up lock held sent $(notifications) notification(s), wanted 1"
say arm "SELECT pg_advisory_unlock_all();"
synced arm
echo "bridge_wakeup_notify_armed: the lock held (an armed bridge): the commit notified without waiting: ok"

say w "BEGIN; INSERT INTO kv VALUES (4, 'open, took the lock shared');"
synced w
say arm "SELECT pg_advisory_lock($key);" # waits behind w
for _ in $(seq 1 50); do [ "$(wake_locks)" = "ExclusiveLock?,ShareLock" ] && break; sleep 0.05; done
[ "$(wake_locks)" = "ExclusiveLock?,ShareLock" ] || fail "the exclusive request is not waiting behind the writer: $(wake_locks)"
commit 5
synced lis
[ "$(notifications)" = 2 ] || fail "a commit while a bridge waits for the lock sent $(( $(notifications) - 1 )) notification(s), wanted 1"
say w "COMMIT;"
synced w
synced arm # granted once w ended
synced lis
[ "$(notifications)" = 2 ] || fail "the writer that took the lock shared before the bridge asked notified"
echo "bridge_wakeup_notify_armed: the lock waited for: a commit notified, the writer that held it shared did not: ok"

say w "SET sqlq.notify = off; BEGIN; INSERT INTO kv VALUES (6, 'notify off');"
synced w
[ "$(wake_locks)" = ExclusiveLock ] || fail "with sqlq.notify off the writer took the wake-up lock: $(wake_locks)"
say w "COMMIT; RESET sqlq.notify;"
synced w
synced lis
[ "$(notifications)" = 2 ] || fail "with sqlq.notify off the writer notified"
# sqlq.notify unset on this server, which allows prepared transactions: silent, and a writer
# may PREPARE (it holds no wake-up lock, and ran no NOTIFY, which PREPARE refuses).
say w "SET sqlq.notify = ''; BEGIN; INSERT INTO kv VALUES (7, 'prepared');"
synced w
[ "$(wake_locks)" = ExclusiveLock ] || fail "with sqlq.notify unset the writer took the wake-up lock: $(wake_locks)"
say w "PREPARE TRANSACTION 'wka_$$'; COMMIT PREPARED 'wka_$$'; RESET sqlq.notify;"
synced w
grep -q ERROR "$work/w.out" && fail "PREPARE TRANSACTION failed: $(grep ERROR "$work/w.out")"
synced lis
[ "$(notifications)" = 2 ] || fail "with sqlq.notify unset the writer notified"
say arm "SELECT pg_advisory_unlock_all();"
synced arm
echo "bridge_wakeup_notify_armed: sqlq.notify off, or unset where transactions may be prepared: no lock, no notification: ok"
n=7

# ---- 2. the arm race: the bridge's arm waits behind an open writer --------------------------------
say w "BEGIN; INSERT INTO kv VALUES (100, 'open while the bridge starts');"
synced w
start_bridge b1 # a writer open at its start holds back every change (pg_horizon.h)
listeners_waiting 1
commit 101 # notifies (the bridge waits for the lock), held back by w
sleep 0.5
[ "$(count)" = 0 ] || fail "a change passed the open writer"
say w "COMMIT;"
synced w
n=$((n + 2))
ms=$(wait_count "$n" 5000)
[ "$ms" -le 1000 ] || fail "the changes held back by the writer the arm waited for arrived after $ms ms (interval 30 s)"
echo "bridge_wakeup_notify_armed: the arm waited behind an open writer: its commit and the $((n - 1)) changes it held back arrived in $ms ms: ok"
stop_bridge b1

# ---- 3. an open writer that notifies holds the horizon back: no poll storm -------------------------
start_bridge b2 trace
wait_log "$work/b2.log" "event=wakeup_armed.*hint=0" || fail "b2 did not arm"
say w "BEGIN; INSERT INTO kv VALUES (200, 'open, will notify');"
synced w
commit 201 # woken, polls, held back by w
sleep 1
before=$(grep -c 'event=wakeup ' "$work/b2.log" || true)
sleep 3
woken=$(( $(grep -c 'event=wakeup ' "$work/b2.log" || true) - before ))
[ "$woken" -le 3 ] || fail "woken $woken times in 3 s while a writer held the horizon back (a poll storm)"
[ "$(count)" = "$n" ] || fail "a change passed an open writer that held it back"
say w "COMMIT;"
synced w
n=$((n + 2))
ms=$(wait_count "$n" 5000)
[ "$ms" -le 1000 ] || fail "the changes held back arrived $ms ms after the writer committed (interval 30 s)"
echo "bridge_wakeup_notify_armed: held back by a writer: $woken wake-ups in 3 s, then both in $ms ms: ok"
stop_bridge b2

# ---- 4. two instances sharing the table ------------------------------------------------------------
start_bridge b3
start_bridge b4
listeners_waiting 1 # one holds the lock, the other waits for it
worst=0
for i in $(seq 300 311); do
    sleep 0.$((RANDOM % 5 + 2))
    commit "$i"
    n=$((n + 1))
    ms=$(wait_count "$n" 5000)
    [ "$ms" -le 1000 ] || fail "two instances: row $i arrived after $ms ms (interval 30 s)"
    [ "$ms" -gt "$worst" ] && worst=$ms
done
settled "$conn" kv 40 || fail "changes still pending or leased: $status"
sleep 1
[ "$(count)" = "$n" ] || fail "queue holds $(count) messages, wanted $n (each change exactly once)"
echo "bridge_wakeup_notify_armed: two instances, 12 commits each within $worst ms, $n messages for $n changes, nothing leased: ok"
stop_bridge b3
stop_bridge b4
pids=()
