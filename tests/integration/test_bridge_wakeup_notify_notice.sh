#!/usr/bin/env bash
# Wake-ups seen and explained as a user sees them, on the private PostgreSQL, which allows
# prepared transactions (max_prepared_transactions 20):
#  1. sqlq.notify unset: the trigger does not NOTIFY, so the listener warns at start
#     (event=wakeup_off naming max_prepared_transactions and ALTER DATABASE ... SET sqlq.notify);
#     that cure applied while it runs, the next commit notifies and the bridge says so
#     (event=wakeup_on: the warning is stale; found by a user);
#  2. sqlq.notify = on, the bridge connected through DSN= (an ODBCINI file names the server,
#     port, database and user; the connection string only the DSN): the listener reaches that
#     server (no warning), a commit arrives within 600 ms at a 3 s interval, and
#     sqlq_wakeups_total{table="kv"} on /metrics counts the wake-up;
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
here=$(cd "$(dirname "$0")/../support" && pwd)
db="wn_$$"
q="wn-$$-$RANDOM"
work=$(mktemp -d)
pid=""
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "bridge_wakeup_notify_notice: $*" >&2
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "== $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}
. "$here/queue_count.sh"
. "$here/wait_log.sh"
# start LOG DB [ARGS]: a bridge at a 3 s interval; waits for the route to start.
start() {
    local log=$1 conn=$2
    shift 2
    SQLQ_LOG_LEVEL=info "$SQLQ_BIN" bridge --db "$conn" --table kv --queue "$q" \
        --polling-interval-ms 3000 "$@" >/dev/null 2>>"$work/$log.log" &
    pid=$!
    wait_log "$work/$log.log" "event=route_started" || fail "$log: the route did not start"
}
stop() {
    kill -TERM "$pid"
    wait "$pid" || fail "bridge exited $?"
    pid=""
}

psql_ -d postgres -c "CREATE DATABASE $db"
psql_ -d "$db" -c "CREATE TABLE kv (id int PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "${pgodbc}Database=$db;" --table kv >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null

# ---- 1. sqlq.notify unset on a server with prepared transactions: a warning ----------------------
start notify_unset "${pgodbc}Database=$db;"
wait_log "$work/notify_unset.log" "event=wakeup_off" 50 || true
grep -q "event=wakeup_off.*max_prepared_transactions=20.*SET sqlq.notify = on" \
    "$work/notify_unset.log" || fail "no wakeup_off warning with sqlq.notify unset"
psql_ -d postgres -c "ALTER DATABASE $db SET sqlq.notify = on"
psql_ -d "$db" -c "INSERT INTO kv VALUES (100, 'cured')"
wait_log "$work/notify_unset.log" "event=wakeup_on" 50 || fail "no wakeup_on after sqlq.notify = on"
stop
psql_ -d postgres -c "ALTER DATABASE $db RESET sqlq.notify"
"$SQLQ_BIN" queue clear "$q" >/dev/null # part 2 times its own message
echo "bridge_wakeup_notify_notice: sqlq.notify unset, max_prepared_transactions 20: warned, cure seen: ok"

# ---- 2. sqlq.notify = on, connected through a DSN: woken, no warning, counted -------------------
psql_ -d postgres -c "ALTER DATABASE $db SET sqlq.notify = on"
driver=$(sed -n 's/^Driver=\([^;]*\);.*/\1/p' <<<"$pgodbc" | tr -d '{}')
cat >"$work/odbc.ini" <<INI
[sqlq_wn]
Driver = $driver
Servername = 127.0.0.1
Port = $port
Database = $db
Username = sqlq
BoolsAsChar = 0
INI
export ODBCINI="$work/odbc.ini"
hport=$("$here/free_port.sh")
start dsn "DSN=sqlq_wn;PWD=;" --listen "127.0.0.1:$hport"
wait_log "$work/dsn.log" "event=listen_started" 50 || fail "DSN: the listener did not start"
sleep 0.5
! grep -q "wakeup_off" "$work/dsn.log" || fail "DSN, sqlq.notify on: wakeup_off logged"
wait_count 0 100 >/dev/null
sleep 0.5
psql_ -d "$db" -c "INSERT INTO kv VALUES (1, 'x')"
ms=$(wait_count 1 3500)
[ "$ms" -le 600 ] || fail "DSN: row arrived after $ms ms: not woken (interval 3000 ms)"
woke=$(curl -s "http://127.0.0.1:$hport/metrics" | sed -n 's/^sqlq_wakeups_total{table="kv"} //p')
[ "${woke:-0}" -ge 1 ] || fail "sqlq_wakeups_total{table=\"kv\"} is '${woke}', wanted >= 1"
stop
echo "bridge_wakeup_notify_notice: DSN=, sqlq.notify on: woken in $ms ms, sqlq_wakeups_total $woke: ok"

echo "bridge_wakeup_notify_notice: ok"
