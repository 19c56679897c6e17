#!/usr/bin/env bash
# Microsoft Entra ID behaviour against Azurite over HTTPS (`--oauth basic`) and the token-service
# fixture (tests/support/entra.sh):
#  1. caching: 2000 puts from 4 threads over one account ask for one token;
#  2. a token the service refuses while the client believes it valid (it lives 15 s, the reply
#     claims an hour): dropped, renewed, the put retried once: nothing fails, nothing lost;
#  3. refresh ahead of expiry: tokens live 20 s, `sqlq consume` runs ~40 s while messages
#     arrive: every message handled, no 401/403 surfaces, no token refused, several refreshes;
#  4. refusals: a wrong client secret, identity header or federated token: exit 1 at once, the
#     error names the source and the endpoint's reason, and no secret or token is printed (at
#     --log-level trace, successful runs included);
#  5. the token service down (500): an outage: a consumer stays up with /readyz 503 and handles
#     the message once tokens return (nothing poisoned); a command retries, then exit 1;
#  6. http:// with a token credential, and an explicit credential without its variables: exit 2.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_ENTRA_PUT_LOAD:?}"
source "$SQLQ_SOURCE_DIR/tests/support/entra.sh"
work=$(mktemp -d)
consumer=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$consumer" ] && kill "$consumer" 2>/dev/null
    entra_stop
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "entra_behaviour: $*" >&2; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
imds() {
    export SQLQ_CA_FILE=$ENTRA_CA AZURE_POD_IDENTITY_AUTHORITY_HOST=$ENTRA_TOKEN_HTTP
    export SQLQ_QUEUE_CONNECTION="QueueServiceUri=$ENTRA_QUEUE_URI"
}

# 1. caching
entra_start "$work/1"
imds
"$SQLQ_BIN" queue create cached 2>/dev/null >/dev/null || fail "create over IMDS failed"
out=$("$SQLQ_ENTRA_PUT_LOAD" cached 4 2000 0 2>"$work/load.err") || fail "load: $out $(tail -3 "$work/load.err")"
[ "$out" = "puts=2000 failures=0 token_requests=1" ] || fail "caching: $out"
[ "$(entra_count imds)" = 2 ] || fail "caching: $(entra_count imds) IMDS requests (want 2: create, load)"
[ "$(count cached)" = 2000 ] || fail "caching: the queue holds $(count cached)"
echo "entra_behaviour: 2000 puts from 4 threads, one token: ok"
entra_stop

# 2. a refused token: renewed and the request retried once
entra_start "$work/2" 15 3600
imds
"$SQLQ_BIN" queue create refused >/dev/null 2>&1
out=$("$SQLQ_ENTRA_PUT_LOAD" refused 2 0 25 100 2>"$work/load2.err") || fail "refused: $out $(tail -3 "$work/load2.err")"
puts=$(echo "$out" | sed -n 's/puts=\([0-9]*\) .*/\1/p')
requests=$(echo "$out" | sed -n 's/.*token_requests=\([0-9]*\)/\1/p')
[ "$requests" -ge 2 ] || fail "refused: the token was not renewed ($out)"
grep -q "event=token.refused" "$work/load2.err" || fail "refused: no refusal seen (the test cannot fail)"
[ "$(count refused)" = "$puts" ] || fail "refused: $puts puts, the queue holds $(count refused)"
echo "entra_behaviour: refused token renewed, $puts puts, none failed or lost: ok"
entra_stop

# 3. refresh ahead of expiry during a long consume
entra_start "$work/3" 20
imds
"$SQLQ_BIN" queue create refresh >/dev/null 2>&1
"$SQLQ_BIN" consume refresh --max-polling-interval-ms 500 \
    --exec "cat >> '$work/got'; echo >> '$work/got'" 2>"$work/consume.log" &
consumer=$!
sent=0
end=$((SECONDS + 40))
while [ $SECONDS -lt $end ]; do
    "$SQLQ_BIN" queue put refresh "{\"n\":$sent}" >/dev/null 2>>"$work/put.err" || fail "put $sent failed"
    sent=$((sent + 1))
    sleep 0.5
done
for _ in $(seq 100); do
    [ "$(grep -c . "$work/got" 2>/dev/null || echo 0)" -ge "$sent" ] && break
    sleep 0.2
done
kill -TERM "$consumer"
wait "$consumer" || true
consumer=""
got=$(sort -u "$work/got" | grep -c .)
[ "$got" = "$sent" ] || fail "refresh: $sent sent, $got handled"
refusal="http=40[13]\|AuthenticationFailed\|InvalidAuthenticationInfo\|token.refused\|token.failed"
! grep -q "$refusal" "$work/consume.log" || fail "refresh: $(grep "$refusal" "$work/consume.log" | head -3)"
acquired=$(grep -c "event=token.acquired" "$work/consume.log")
[ "$acquired" -ge 4 ] || fail "refresh: $acquired tokens in ~40 s of 20-s tokens (want >= 4)"
echo "entra_behaviour: $sent messages over ~40 s with 20-s tokens, $acquired tokens, no refusal: ok"

# 4. refusals name the source and print no secret or token
secrets=(wrong-client-secret-31337 wrong-identity-header-31337 wrong-federated-token-31337
    "$ENTRA_SECRET" "$ENTRA_IDENTITY_HEADER" "$ENTRA_FEDERATED_TOKEN" eyJhbGci)
check_secrets() {
    for s in "${secrets[@]}"; do
        ! grep -q -- "$s" "$1" || fail "$2: '$s' appears in the output"
    done
}
unset SQLQ_QUEUE_CONNECTION AZURE_POD_IDENTITY_AUTHORITY_HOST
export AzureWebJobsStorage__queueServiceUri=$ENTRA_QUEUE_URI
refuse() { # name, expected text, env assignments...
    local name=$1 want=$2 rc=0
    shift 2
    for format in text json; do
        env "$@" "$SQLQ_BIN" queue put refresh x --log-level trace --log-format $format \
            >"$work/out" 2>&1 || rc=$?
        [ "$rc" = 1 ] || fail "$name: exit $rc, expected 1: $(cat "$work/out")"
        grep -q -- "$want" "$work/out" || fail "$name: '$want' not in: $(cat "$work/out")"
        check_secrets "$work/out" "$name"
    done
}
refuse "wrong secret" "service principal (AZURE_CLIENT_SECRET) refused the credential: 401 AADSTS7000215" \
    AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=c1 AZURE_CLIENT_SECRET=wrong-client-secret-31337 \
    AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS
refuse "wrong identity header" "managed identity (IDENTITY_ENDPOINT) refused the credential: 400 X-IDENTITY-HEADER is wrong" \
    IDENTITY_ENDPOINT=$ENTRA_TOKEN_HTTP/msi/token IDENTITY_HEADER=wrong-identity-header-31337
echo wrong-federated-token-31337 >"$work/federated"
refuse "wrong federated token" "workload identity (AZURE_FEDERATED_TOKEN_FILE) refused the credential: 401" \
    AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=c2 AZURE_FEDERATED_TOKEN_FILE=$work/federated \
    AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS
# Successful runs at trace level print no secret or token either.
echo "$ENTRA_FEDERATED_TOKEN" >"$work/federated"
for vars in "AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=c1 AZURE_CLIENT_SECRET=$ENTRA_SECRET AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS" \
    "IDENTITY_ENDPOINT=$ENTRA_TOKEN_HTTP/msi/token IDENTITY_HEADER=$ENTRA_IDENTITY_HEADER" \
    "AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=c2 AZURE_FEDERATED_TOKEN_FILE=$work/federated AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS"; do
    # shellcheck disable=SC2086
    env $vars "$SQLQ_BIN" queue peek refresh --log-level trace >"$work/out" 2>&1 ||
        fail "success path ($vars): $(cat "$work/out")"
    check_secrets "$work/out" "success path"
done
echo "entra_behaviour: refusals name the source, no secret or token printed: ok"

# 5. the token service down: an outage. A consumer stays up, /readyz 503 naming the cause, and
# handles the message once tokens come back; a command retries within its budget, then exit 1.
export AZURE_POD_IDENTITY_AUTHORITY_HOST=$ENTRA_TOKEN_HTTP
"$SQLQ_BIN" queue put refresh after-outage >/dev/null 2>&1 || fail "put failed"
touch "$work/3/tokens/fail"
port=$(bash "$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
: >"$work/got"
"$SQLQ_BIN" consume refresh \
    --max-polling-interval-ms 500 --listen "127.0.0.1:$port" \
    --exec "cat >> '$work/got'" 2>"$work/outage.log" &
consumer=$!
ready=""
for _ in $(seq 100); do
    ready=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port/readyz" || true)
    case "$ready" in *" 503") grep -q "no access token" "$work/outage.log" && break ;; esac
    sleep 0.2
done
case "$ready" in *" 503") ;; *) fail "token outage: /readyz answered '$ready', expected 503" ;; esac
grep -q "no access token: managed identity (IMDS) failed: 500 the token service is down" "$work/outage.log" ||
    fail "token outage: the log does not name the source: $(grep -v token.source "$work/outage.log" | tail -3)"
rm -f "$work/3/tokens/fail"
for _ in $(seq 150); do grep -q after-outage "$work/got" && break; sleep 0.2; done
grep -q after-outage "$work/got" || fail "token outage: the message was not handled after recovery"
kill -TERM "$consumer"
wait "$consumer" || true
consumer=""
! grep -q "event=consumer.poisoned" "$work/outage.log" || fail "token outage: something was poisoned"
touch "$work/3/tokens/fail"
rc=0
unset AZURE_POD_IDENTITY_AUTHORITY_HOST
AZURE_POD_IDENTITY_AUTHORITY_HOST=$ENTRA_TOKEN_HTTP "$SQLQ_BIN" queue put refresh x >"$work/out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "token outage: exit $rc, expected 1"
grep -q "managed identity (IMDS) failed: 500 the token service is down" "$work/out" ||
    fail "token outage: source not named: $(tail -3 "$work/out")"
grep -q "event=queue.retry" "$work/out" || fail "token outage: not retried"
rm -f "$work/3/tokens/fail"
echo "entra_behaviour: token service outage: /readyz 503, recovered, CLI exit 1 naming the source: ok"

# 6. configuration errors: exit 2
rc=0
"$SQLQ_BIN" queue peek refresh --queue-connection "QueueServiceUri=${ENTRA_QUEUE_URI/https/http}" \
    >"$work/out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "http + token: exit $rc, expected 2"
grep -q "must be https://: an Entra ID token is sent only over https" "$work/out" ||
    fail "http + token: $(cat "$work/out")"
rc=0
AzureWebJobsStorage__credential=workloadidentity "$SQLQ_BIN" queue peek refresh >"$work/out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "workloadidentity without variables: exit $rc, expected 2"
grep -q "credential workloadidentity needs AZURE_FEDERATED_TOKEN_FILE" "$work/out" ||
    fail "workloadidentity without variables: $(cat "$work/out")"
echo "entra_behaviour: http:// with a token and missing variables refused (exit 2): ok"
