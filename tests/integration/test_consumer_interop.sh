#!/usr/bin/env bash
# `sqlq consume` with the official SDK on the other side: a message the SDK puts the way Azure
# Functions producers do (base64 of JSON) reaches the handler as the same JSON bytes; a message
# sqlq poisons is read back by the SDK from {queue}-poison with the same body.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
peer="$SQLQ_SOURCE_DIR/tests/support/consumer_interop.js"
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
export SQLQ_QUEUE_CONNECTION="$conn"
work=$(mktemp -d)
q="cinterop-$$"
cleanup() {
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_interop: $*" >&2; exit 1; }

printf '%s' '{"orderId":7,"customer":"Žofie","items":[{"sku":"A-1","qty":2}],"note":"<&> \"q\""}' > "$work/order.json"
node "$peer" send "$conn" "$q" "$work/order.json"
timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
    --exec "cat > '$work/got.json'" 2> "$work/log" || fail "consume exited $?: $(tail -3 "$work/log")"
cmp "$work/order.json" "$work/got.json" || fail "handler got $(cat "$work/got.json")"
echo "consumer_interop: SDK-produced message consumed: ok"

printf '%s' '{"orderId":8,"bad":true,"text":"ünïcödé"}' > "$work/bad.json"
node "$peer" send "$conn" "$q" "$work/bad.json"
timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
    --max-dequeue-count 2 --exec 'exit 1' 2> "$work/log" || fail "consume exited $?"
node "$peer" receive "$conn" "$q-poison" "$work/bad.json"
echo "consumer_interop: poison written by sqlq read by the SDK: ok"
