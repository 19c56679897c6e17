#!/usr/bin/env bash
# Wake-ups on PostgreSQL, with running `sqlq bridge` daemons at a polling interval
# of 3 s, so a change that arrives well within it was brought by a notification:
#  1. woken: single-row commits arrive within 600 ms (3 samples; a 3 s poll alone would make
#     that in 20% of the cases each);
#  2. notifications lost: the LISTEN connection is killed with pg_terminate_backend, again and
#     again for 4 s (reconnects back off, logged): commits made meanwhile still
#     arrive within one polling interval (the poll is the truth); the listener comes back and
#     wakes the bridge again;
#  3. the bridge restarted (kill -9 while idle): changes committed while it was away arrive, and
#     the new process is woken;
#  4. two instances (same bridge name) woken by the same commits: 300 changes in single-row and
#     multi-row transactions, each published exactly once (a double lease would publish twice),
#     both instances listening, and a single commit still arrives within 600 ms.
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
db="wk_$$"
q="wk-$$-$RANDOM"
work=$(mktemp -d)
pids=()
killer=""
cleanup() {
    [ -n "$killer" ] && kill "$killer" 2>/dev/null || true
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bridge_wakeup_notify: $*" >&2
    for f in "$work"/bridge*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}
. "$(dirname "$0")/../support/queue_count.sh"
. "$(dirname "$0")/../support/wait_log.sh"
# start_bridge NAME: a bridge at a 3 s polling interval, logging to $work/NAME.log.
start_bridge() {
    SQLQ_LOG_LEVEL=info "$SQLQ_BIN" bridge --db "${pgodbc}Database=$db;" --table kv --queue "$q" \
        --polling-interval-ms 3000 >/dev/null 2>>"$work/$1.log" &
    pids+=($!)
    eval "pid_$1=$!"
    wait_log "$work/$1.log" "event=listen_started" || fail "$1 did not start listening"
}
listeners() {
    psql_ -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND application_name = 'sqlq-listen'"
}
# woken ID WHAT: commit one row (after a pause that leaves the bridge idle); it must arrive
# within 600 ms.
n=0
woken() {
    sleep 0.$((RANDOM % 9 + 1))
    psql_ -d "$db" -c "INSERT INTO kv VALUES ($1, 'x')"
    n=$((n + 1))
    local ms
    ms=$(wait_count "$n" 3500)
    [ "$ms" -le 600 ] || fail "row $1 arrived after $ms ms: not woken (polling interval 3000 ms)"
    echo "bridge_wakeup_notify: $2, row $1 arrived in $ms ms: ok"
}

psql_ -d postgres -c "CREATE DATABASE $db"
# The test server allows prepared transactions (max_prepared_transactions 20), where the
# trigger stays silent by default (PREPARE refuses a transaction that ran NOTIFY): say that
# no writer here prepares.
psql_ -d postgres -c "ALTER DATABASE $db SET sqlq.notify = on"
psql_ -d "$db" -c "CREATE TABLE kv (id int PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "${pgodbc}Database=$db;" --table kv >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null
start_bridge bridge1
wait_count 0 100 >/dev/null

# ---- 1. woken ---------------------------------------------------------------------------------
for i in 1 2 3; do woken "$i" woken; done

# ---- 2. notifications lost: the LISTEN connection killed again and again -----------------------
(
    end=$(($(now_ms) + 4000))
    while [ "$(now_ms)" -lt "$end" ]; do
        psql_ -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db' \
AND application_name = 'sqlq-listen'" >/dev/null 2>&1 || true
        sleep 0.01
    done
) &
killer=$!
sleep 0.5
for i in 10 11; do
    psql_ -d "$db" -c "INSERT INTO kv VALUES ($i, 'while the listener is down')"
    n=$((n + 1))
    ms=$(wait_count "$n" 3600)
    echo "bridge_wakeup_notify: listener killed, row $i arrived in $ms ms (polling interval 3000 ms): ok"
    sleep 1
done
wait "$killer" || true
killer=""
grep -q "event=listen_lost" "$work/bridge1.log" || fail "no listen_lost logged"
grep -q "event=listen_lost.*retry_ms=[1-9]" "$work/bridge1.log" || fail "no back-off logged"
for _ in $(seq 1 100); do [ "$(listeners)" = 1 ] && break; sleep 0.1; done
[ "$(listeners)" = 1 ] || fail "the listener did not come back"
woken 12 "listener back"

# ---- 3. the bridge restarted ------------------------------------------------------------------
kill -9 "$pid_bridge1"
wait "$pid_bridge1" 2>/dev/null || true
psql_ -d "$db" -c "INSERT INTO kv VALUES (20, 'while away'), (21, 'while away')"
n=$((n + 2))
start_bridge bridge2
ms=$(wait_count "$n" 3600)
echo "bridge_wakeup_notify: restarted, 2 changes made while away arrived in $ms ms"
woken 22 restarted

# ---- 4. two instances woken by the same commits -------------------------------------------------
start_bridge bridge3
[ "$(listeners)" = 2 ] || fail "expected 2 listeners, found $(listeners)"
woken 30 "two instances"
for i in $(seq 100 249); do echo "INSERT INTO kv VALUES ($i, 'single');"; done | psql_ -d "$db" >/dev/null
psql_ -d "$db" -c "INSERT INTO kv SELECT i, 'multi' FROM generate_series(250, 399) i"
n=$((n + 300))
ms=$(wait_count "$n" 10000)
sleep 3.5 # one more polling interval: a change published twice would show now
[ "$(count)" = "$n" ] || fail "queue holds $(count) messages, wanted $n (each change exactly once)"
echo "bridge_wakeup_notify: two instances, 300 changes arrived in $ms ms, $n messages for $n changes: ok"
for b in bridge2 bridge3; do
    eval "kill -TERM \$pid_$b"
    eval "wait \$pid_$b" || fail "$b exited $?"
done
pids=()
