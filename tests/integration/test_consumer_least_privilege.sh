#!/usr/bin/env bash
# The consumer with the least permission its job needs, and a credential that stops working:
# - an account SAS with only process + update + add (sp=pua; srt=co, as Azurite refuses Delete
#   Message without srt=c; no create, read or list permission) is enough to handle, release
#   and poison messages when QUEUE-poison exists;
# - when QUEUE-poison is missing, the create that poisoning needs is refused (403): reported,
#   and the message is kept, never lost;
# - a SAS that expires while a handler runs: the delete is refused (403), which is an outage
#   (logged with its cause, /readyz 503), not the message's fault: after a restart with a fresh
#   SAS the message is handled and deleted, and nothing is in the poison queue.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
admin="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
export SQLQ_QUEUE_CONNECTION="$admin"
endpoint=$(echo "$admin" | sed -n 's/.*QueueEndpoint=\([^;]*\).*/\1/p')
key=$(echo "$admin" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
work=$(mktemp -d)
q="cleast-$$"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    SQLQ_QUEUE_CONNECTION="$admin" "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    SQLQ_QUEUE_CONNECTION="$admin" "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_least_privilege: $*" >&2; tail -5 "$work/log" >&2 2>/dev/null || true; exit 1; }
count() { SQLQ_QUEUE_CONNECTION="$admin" "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }

sas_conn() { # PERMISSIONS EXPIRY: a connection string with an account SAS signed by the key
    local sp=$1 se=$2 st=2020-01-01T00:00:00Z hexkey sig
    hexkey=$(printf %s "$key" | base64 -d | od -An -tx1 | tr -d ' \n')
    sig=$(printf 'devstoreaccount1\n%s\nq\nco\n%s\n%s\n\nhttps,http\n2019-12-12\n' "$sp" "$st" "$se" |
        openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hexkey" -binary | base64 |
        sed 's|/|%2F|g; s|+|%2B|g; s|=|%3D|g')
    echo "QueueEndpoint=$endpoint;SharedAccessSignature=sv=2019-12-12&ss=q&srt=co&sp=$sp&st=$st&se=$se&spr=https,http&sig=$sig"
}
least=$(sas_conn pua 2099-01-01T00:00:00Z)
handler="b=\$(cat); echo \"\$b\" >> '$work/handled'; case \"\$b\" in *bad*) exit 3;; esac"

"$SQLQ_BIN" queue create "$q" >/dev/null
"$SQLQ_BIN" queue create "$q-poison" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"ok":1}' >/dev/null
"$SQLQ_BIN" queue put "$q" '{"bad":1}' >/dev/null
# the SAS may not create queues: prove it, so the next steps test what they claim
SQLQ_QUEUE_CONNECTION="$least" "$SQLQ_BIN" queue create "$q-other" >/dev/null 2>&1 &&
    fail "the least-privilege SAS could create a queue"
for _ in $(seq 20); do
    [ "$(count "$q")" = 0 ] && break
    SQLQ_QUEUE_CONNECTION="$least" timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty \
        --max-dequeue-count 2 --max-polling-interval-ms 200 --exec "$handler" 2>> "$work/log" ||
        fail "consume with sp=pua exited $?"
done
[ "$(count "$q")" = 0 ] || fail "sp=pua: messages left in $q"
[ "$(count "$q-poison")" = 1 ] || fail "sp=pua: the failing message is not in $q-poison"
grep -q 'event=consumer.poisoned' "$work/log" || fail "sp=pua: no poisoning logged"
echo "consumer_least_privilege: process + update + add (no create) handles, releases and poisons: ok"

"$SQLQ_BIN" queue delete "$q-poison" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"bad":2}' >/dev/null
: > "$work/log"
SQLQ_QUEUE_CONNECTION="$least" timeout 60 "$SQLQ_BIN" consume "$q" --max-messages 1 \
    --max-dequeue-count 1 --max-polling-interval-ms 200 --exec "$handler" 2>> "$work/log" ||
    fail "consume without a poison queue exited $?"
grep -q 'event=consumer.poison_failed.*403' "$work/log" || fail "the refused create is not reported"
[ "$(count "$q")" = 1 ] || fail "the message that could not be poisoned is gone"
"$SQLQ_BIN" queue clear "$q" >/dev/null
echo "consumer_least_privilege: a poison queue it may not create: reported, message kept: ok"

# a SAS that expires while the handler runs
"$SQLQ_BIN" queue create "$q-poison" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"job":"long"}' >/dev/null
short_se=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)
short=$(sas_conn pua "$short_se")
port=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
: > "$work/log"
: > "$work/handled"
SQLQ_QUEUE_CONNECTION="$short" "$SQLQ_BIN" consume "$q" --lease-s 3 --max-polling-interval-ms 500 \
    --listen "127.0.0.1:$port" --exec "cat >> '$work/handled'; echo >> '$work/handled'; sleep 5" \
    2>> "$work/log" &
pid=$!
for _ in $(seq 150); do grep -q 'event=consumer.outage' "$work/log" && break; sleep 0.1; done
grep -q 'event=consumer.outage' "$work/log" || fail "no consumer.outage line after the SAS expired"
grep 'event=consumer.outage' "$work/log" | head -1 | grep -q 'cause=' || fail "the outage line names no cause"
# named as the bridge names it (found by a user: only "key rotated or SAS expired or invalid")
grep 'event=consumer.outage' "$work/log" | head -1 | grep -q "cause=\"credential rejected: SAS expired at $short_se" \
    || fail "the outage line does not name the SAS's expiry ($short_se)"
ready=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")
[ "$ready" = 503 ] || fail "/readyz answered $ready during the outage"
kill -TERM "$pid"
wait "$pid" || fail "consumer exited $? after SIGTERM"
pid=
[ "$(count "$q-poison")" = 0 ] || fail "the outage poisoned a message"
for _ in $(seq 20); do
    [ "$(count "$q")" = 0 ] && break
    sleep 1
    SQLQ_QUEUE_CONNECTION="$least" timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty \
        --max-polling-interval-ms 200 --exec "cat >> '$work/handled'; echo >> '$work/handled'" \
        2>> "$work/log" || fail "consume with a fresh SAS exited $?"
done
[ "$(count "$q")" = 0 ] || fail "the message was not handled after the credential was renewed"
[ "$(count "$q-poison")" = 0 ] || fail "a message went to poison"
[ "$(grep -c long "$work/handled")" -ge 2 ] || fail "the message was not handled again"
echo "consumer_least_privilege: an expiring SAS is an outage (readyz 503, cause logged), never poison: ok"
