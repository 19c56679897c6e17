#!/usr/bin/env bash
# `sqlq consume --exit-when-empty` reports "empty" only when the queue service answered a poll
# with no message. A wrong key (403), a refused connection and a missing queue are not empty:
# exit 1 naming the cause, the message still queued. A queue name that leaves no room for its
# poison queue (57-63 characters) is refused at start with exit 2.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
good="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
export SQLQ_QUEUE_CONNECTION="$good"
work=$(mktemp -d)
q="cdrain-$$"
cleanup() {
    SQLQ_QUEUE_CONNECTION="$good" "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_drain: $*" >&2; cat "$work/err" >&2 2>/dev/null || true; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
drain() { # QUEUE CONNECTION: sets code
    code=0
    SQLQ_QUEUE_CONNECTION="$2" timeout 60 "$SQLQ_BIN" consume "$1" --exit-when-empty \
        --max-polling-interval-ms 200 --exec "cat >> '$work/handled'" 2> "$work/err" || code=$?
}

long=$(printf 'q%.0s' $(seq 60))
drain "$long" "$good"
[ "$code" = 2 ] || fail "a 60-character queue name: exit $code, expected 2"
grep -q -- "-poison" "$work/err" || fail "the refusal does not say why"
echo "consumer_drain: a queue name without room for -poison is refused (exit 2): ok"

drain "$q" "$good"
[ "$code" = 1 ] || fail "missing queue: exit $code, expected 1"
grep -q 'QueueNotFound\|does not exist' "$work/err" || fail "missing queue: the cause is not named"
grep -q 'event=consumer.empty' "$work/err" && fail "missing queue reported as empty"
echo "consumer_drain: a missing queue is not empty (exit 1): ok"

"$SQLQ_BIN" queue create "$q" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"n":1}' >/dev/null
bad_key='c2VjcmV0LWtleS10aGF0LW11c3Qtbm90LWxlYWstMTIzNDU2Nzg5MA=='
drain "$q" "$(echo "$good" | sed "s|AccountKey=[^;]*|AccountKey=$bad_key|")"
[ "$code" = 1 ] || fail "wrong key: exit $code, expected 1"
grep -q '403' "$work/err" || fail "wrong key: the cause (403) is not named"
grep -q 'event=consumer.empty' "$work/err" && fail "wrong key reported as empty"
[ "$(count "$q")" = 1 ] || fail "wrong key: the message is gone"
echo "consumer_drain: a wrong key (403) is not empty (exit 1): ok"

port=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
drain "$q" "$(echo "$good" | sed "s|QueueEndpoint=http://127.0.0.1:[0-9]*/|QueueEndpoint=http://127.0.0.1:$port/|")"
[ "$code" = 1 ] || fail "connection refused: exit $code, expected 1"
grep -qi 'connect' "$work/err" || fail "connection refused: the cause is not named"
grep -q 'event=consumer.empty' "$work/err" && fail "connection refused reported as empty"
[ "$(count "$q")" = 1 ] || fail "connection refused: the message is gone"
echo "consumer_drain: a refused connection is not empty (exit 1): ok"

drain "$q" "$good"
[ "$code" = 0 ] || fail "a real drain: exit $code"
[ "$(cat "$work/handled")" = '{"n":1}' ] || fail "a real drain: the handler did not get the message"
[ "$(count "$q")" = 0 ] || fail "a real drain left a message"
grep -q 'event=consumer.empty' "$work/err" || fail "a real drain did not report empty"
echo "consumer_drain: an answered empty poll ends the drain (exit 0): ok"
