# Sourced by the Microsoft Entra ID tests: a private Azurite over HTTPS with `--oauth basic`
# (a certificate made here with openssl) and the token-service fixture (fake_token_service.py).
#   entra_start WORK [LIFETIME_S [CLAIMED_S]]  sets ENTRA_CA, ENTRA_QUEUE_URI, ENTRA_TOKEN_HTTP,
#                                   ENTRA_TOKEN_HTTPS, ENTRA_REQUESTS; clears every identity
#                                   variable an outer environment may hold
#   entra_stop                      stops both (call it from the EXIT trap)
#   entra_count KIND                token requests of that kind answered 200 so far
# Secrets the fixture expects: ENTRA_SECRET, ENTRA_IDENTITY_HEADER, ENTRA_FEDERATED_TOKEN.
ENTRA_SECRET=fake-client-secret-0123456789
ENTRA_IDENTITY_HEADER=fake-identity-header-0123456789
ENTRA_FEDERATED_TOKEN=fake-federated-token-0123456789
ENTRA_TENANT=72f988bf-86f1-41af-91ab-2d7cd011db47
entra_azurite_pid=""
entra_token_pid=""

entra_start() {
    local work=$1 lifetime=${2:-3600} claimed=${3:-${2:-3600}} here root
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    root=$(cd "$here/../.." && pwd)
    unset SQLQ_QUEUE_CONNECTION SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage SQLQ_CA_FILE \
        AZURE_TENANT_ID AZURE_CLIENT_ID AZURE_CLIENT_SECRET AZURE_FEDERATED_TOKEN_FILE \
        AZURE_AUTHORITY_HOST IDENTITY_ENDPOINT IDENTITY_HEADER AZURE_POD_IDENTITY_AUTHORITY_HOST \
        AzureWebJobsStorage__queueServiceUri AzureWebJobsStorage__credential \
        AzureWebJobsStorage__clientId SQLQ_QUEUE_CONNECTION__queueServiceUri \
        SQLQ_QUEUE_CONNECTION__credential SQLQ_QUEUE_CONNECTION__clientId \
        AzureWebJobsStorage__accountName SQLQ_QUEUE_CONNECTION__accountName
    mkdir -p "$work/tokens"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
        -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
        >/dev/null 2>&1
    ENTRA_CA=$work/cert.pem
    ENTRA_REQUESTS=$work/tokens/requests
    : >"$ENTRA_REQUESTS"
    python3 "$here/fake_token_service.py" "$work/tokens" --cert "$work/cert.pem" \
        --key "$work/key.pem" --lifetime "$lifetime" --claimed-lifetime "$claimed" >"$work/tokens.log" 2>&1 &
    entra_token_pid=$!
    local port
    port=$("$here/free_port.sh")
    setsid "$root/node_modules/.bin/azurite-queue" --queueHost 127.0.0.1 --queuePort "$port" \
        --inMemoryPersistence --disableTelemetry --silent --cert "$work/cert.pem" \
        --key "$work/key.pem" --oauth basic >"$work/azurite.log" 2>&1 </dev/null &
    entra_azurite_pid=$!
    ENTRA_QUEUE_URI=https://127.0.0.1:$port/devstoreaccount1
    for _ in $(seq 300); do
        if [ -f "$work/tokens/https_port" ] &&
            curl -s -o /dev/null --cacert "$ENTRA_CA" "$ENTRA_QUEUE_URI?comp=list"; then
            ENTRA_TOKEN_HTTP=http://127.0.0.1:$(cat "$work/tokens/http_port")
            ENTRA_TOKEN_HTTPS=https://127.0.0.1:$(cat "$work/tokens/https_port")
            return 0
        fi
        sleep 0.1
    done
    echo "entra.sh: Azurite (HTTPS) or the token service did not start" >&2
    cat "$work/azurite.log" "$work/tokens.log" >&2
    return 1
}

entra_stop() {
    [ -n "$entra_azurite_pid" ] && kill "$entra_azurite_pid" 2>/dev/null
    [ -n "$entra_token_pid" ] && kill "$entra_token_pid" 2>/dev/null
    entra_azurite_pid=""
    entra_token_pid=""
    return 0
}

entra_count() {
    grep -c "\"kind\": \"$1\", \"status\": 200" "$ENTRA_REQUESTS" || true
}
