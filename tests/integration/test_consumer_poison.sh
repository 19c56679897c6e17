#!/usr/bin/env bash
# `sqlq consume` against Azurite: a handler that always fails sees the message exactly five
# times (dequeue count 1..5), then the same MessageText sits in {queue}-poison and the main
# queue is empty. Text that is not base64 goes to poison at once, with a log line that says why
# and names --encoding plain. Poison copies never expire (TTL -1: ExpirationTime 9999-12-31).
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
q="cpoison-$$"
cleanup() {
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_poison: $*" >&2; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }

"$SQLQ_BIN" queue create "$q" >/dev/null
body='{"order":42,"note":"always fails é <&>"}'
"$SQLQ_BIN" queue put "$q" "$body" >/dev/null
stored=$("$SQLQ_BIN" queue peek "$q" --raw | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
[ -n "$stored" ] || fail "cannot read the stored text"

# Fails every time; records each attempt's dequeue count and body.
timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
    --exec "cat > '$work'/body.\$SQLQ_DEQUEUE_COUNT; echo \$SQLQ_DEQUEUE_COUNT >> '$work/attempts'; echo 'no luck' >&2; exit 7" \
    2> "$work/log" || fail "consume exited $?: $(tail -5 "$work/log")"

[ "$(cat "$work/attempts" | tr '\n' ' ')" = "1 2 3 4 5 " ] \
    || fail "attempts: $(cat "$work/attempts" | tr '\n' ' ') (want 1 2 3 4 5)"
[ "$(cat "$work/body.5")" = "$body" ] || fail "handler saw '$(cat "$work/body.5")'"
[ "$(count "$q")" = 0 ] || fail "main queue not empty"
[ "$(count "$q-poison")" = 1 ] || fail "poison queue has $(count "$q-poison") messages"
poisoned=$("$SQLQ_BIN" queue peek "$q-poison" --raw | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
[ "$poisoned" = "$stored" ] || fail "poison text '$poisoned' differs from '$stored'"
# The poison copy never expires (put with TTL -1: the service reports 9999-12-31), even though
# the original was put with the default 7 days.
"$SQLQ_BIN" poison list "$q" --json | grep -q '"expiration_time":"9999-12-31' \
    || fail "the poison copy expires: $("$SQLQ_BIN" poison list "$q" --json)"
grep -q "event=consumer.poisoned queue=$q poison_queue=$q-poison msg_id=.* dequeue_count=5 last_error=\"command exited with status 7; stderr: no luck\"" "$work/log" \
    || fail "no poisoning log line with queue, id, count and error: $(grep poisoned "$work/log")"
echo "consumer_poison: five attempts then poison: ok"

# A producer that sends plain text into a base64 queue: poison at once, clear reason.
"$SQLQ_BIN" queue clear "$q-poison" >/dev/null
"$SQLQ_BIN" queue put "$q" "plain text, not base64" --encoding plain >/dev/null
rm -f "$work/attempts"
timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
    --exec "echo ran >> '$work/attempts'" 2> "$work/log2" || fail "consume exited $?"
[ ! -e "$work/attempts" ] || fail "the handler ran on undecodable text"
[ "$(count "$q-poison")" = 1 ] || fail "undecodable message not in poison"
"$SQLQ_BIN" queue peek "$q-poison" --raw | grep -q '"text":"plain text, not base64"' \
    || fail "poison text changed"
"$SQLQ_BIN" queue peek "$q-poison" | grep -q '"expiration_time":"9999-12-31' \
    || fail "the poison copy of undecodable text expires"
grep -q 'event=consumer.poisoned.*dequeue_count=1 last_error="message text is not valid base64.*--encoding plain' "$work/log2" \
    || fail "no clear reason logged: $(grep poison "$work/log2")"
# The same text consumed with --encoding plain succeeds.
"$SQLQ_BIN" queue put "$q" "plain text, not base64" --encoding plain >/dev/null
timeout 60 "$SQLQ_BIN" consume "$q" --encoding plain --exit-when-empty --max-polling-interval-ms 300 \
    --exec "cat >> '$work/plain'" 2>/dev/null || fail "plain consume exited $?"
[ "$(cat "$work/plain")" = "plain text, not base64" ] || fail "plain body: $(cat "$work/plain")"
echo "consumer_poison: undecodable text: ok"
