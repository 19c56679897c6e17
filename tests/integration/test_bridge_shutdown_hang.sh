#!/usr/bin/env bash
# `sqlq bridge` stopped by SIGTERM while the queue service hangs (tests/support/
# fake_queue_service.py: every request accepted, none answered): it leaves after
# --shutdown-timeout-s and exits 1, saying that the stop was not clean and what happens to the
# changes it left leased (they come back after their lease: duplicates, nothing lost); the next
# bridge publishes them. A SIGTERM whose batch settles in time exits 0
# (test_bridge_scenarios: sigterm_finishes_and_exits_0). docs/bridge.md, "When things fail".
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}"
work=$(mktemp -d)
server=
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "bridge_shutdown_hang: $*" >&2; tail -5 "$work/log" >&2 2>/dev/null || true; exit 1; }
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

start_server() { # MODE: starts the fake service, sets server and SQLQ_QUEUE_CONNECTION
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true
    rm -f "$work/port" "$work/requests"
    python3 "$SQLQ_SOURCE_DIR/tests/support/fake_queue_service.py" "$1" "$work" &
    server=$!
    for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
    [ -s "$work/port" ] || fail "the fake service did not start"
    export SQLQ_QUEUE_CONNECTION="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;QueueEndpoint=http://127.0.0.1:$(cat "$work/port")/devstoreaccount1"
}
requests() { grep -c "^$1 " "$work/requests" || true; }

db="Driver={SQLite3};Database=$work/shop.db;Timeout=5000;"
sqlite3 "$work/shop.db" "CREATE TABLE orders (id integer PRIMARY KEY, v text)"
"$SQLQ_BIN" setup --db "$db" --table orders >/dev/null
sqlite3 "$work/shop.db" "INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c')"

start_server hang
"$SQLQ_BIN" bridge --db "$db" --table orders --queue orders --shutdown-timeout-s 2 \
    --lease-s 3 --polling-interval-ms 100 2> "$work/log" &
pid=$!
for _ in $(seq 200); do [ "$(requests POST)" -ge 1 ] && break; sleep 0.05; done
[ "$(requests POST)" -ge 1 ] || fail "no put reached the service"
t0=$(date +%s%N)
kill -TERM "$pid"
code=0
wait "$pid" || code=$?
pid=
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$code" = 1 ] || fail "exit $code after SIGTERM with puts hanging, expected 1 (not a clean stop)"
[ "$ms" -ge 1500 ] || fail "left after $ms ms, before --shutdown-timeout-s 2"
[ "$ms" -lt 8000 ] || fail "took $ms ms to leave (--shutdown-timeout-s 2)"
grep -q 'event=shutdown_timeout' "$work/log" || fail "no shutdown_timeout log line"
grep -q 'sqlq bridge: routes did not stop within 2 s: changes still on the wire stay leased' "$work/log" ||
    fail "the exit does not say what it left: $(tail -2 "$work/log")"
grep -q 'exit 1' "$work/log" || fail "the exit does not name its code"
echo "bridge_shutdown_hang: SIGTERM with puts hanging: exit 1 after $ms ms, saying what it left: ok"

# Nothing lost: the next bridge publishes what the first left leased, once its lease expired.
start_server valid
sleep 3
timeout 60 "$SQLQ_BIN" bridge --db "$db" --table orders --queue orders --once \
    --polling-interval-ms 100 2> "$work/log" || fail "the next bridge exited $?"
[ "$(requests POST)" -ge 3 ] || fail "the next bridge published $(requests POST) messages, expected 3"
"$SQLQ_BIN" status --db "$db" --table orders --json | grep -q '"pending": *0[,}]' ||
    fail "changes still pending: $("$SQLQ_BIN" status --db "$db" --table orders)"
echo "bridge_shutdown_hang: the changes left leased were published by the next bridge: ok"
