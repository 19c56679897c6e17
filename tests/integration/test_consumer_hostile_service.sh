#!/usr/bin/env bash
# `sqlq consume` against a fake queue service on 127.0.0.1 (tests/support/fake_queue_service.py):
# - replies the real service never sends are a service error, nothing of them is used: a
#   MessageId with CR LF (header injection), DequeueCount 99999999999999999999 (would poison on
#   receipt), more messages than asked for (were silently dropped); the well-formed control
#   reply is handled and deleted;
# - shutdown is bounded while a request hangs: a poll that never gets an answer, and a delete
#   that never gets one, do not hold SIGTERM beyond --shutdown-timeout-s (+ the cancel grace).
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
fail() { echo "consumer_hostile_service: $*" >&2; tail -5 "$work/log" >&2 2>/dev/null || true; exit 1; }
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
drain() { # runs a drain of queue "orders"; sets code
    rm -f "$work/handled"
    code=0
    timeout 60 "$SQLQ_BIN" consume orders --exit-when-empty --max-polling-interval-ms 200 \
        --exec "cat > '$work/handled'" 2> "$work/log" || code=$?
}
requests() { grep -c "^$1 " "$work/requests" || true; }

start_server valid
drain
[ "$code" = 0 ] || fail "control: exit $code"
[ "$(cat "$work/handled")" = '{"n":1}' ] || fail "control: the handler did not get the body"
[ "$(requests DELETE)" = 1 ] || fail "control: no delete"
echo "consumer_hostile_service: a well-formed reply is handled and deleted: ok"

for mode in crlf-id huge-count overfill; do
    start_server "$mode"
    drain
    [ "$code" = 1 ] || fail "$mode: exit $code, expected 1 (a service error)"
    [ ! -e "$work/handled" ] || fail "$mode: the handler ran on a hostile reply"
    [ "$(requests DELETE)$(requests PUT)$(requests POST)" = 000 ] ||
        fail "$mode: acted on a hostile reply: $(grep -v '^GET' "$work/requests" | head -3)"
    grep -q 'event=consumer.bad_reply' "$work/log" || fail "$mode: no consumer.bad_reply log line"
    case $mode in
        crlf-id) grep -q 'MessageId' "$work/log" || fail "crlf-id: the cause is not named" ;;
        huge-count) grep -q 'DequeueCount is not a count' "$work/log" || fail "huge-count: the cause is not named" ;;
        overfill) grep -q 'returned 56 messages for a request of at most 16' "$work/log" ||
            fail "overfill: the cause is not named" ;;
    esac
    grep -q 'X-Injected' "$work/log" && fail "$mode: the injected text reached the log"
    echo "consumer_hostile_service: $mode is a service error, nothing used: ok"
done

stop_after() { # SECONDS_BEFORE_SIGTERM: sets code and ms (time from SIGTERM to exit)
    sleep "$1"
    local t0
    t0=$(date +%s%N)
    kill -TERM "$pid"
    code=0
    wait "$pid" || code=$?
    pid=
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

start_server hang
"$SQLQ_BIN" consume orders --shutdown-timeout-s 3 --exec 'cat >/dev/null' 2> "$work/log" &
pid=$!
for _ in $(seq 100); do [ "$(requests GET)" -ge 1 ] && break; sleep 0.05; done
[ "$(requests GET)" -ge 1 ] || fail "hang: no poll reached the service"
stop_after 0.5
[ "$code" = 0 ] || fail "hang: exit $code after SIGTERM"
[ "$ms" -lt 3000 ] || fail "hang: took $ms ms to stop with a poll hanging (--shutdown-timeout-s 3)"
echo "consumer_hostile_service: SIGTERM with a poll hanging: exit after $ms ms: ok"

start_server hang-delete
"$SQLQ_BIN" consume orders --shutdown-timeout-s 2 --exec 'cat >/dev/null' 2> "$work/log" &
pid=$!
for _ in $(seq 200); do [ "$(requests DELETE)" -ge 1 ] && break; sleep 0.05; done
[ "$(requests DELETE)" -ge 1 ] || fail "hang-delete: no delete reached the service"
stop_after 0.2
[ "$code" = 0 ] || fail "hang-delete: exit $code"
[ "$ms" -lt 8000 ] || fail "hang-delete: took $ms ms to stop with a delete hanging (2 s + 5 s grace)"
[ "$ms" -ge 1500 ] || fail "hang-delete: stopped after $ms ms, before the shutdown timeout"
grep -q 'event=consumer.shutdown_timeout' "$work/log" || fail "hang-delete: no shutdown_timeout line"
echo "consumer_hostile_service: SIGTERM with a delete hanging: exit $code after $ms ms: ok"
