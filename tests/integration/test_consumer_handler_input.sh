#!/usr/bin/env bash
# What an --exec handler gets, with a real consumer on Azurite:
# - only stdin, stdout and stderr: none of sqlq's connections to the queue service (it lists
#   /proc/self/fd);
# - no secret in its environment: the account key in SQLQ_QUEUE_CONNECTION, AzureWebJobsStorage
#   and AZURE_CLIENT_SECRET are left out;
# - the whole body or no run at all: the consumer is killed with SIGKILL again and again while
#   handlers start; every handler run's input must equal a body that was sent, every body must
#   be handled in the end, and no handler may outlive the consumer that started it.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
key=$(echo "$SQLQ_QUEUE_CONNECTION" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
work=$(mktemp -d)
q="cinput-$$"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_handler_input: $*" >&2; tail -5 "$work/log" >&2 2>/dev/null || true; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
alive() { # PID: running (a zombie is not)
    local st
    st=$(sed -n 's/^[0-9]* ([^)]*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

"$SQLQ_BIN" queue create "$q" >/dev/null
for i in 1 2 3; do "$SQLQ_BIN" queue put "$q" "{\"n\":$i}" >/dev/null; done
AzureWebJobsStorage="$SQLQ_QUEUE_CONNECTION" AZURE_CLIENT_SECRET='client-s3cret-7Qx' \
    timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 200 \
    --exec "env > '$work/env.'\$SQLQ_MESSAGE_ID; exec ls /proc/self/fd > '$work/fds.'\$SQLQ_MESSAGE_ID" \
    2> "$work/log" || fail "consume exited $?"
n=0
for f in "$work"/fds.*; do
    n=$((n + 1))
    # 0-2 and, as ls is the handler itself here, 3: the directory it reads
    [ "$(tr '\n' ' ' < "$f")" = "0 1 2 3 " ] || fail "a handler had descriptors: $(tr '\n' ' ' < "$f")"
done
[ "$n" = 3 ] || fail "$n handler runs, expected 3"
for f in "$work"/env.*; do
    grep -qF "$key" "$f" && fail "the account key reached the handler's environment"
    grep -q 'client-s3cret-7Qx' "$f" && fail "AZURE_CLIENT_SECRET reached the handler"
    grep -q '^AzureWebJobsStorage=\|^SQLQ_QUEUE_CONNECTION=' "$f" && fail "a connection variable reached the handler"
    grep -q '^SQLQ_MESSAGE_ID=' "$f" || fail "the handler lacks SQLQ_MESSAGE_ID"
done
echo "consumer_handler_input: handlers get fds 0-2 only and no secrets: ok"

# Bodies of about 30 KB, each different; the handler records the SHA-256 of what it read.
total=60
pad=$(head -c 30000 /dev/zero | tr '\0' 'x')
: > "$work/sent"
for i in $(seq "$total"); do
    body="{\"n\":$i,\"pad\":\"$pad\"}"
    printf %s "$body" | sha256sum | cut -c1-64 >> "$work/sent"
    printf %s "$body" | "$SQLQ_BIN" queue put "$q" - >/dev/null
done
handler="echo \$\$ >> '$work/pids'; s=\$(sha256sum | cut -c1-64); echo \"\$s\" >> '$work/runs'; sleep 0.1"
: > "$work/runs"
: > "$work/pids"
for round in $(seq 10); do
    "$SQLQ_BIN" consume "$q" --lease-s 2 --batch-size 4 --new-batch-threshold 2 \
        --max-polling-interval-ms 200 --exec "$handler" 2>> "$work/log" &
    pid=$!
    sleep "0.$((3 + RANDOM % 5))"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
    sleep 0.3
    while read -r p; do
        alive "$p" && fail "round $round: handler $p outlived its consumer"
    done < "$work/pids"
done
# then drain what is left (messages held by killed consumers come back after their 2 s lease)
for _ in $(seq 30); do
    [ "$(count "$q")" = 0 ] && break
    timeout 60 "$SQLQ_BIN" consume "$q" --lease-s 2 --exit-when-empty --max-polling-interval-ms 200 \
        --exec "$handler" 2>> "$work/log" || fail "the final drain exited $?"
    sleep 1
done
[ "$(count "$q")" = 0 ] || fail "messages left: $(count "$q")"
runs=$(wc -l < "$work/runs")
bad=$(grep -vxFf "$work/sent" "$work/runs" | head -3 || true)
[ -z "$bad" ] || fail "a handler read a body that was never sent (cut or empty): $bad"
missing=$(grep -vxFf "$work/runs" "$work/sent" | head -3 || true)
[ -z "$missing" ] || fail "a body was never handled: $missing"
echo "consumer_handler_input: $runs handler runs over 10 kill -9, every input complete, none outlived its consumer: ok"
