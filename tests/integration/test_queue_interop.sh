#!/usr/bin/env bash
# Interop with the official SDK (@azure/storage-queue) through Azurite: what sqlq puts
# (base64) the SDK reads as the same bytes; what the SDK puts base64-encoded (as Azure Functions
# producers do) sqlq decodes to the same bytes; sqlq also works with an SDK-made SAS URL.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
peer="$SQLQ_SOURCE_DIR/tests/support/queue_interop.js"
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
export SQLQ_QUEUE_CONNECTION="$conn"
work=$(mktemp -d)
q="interop-$$"
cleanup() {
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

n=$(node "$peer" bodies "$work")
"$SQLQ_BIN" queue create "$q"

# sqlq -> SDK: bodies read from stdin (byte exact), base64 on the wire.
for ((i = 0; i < n; i++)); do
    "$SQLQ_BIN" queue put "$q" < "$work/body-$i.bin" >/dev/null
done
node "$peer" receive "$conn" "$q"

# SDK -> sqlq
node "$peer" send "$conn" "$q" "$work"
"$SQLQ_BIN" queue get "$q" --limit 32 --visibility-s 60 > "$work/got.jsonl"
node "$peer" check-json "$work" "$work/got.jsonl"
# Delete them with the receipts sqlq printed; then the queue is empty.
while read -r line; do
    id=$(node -e 'const o=JSON.parse(process.argv[1]);console.log(o.id)' "$line")
    pr=$(node -e 'const o=JSON.parse(process.argv[1]);console.log(o.pop_receipt)' "$line")
    "$SQLQ_BIN" queue delete-message "$q" "$id" "$pr" >/dev/null
done < "$work/got.jsonl"
count=$("$SQLQ_BIN" queue stats "$q" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).approximate_count))')
[ "$count" = 0 ] || { echo "interop: $count messages left" >&2; exit 1; }

# A SAS URL made by the SDK works as sqlq's connection.
sas=$(node "$peer" sas-url "$conn")
"$SQLQ_BIN" queue put "$q" "via sas" --queue-connection "$sas" >/dev/null
"$SQLQ_BIN" queue peek "$q" --queue-connection "$sas" | grep -q '"body":"via sas"' \
    || { echo "interop: SAS put/peek failed" >&2; exit 1; }
# A plain-text producer: sqlq says clearly that the text is not base64.
"$SQLQ_BIN" queue clear "$q" >/dev/null
"$SQLQ_BIN" queue put "$q" "not base64!" --encoding plain >/dev/null
"$SQLQ_BIN" queue peek "$q" | grep -q '"decode_error":"message text (11 characters) is not valid base64' \
    || { echo "interop: plain text in a base64 queue not reported" >&2; exit 1; }
echo "interop: ok"
