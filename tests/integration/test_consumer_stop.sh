#!/usr/bin/env bash
# Stopping `sqlq consume` and reading its metrics: counters on /metrics match what happened;
# SIGTERM while a handler runs lets it finish (the message is deleted) and exits 0; with a
# handler slower than --shutdown-timeout-s the command is cancelled (its process group
# killed), the message stays in the queue, and the consumer still exits 0 promptly. A message
# cancelled by a shutdown again and again is never poisoned for it: six stops in a row with the
# default --max-dequeue-count 5, and the next run handles it as its first attempt.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
# The record of dequeues given back lives under the default state directory, here in $work.
export XDG_STATE_HOME="$work/xdg"
unset SQLQ_STATE_DIR
q="cstop-$$"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_stop: $*" >&2; tail -5 "$work/log" >&2 || true; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
wait_for() { for _ in $(seq 150); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "timed out waiting for $1"; }
stop_and_time() { # SIGTERM, wait; sets code (exit status) and ms (time taken)
    local t0
    t0=$(date +%s%N)
    kill -TERM "$pid"
    code=0
    wait "$pid" || code=$?
    pid=
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

"$SQLQ_BIN" queue create "$q" >/dev/null
port=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
for i in 1 2 3; do "$SQLQ_BIN" queue put "$q" "{\"n\":$i}" >/dev/null; done
"$SQLQ_BIN" consume "$q" --max-polling-interval-ms 300 --listen "127.0.0.1:$port" \
    --exec 'cat >/dev/null' 2> "$work/log" &
pid=$!
for _ in $(seq 100); do [ "$(count "$q")" = 0 ] && break; sleep 0.1; done
metrics=$(curl -sf "http://127.0.0.1:$port/metrics") || fail "no /metrics"
echo "$metrics" | grep -q "^sqlq_messages_consumed_total{queue=\"$q\"} 3$" \
    || fail "consumed counter: $(echo "$metrics" | grep consumed)"
echo "$metrics" | grep -q "^sqlq_poll_backoff_ms{queue=\"$q\"} [1-9]" || fail "no back-off gauge"
echo "$metrics" | grep -q "^sqlq_handler_duration_seconds_count{queue=\"$q\"} 3$" || fail "no handler histogram"
stop_and_time
[ "$code" = 0 ] || fail "exit $code after SIGTERM while idle"
echo "consumer_stop: metrics: ok"

"$SQLQ_BIN" queue put "$q" '{"slow":1}' >/dev/null
"$SQLQ_BIN" consume "$q" --max-polling-interval-ms 300 \
    --exec "echo started > '$work/started'; sleep 2; echo finished > '$work/finished'" 2> "$work/log" &
pid=$!
wait_for "$work/started"
stop_and_time
[ "$code" = 0 ] || fail "exit $code after SIGTERM during a handler"
[ -s "$work/finished" ] || fail "the running handler did not finish"
[ "$ms" -ge 1000 ] || fail "exited after $ms ms, before the handler could finish"
[ "$(count "$q")" = 0 ] || fail "the finished message was not deleted"
echo "consumer_stop: SIGTERM let the handler finish ($ms ms): ok"

rm -f "$work/started"
"$SQLQ_BIN" queue put "$q" '{"stuck":1}' >/dev/null
"$SQLQ_BIN" consume "$q" --max-polling-interval-ms 300 --shutdown-timeout-s 1 \
    --exec "echo \$\$ > '$work/started'; exec sleep 60" 2> "$work/log" &
pid=$!
wait_for "$work/started"
stop_and_time
[ "$code" = 0 ] || fail "exit $code after the shutdown timeout"
[ "$ms" -lt 6000 ] || fail "took $ms ms to stop with a 1 s shutdown timeout"
! kill -0 "$(cat "$work/started")" 2>/dev/null || fail "the handler process survived"
grep -q 'event=consumer.shutdown_timeout' "$work/log" || fail "no shutdown_timeout log line"
[ "$(count "$q")" = 1 ] || fail "the unfinished message is gone"
# The log line tells the truth: the cancelled message is visible again at once (a peek sees it).
grep -q 'event=consumer.shutdown_timeout.*released at once' "$work/log" || fail "shutdown_timeout line does not say the message is released at once"
"$SQLQ_BIN" queue peek "$q" | grep -q 'stuck' || fail "the cancelled message is not visible at once"
echo "consumer_stop: shutdown timeout cancelled the handler ($ms ms), message kept: ok"

# Six shutdowns cancel the same message (a handler slower than --shutdown-timeout-s): each one
# gives its dequeue back, so the seventh delivery (DequeueCount 7) is still attempt 1.
"$SQLQ_BIN" queue clear "$q" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"again":1}' >/dev/null
for run in 1 2 3 4 5 6; do
    rm -f "$work/started"
    "$SQLQ_BIN" consume "$q" --max-polling-interval-ms 300 --shutdown-timeout-s 1 \
        --exec "echo \$\$ > '$work/started'; exec sleep 100" 2> "$work/log" &
    pid=$!
    wait_for "$work/started"
    stop_and_time
    [ "$code" = 0 ] || fail "run $run: exit $code"
    grep -q 'event=consumer.poisoned' "$work/log" && fail "run $run: poisoned: $(grep consumer.poisoned "$work/log")"
    grep -q "event=consumer.given_back .*dequeue_count=$run .*does not count toward poison" "$work/log" \
        || fail "run $run: the cancelled dequeue was not given back"
done
"$SQLQ_BIN" queue stats "$q-poison" 2>/dev/null | grep -q '"approximate_count":[1-9]' && fail "a message was poisoned"
timeout 60 "$SQLQ_BIN" consume "$q" --max-polling-interval-ms 300 --exit-when-empty --log-level debug \
    --exec "cat > '$work/handled'" 2> "$work/log" || fail "final drain exit $?"
grep -q '"again":1' "$work/handled" || fail "the message was not handled"
grep -q 'event=consumer.done .*dequeue_count=7 attempt=1' "$work/log" \
    || fail "not handled as attempt 1: $(grep -E 'consumer.(done|poisoned)' "$work/log")"
ls "$XDG_STATE_HOME"/sqlq/abandoned-"$q"-* >/dev/null || fail "no record under the default state directory"
echo "consumer_stop: six shutdowns cancelled one message: never poisoned, then handled as attempt 1: ok"
