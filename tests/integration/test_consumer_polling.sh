#!/usr/bin/env bash
# Polling an empty queue in real time (the exact sequence is checked with an injected clock in
# unit.consumer): the delay between Get Messages requests grows as WebJobs' randomized
# exponential back-off (about 200, 300, 500, 900 ms ... capped at --max-polling-interval-ms),
# the requests really are that far apart, and a message resets it: the next poll follows at
# once and the back-off starts over at about 200 ms.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
q="cpoll-$$"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_polling: $*" >&2; cat "$work/polls" >&2 || true; exit 1; }

"$SQLQ_BIN" queue create "$q" >/dev/null
"$SQLQ_BIN" consume "$q" --max-polling-interval-ms 1500 --log-level debug --exec 'cat >/dev/null' \
    2> "$work/log" &
pid=$!
sleep 6
"$SQLQ_BIN" queue put "$q" '{"wake":1}' >/dev/null
sleep 2.5
kill -TERM "$pid"
wait "$pid" || fail "consumer exited $?"
pid=

# One line per poll: milliseconds of the day, messages received, delay announced.
grep 'event=consumer.poll ' "$work/log" | sed -E \
    's/^ts=[0-9-]+T([0-9]+):([0-9]+):([0-9]+)\.([0-9]+)Z.* received=([0-9]+) .* next_delay_ms=([0-9]+).*/\1 \2 \3 \4 \5 \6/' |
    awk '{ printf "%d %d %d\n", (($1 * 60 + $2) * 60 + $3) * 1000 + $4, $5, $6 }' > "$work/polls"
n=$(wc -l < "$work/polls")
[ "$n" -ge 8 ] || fail "only $n polls"

awk -v max=1500 '
    function bad(msg) { print "poll " NR ": " msg > "/dev/stderr"; failed = 1 }
    NR > 1 {
        gap = $1 - prev_t
        # the request follows the announced delay (plus the request itself)
        if (gap < prev_d - 15 || gap > prev_d + 250) bad("gap " gap " ms after announced " prev_d)
    }
    {
        if ($3 > max) bad("delay " $3 " over the maximum")
        if ($2 > 0) { woke = NR; if ($3 != 0) bad("delay " $3 " after a message") }
        else if (!woke) {
            empty++
            # step n: 100 + U(0.8,1.2) * 100 * 2^(n-1), capped
            step = 100; for (i = 1; i < empty; i++) step *= 2
            lo = 100 + 0.8 * step; hi = 100 + 1.2 * step
            if (lo > max) lo = max; if (hi > max) hi = max
            if ($3 < lo - 1 || $3 > hi + 1) bad("empty poll " empty ": delay " $3 " not in " lo ".." hi)
        } else if (NR == woke + 1 && ($3 < 180 || $3 > 220)) bad("after the message: " $3 " (want ~200)")
        prev_t = $1; prev_d = $3
    }
    END {
        if (!woke) bad("the message was never received")
        if (empty < 6) bad("only " empty " empty polls before the message")
        exit failed
    }' "$work/polls" || fail "polling intervals wrong"
echo "consumer_polling: $n polls, back-off grew to the cap and reset on a message: ok"
