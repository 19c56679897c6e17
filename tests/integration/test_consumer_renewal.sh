#!/usr/bin/env bash
# Visibility renewal against Azurite: with a 2 s lease and a handler that takes 5 s, the
# consumer keeps renewing (always with the newest pop receipt), so a second consumer polling the
# same queue never gets the message: it is processed exactly once and then deleted.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
q="crenew-$$"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_renewal: $*" >&2; tail -5 "$work"/*.log >&2 || true; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }

"$SQLQ_BIN" queue create "$q" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"slow":true}' >/dev/null
handler="echo \$SQLQ_MESSAGE_ID >> '$work/runs'; sleep 5; echo done >> '$work/done'"
start() {
    "$SQLQ_BIN" consume "$q" --lease-s 2 --max-polling-interval-ms 200 --log-level debug \
        --exec "$handler" 2> "$work/$1.log" &
    pids+=($!)
}
start a
for _ in $(seq 100); do [ -s "$work/runs" ] && break; sleep 0.1; done
[ -s "$work/runs" ] || fail "consumer a never ran the handler"
start b
sleep 6.5
kill -TERM "${pids[@]}"
for p in "${pids[@]}"; do wait "$p" || fail "a consumer exited with $?"; done
pids=()

[ "$(wc -l < "$work/runs")" = 1 ] || fail "handler ran $(wc -l < "$work/runs") times"
[ "$(wc -l < "$work/done")" = 1 ] || fail "handler finished $(wc -l < "$work/done") times"
renewals=$(cat "$work/a.log" "$work/b.log" | grep -c 'event=consumer.renewed' || true)
[ "$renewals" -ge 3 ] || fail "only $renewals renewals in 5 s with a 2 s lease"
polls_b=$(grep -c 'event=consumer.poll ' "$work/b.log" || true)
[ "$polls_b" -ge 5 ] || fail "consumer b polled only $polls_b times"
! grep -q 'event=consumer.ownership_lost\|event=consumer.renewal_failed' "$work/a.log" "$work/b.log" || fail "renewal trouble logged"
[ "$(count "$q")" = 0 ] || fail "message not deleted"
echo "consumer_renewal: $renewals renewals, b polled $polls_b times, processed once: ok"
