#!/usr/bin/env bash
# The daemon's health/metrics endpoint end to end, with the curl CLI: `sqlq consume` with
# --listen 127.0.0.1:0 (a free port, read back from its log) against Azurite serves
# /healthz, /readyz and /metrics; the consumer's counters count the messages it handled and
# poisoned; SIGTERM stops the process cleanly (exit 0) and closes the port.
set -euo pipefail

bin=${SQLQ_BIN:?}
conn=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
export SQLQ_QUEUE_CONNECTION=$conn
tmp=$(mktemp -d)
q="metrics-$$-$RANDOM"
pid=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    "$bin" queue delete "$q" >/dev/null 2>&1 || true
    "$bin" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -f "$tmp/consume.log" ] && tail -20 "$tmp/consume.log" >&2
    exit 1
}

"$bin" queue create "$q" >/dev/null
for i in 1 2 3 4 5; do "$bin" queue put "$q" "ok $i" >/dev/null; done
"$bin" queue put "$q" "fail" >/dev/null

# Handler: succeed unless the body is "fail"; one attempt before poison keeps the test short.
touch "$tmp/consume.log"
# shellcheck disable=SC2016 # the handler's $(cat) is for the handler's shell
"$bin" consume "$q" --exec 'test "$(cat)" != fail' --max-dequeue-count 1 \
    --max-polling-interval-ms 200 --listen 127.0.0.1:0 --log-format text \
    >"$tmp/consume.out" 2>"$tmp/consume.log" &
pid=$!

port=""
for _ in $(seq 100); do
    port=$(sed -n 's/.*event=http_server_started .*port=\([0-9]*\).*/\1/p' "$tmp/consume.log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "consume exited early"
    sleep 0.1
done
[ -n "$port" ] || fail "no http_server_started line with the port in the log"
base="http://127.0.0.1:$port"

[ "$(curl -s -o "$tmp/h" -w '%{http_code}' "$base/healthz")" = 200 ] || fail "/healthz not 200"
[ "$(cat "$tmp/h")" = ok ] || fail "/healthz body '$(cat "$tmp/h")'"
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")
[ "$code" = 200 ] || [ "$code" = 503 ] || fail "/readyz answered $code"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/nope")" = 404 ] || fail "unknown path not 404"

# Wait until the consumer has handled all six messages.
label="{queue=\"$q\"}"
for _ in $(seq 100); do
    curl -s -D "$tmp/headers" -o "$tmp/metrics" "$base/metrics" || fail "GET /metrics failed"
    grep -qx "sqlq_messages_consumed_total$label 5" "$tmp/metrics" &&
        grep -qx "sqlq_messages_poisoned_total$label 1" "$tmp/metrics" && break
    sleep 0.1
done
grep -qx "sqlq_messages_consumed_total$label 5" "$tmp/metrics" || fail "consumed is not 5: $(grep consumed "$tmp/metrics")"
grep -qx "sqlq_messages_poisoned_total$label 1" "$tmp/metrics" || fail "poisoned is not 1: $(grep poisoned "$tmp/metrics")"
grep -qx "sqlq_messages_failed_total$label 1" "$tmp/metrics" || fail "failed is not 1: $(grep failed "$tmp/metrics")"
grep -qix 'content-type: text/plain; version=0.0.4; charset=utf-8.' "$tmp/headers" ||
    fail "Content-Type: $(grep -i content-type "$tmp/headers")"
grep -qx "# TYPE sqlq_messages_consumed_total counter" "$tmp/metrics" || fail "no TYPE line"
grep -qx "sqlq_handler_duration_seconds_count$label 6" "$tmp/metrics" || fail "handler histogram count is not 6"
grep -q "^sqlq_poll_backoff_ms$label " "$tmp/metrics" || fail "no back-off gauge"
echo "ok: /healthz, /readyz ($code), /metrics on port $port; consumed 5, failed 1, poisoned 1"

# SIGTERM: exit 0 promptly; the endpoint goes away with the process.
start=$(date +%s%N)
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
pid=""
[ "$rc" = 0 ] || fail "consume exited $rc after SIGTERM"
[ "$ms" -lt 10000 ] || fail "consume took $ms ms to stop"
curl -s -o /dev/null "$base/healthz" && fail "the endpoint still answers after exit"
echo "ok: SIGTERM -> exit 0 in $ms ms, port closed"
