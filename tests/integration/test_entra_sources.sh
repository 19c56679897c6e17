#!/usr/bin/env bash
# Microsoft Entra ID, each token source end to end against Azurite over HTTPS with
# `--oauth basic` and the token-service fixture: put, consume, poison with
#  - managed identity, App Service (IDENTITY_ENDPOINT + IDENTITY_HEADER), user-assigned (clientId),
#    set as AzureWebJobsStorage__queueServiceUri/__credential/__clientId;
#  - managed identity, IMDS (AZURE_POD_IDENTITY_AUTHORITY_HOST), as SQLQ_QUEUE_CONNECTION__…;
#  - service principal with a secret (AZURE_TENANT_ID/CLIENT_ID/CLIENT_SECRET, the chain's first);
#  - workload identity (AZURE_FEDERATED_TOKEN_FILE), given as --queue-connection QueueServiceUri=…
# Each source's token requests are counted: one per process, every request carries the token.
# Then the bridge (SQLite, --once) publishes 300 changes with one token, and with the token
# service down it gives up as an outage naming the missing token, poisoning nothing.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}"
source "$SQLQ_SOURCE_DIR/tests/support/entra.sh"
work=$(mktemp -d)
trap 'entra_stop; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "entra_sources: $*" >&2; exit 1; }
entra_start "$work"
export SQLQ_CA_FILE=$ENTRA_CA
count() { "$SQLQ_BIN" queue stats "$1" "${conn[@]}" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }

# put two, consume: one succeeds, one always fails and lands in {queue}-poison.
roundtrip() {
    local name=$1 q=$2
    "$SQLQ_BIN" queue create "$q" "${conn[@]}" >/dev/null 2>"$work/err" ||
        fail "$name: create: $(cat "$work/err")"
    "$SQLQ_BIN" queue put "$q" '{"ok":1}' "${conn[@]}" >/dev/null 2>"$work/err" ||
        fail "$name: put: $(cat "$work/err")"
    "$SQLQ_BIN" queue put "$q" '{"ok":0}' "${conn[@]}" >/dev/null
    rm -f "$work/seen"
    timeout 60 "$SQLQ_BIN" consume "$q" "${conn[@]}" --exit-when-empty --max-dequeue-count 2 \
        --max-polling-interval-ms 300 \
        --exec "b=\$(cat); echo \"\$b\" >> '$work/seen'; case \"\$b\" in *'\"ok\":1'*) ;; *) exit 3;; esac" \
        2>"$work/consume.log" || fail "$name: consume exited $?: $(tail -5 "$work/consume.log")"
    grep -q '"ok":1' "$work/seen" || fail "$name: the good message was not consumed"
    [ "$(count "$q")" = 0 ] || fail "$name: queue $q not empty"
    [ "$(count "$q-poison")" = 1 ] || fail "$name: poison queue holds $(count "$q-poison")"
    "$SQLQ_BIN" queue peek "$q-poison" "${conn[@]}" | grep -q '{\\"ok\\":0}' ||
        fail "$name: the poison queue lacks the failing message"
    ! grep -q "http=40[13]\|AuthenticationFailed\|InvalidAuthenticationInfo" "$work/consume.log" ||
        fail "$name: a refusal surfaced: $(grep "http=40[13]" "$work/consume.log" | head -2)"
    echo "entra_sources: $name: put, consume, poison: ok"
}

# App Service managed identity, user-assigned, with the Functions setting names.
conn=()
(
    export IDENTITY_ENDPOINT=$ENTRA_TOKEN_HTTP/msi/token IDENTITY_HEADER=$ENTRA_IDENTITY_HEADER
    export AzureWebJobsStorage__queueServiceUri=$ENTRA_QUEUE_URI
    export AzureWebJobsStorage__credential=managedidentity
    export AzureWebJobsStorage__clientId=11111111-2222-3333-4444-555555555555
    roundtrip "managed identity (App Service)" entra-appsvc
)
n=$(entra_count app_service)
[ "$n" -ge 6 ] && [ "$n" -le 12 ] || fail "App Service: $n token requests for 8 commands"
grep -q '"kind": "app_service", "status": 200, "client_id": "11111111-2222-3333-4444-555555555555"' \
    "$ENTRA_REQUESTS" || fail "App Service: clientId was not sent as client_id"

# IMDS, system-assigned, SQLQ_QUEUE_CONNECTION__queueServiceUri.
(
    export AZURE_POD_IDENTITY_AUTHORITY_HOST=$ENTRA_TOKEN_HTTP
    export SQLQ_QUEUE_CONNECTION__queueServiceUri=$ENTRA_QUEUE_URI
    roundtrip "managed identity (IMDS)" entra-imds
)
[ "$(entra_count imds)" -ge 6 ] || fail "IMDS was not asked"

# Service principal: the chain's first source, ahead of managed identity that is also set.
(
    export AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=aaaaaaaa-0000-0000-0000-000000000001
    export AZURE_CLIENT_SECRET=$ENTRA_SECRET AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS/
    export AZURE_POD_IDENTITY_AUTHORITY_HOST=$ENTRA_TOKEN_HTTP
    export AzureWebJobsStorage__queueServiceUri=$ENTRA_QUEUE_URI
    before=$(entra_count imds)
    roundtrip "service principal" entra-secret
    [ "$(entra_count imds)" = "$before" ] || fail "the chain asked IMDS before the environment"
)
[ "$(entra_count entra_secret)" -ge 6 ] || fail "the service principal was not asked"

# Workload identity, the connection given as a flag; the token file is read for each request.
printf '%s\n' "$ENTRA_FEDERATED_TOKEN" >"$work/federated"
(
    export AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=bbbbbbbb-0000-0000-0000-000000000002
    export AZURE_FEDERATED_TOKEN_FILE=$work/federated AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS
    conn=(--queue-connection "QueueServiceUri=$ENTRA_QUEUE_URI")
    roundtrip "workload identity" entra-workload
)
[ "$(entra_count entra_workload)" -ge 6 ] || fail "workload identity was not asked"
grep -q '"kind": "entra_workload", "status": 200, "client_id": "bbbbbbbb-0000-0000-0000-000000000002"' \
    "$ENTRA_REQUESTS" || fail "workload identity: AZURE_CLIENT_ID not sent"
# The bridge: route threads and the put pipeline share the process's token.
db="$work/shop.db"
dbconn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 -cmd ".timeout 5000" "$db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, v TEXT);"
"$SQLQ_BIN" setup --db "$dbconn" --table orders >/dev/null 2>&1 || fail "bridge: setup"
sqlite3 -cmd ".timeout 5000" "$db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO orders SELECT i, 'v' || i FROM n;"
export AZURE_POD_IDENTITY_AUTHORITY_HOST=$ENTRA_TOKEN_HTTP
export AzureWebJobsStorage__queueServiceUri=$ENTRA_QUEUE_URI
"$SQLQ_BIN" queue create entra-bridge >/dev/null 2>&1 || fail "bridge: create"
"$SQLQ_BIN" bridge --db "$dbconn" --table orders --queue entra-bridge --once >"$work/bridge.log" 2>&1 ||
    fail "bridge --once exited $?: $(grep -v level=debug "$work/bridge.log" | tail -5)"
grep -q "messages=300 released=300 poisoned=0" "$work/bridge.log" ||
    fail "bridge: $(grep -v level=debug "$work/bridge.log" | tail -3)"
[ "$(count entra-bridge)" = 300 ] || fail "bridge: the queue holds $(count entra-bridge)"
n=$(grep -c "event=token.acquired" "$work/bridge.log")
[ "$n" = 1 ] || fail "bridge: $n tokens acquired (want 1)"
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES (301, 'late');"
touch "$work/tokens/fail"
rc=0
timeout 120 "$SQLQ_BIN" bridge --db "$dbconn" --table orders --queue entra-bridge --once \
    --once-outage-s 3 >"$work/bridge2.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "bridge, token service down: exit $rc, expected 1"
grep -q "sqlq bridge: .*no Microsoft Entra ID token" "$work/bridge2.log" ||
    fail "bridge, token service down: cause not named: $(grep -v level=debug "$work/bridge2.log" | tail -3)"
grep -q 'event=queue_outage.*cause="no Microsoft Entra ID token: managed identity (IMDS) failed: 500' \
    "$work/bridge2.log" ||
    fail "bridge, token service down: the outage's cause lacks the 500: $(grep queue_outage "$work/bridge2.log" | head -1)"
! grep -q "poisoned=[1-9]" "$work/bridge2.log" || fail "bridge, token service down: something was poisoned"
rm -f "$work/tokens/fail"
"$SQLQ_BIN" bridge --db "$dbconn" --table orders --queue entra-bridge --once >"$work/bridge3.log" 2>&1 ||
    fail "bridge after the token outage exited $?"
grep -q "messages=1 released=1 poisoned=0" "$work/bridge3.log" || fail "bridge: the late change was not delivered"
# A wrong client secret: the endpoint's 401 AADSTS7000215 is the cause (queue_outage and the
# final message), read as the credential refused, not as an endpoint that cannot be reached.
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES (302, 'refused');"
rc=0
env AZURE_TENANT_ID=$ENTRA_TENANT AZURE_CLIENT_ID=c1 AZURE_CLIENT_SECRET=wrong-client-secret-31337 \
    AZURE_AUTHORITY_HOST=$ENTRA_TOKEN_HTTPS timeout 120 "$SQLQ_BIN" bridge --db "$dbconn" \
    --table orders --queue entra-bridge --once --once-outage-s 3 >"$work/bridge4.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "bridge, wrong secret: exit $rc, expected 1"
refused="no Microsoft Entra ID token: service principal (AZURE_CLIENT_SECRET) refused the credential: 401 AADSTS7000215"
grep -q "event=queue_outage.*cause=\"$refused" "$work/bridge4.log" ||
    fail "bridge, wrong secret: queue_outage cause: $(grep queue_outage "$work/bridge4.log" | head -1)"
grep -q "^sqlq bridge: .*$refused" "$work/bridge4.log" ||
    fail "bridge, wrong secret: final message: $(grep -v level= "$work/bridge4.log" | tail -3)"
! grep -q "cannot be reached\|wrong-client-secret-31337" "$work/bridge4.log" ||
    fail "bridge, wrong secret: reported as unreachable, or the secret printed"
echo "entra_sources: bridge: 300 changes with one token; token outage: exit 1, nothing poisoned: ok"
echo "entra_sources: ok"
