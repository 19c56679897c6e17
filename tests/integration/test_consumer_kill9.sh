#!/usr/bin/env bash
# A consumer killed with SIGKILL in the middle of a message: nothing is acknowledged, the message
# becomes visible again when its lease (3 s here) runs out, and a new consumer processes it
# (dequeue count 2).
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
q="ckill-$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    [ -s "$work/handler.pid" ] && kill -9 "$(cat "$work/handler.pid")" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_kill9: $*" >&2; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }

"$SQLQ_BIN" queue create "$q" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"job":1}' >/dev/null
"$SQLQ_BIN" consume "$q" --lease-s 3 --max-polling-interval-ms 200 \
    --exec "echo \$SQLQ_DEQUEUE_COUNT >> '$work/first'; echo \$\$ > '$work/handler.pid'; exec sleep 60" \
    2> "$work/a.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/handler.pid" ] && break; sleep 0.1; done
[ -s "$work/handler.pid" ] || fail "the first consumer never started the handler"
kill -9 "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()
kill -9 "$(cat "$work/handler.pid")" 2>/dev/null || true # PDEATHSIG ended it with the consumer already
t0=$(date +%s%N)
timeout 30 "$SQLQ_BIN" consume "$q" --max-messages 1 --max-polling-interval-ms 200 \
    --exec "cat > '$work/second.body'; echo \$SQLQ_DEQUEUE_COUNT >> '$work/second'" 2> "$work/b.log" \
    || fail "second consumer exited $?"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$(cat "$work/first")" = 1 ] || fail "first attempt count $(cat "$work/first")"
[ "$(cat "$work/second")" = 2 ] || fail "second attempt count $(cat "$work/second")"
[ "$(cat "$work/second.body")" = '{"job":1}' ] || fail "body $(cat "$work/second.body")"
[ "$ms" -ge 1000 ] || fail "message came back after only $ms ms (lease 3 s)"
[ "$(count "$q")" = 0 ] || fail "message not deleted by the second consumer"
echo "consumer_kill9: message back after $ms ms, processed by a new consumer: ok"
