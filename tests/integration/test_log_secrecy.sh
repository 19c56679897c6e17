#!/usr/bin/env bash
# Secrets never reach the output: sqlq commands run at --log-level trace, in text and JSON,
# with a storage account key, a SAS signature and a PostgreSQL password in their connection
# strings (as flags and as environment variables, on success and on failure paths), and
# stdout + stderr are searched for each secret and for recognizable pieces of it.
# Exit 77 (skipped) while `sqlq queue` is still a placeholder.
set -euo pipefail

bin=${SQLQ_BIN:?}
env_dir=${SQLQ_TEST_ENV_DIR:?}
tmp=$(mktemp -d)
q="secrecy-$$-$RANDOM"
pg_db="secrecy_$$_$RANDOM"
pg_port=$(cat "$env_dir/postgres/port")
cleanup() {
    psql -h 127.0.0.1 -p "$pg_port" -U sqlq -d postgres -qc "DROP DATABASE IF EXISTS $pg_db" \
        >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

azurite_conn=$(cat "$env_dir/azurite/conn")
endpoint=$(echo "$azurite_conn" | sed -n 's/.*QueueEndpoint=\([^;]*\).*/\1/p')
key=$(echo "$azurite_conn" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
{ [ -n "$key" ] && [ -n "$endpoint" ]; } || fail "no Azurite connection string in $env_dir/azurite/conn"

# A valid account SAS for Azurite, signed here with the account key (as the portal or
# `az storage account generate-sas` would): successful requests carry its sig on every URL.
st=2020-01-01T00:00:00Z
se=2099-01-01T00:00:00Z
hexkey=$(printf %s "$key" | base64 -d | od -An -tx1 | tr -d ' \n')
sig_raw=$(printf 'devstoreaccount1\nrwdlacup\nq\nsco\n%s\n%s\n\nhttps,http\n2019-12-12\n' "$st" "$se" |
    openssl dgst -sha256 -mac HMAC -macopt "hexkey:$hexkey" -binary | base64)
urlenc() { printf %s "$1" | sed 's|/|%2F|g; s|+|%2B|g; s|=|%3D|g'; }
sig_enc=$(urlenc "$sig_raw")
sas="sv=2019-12-12&ss=q&srt=sco&sp=rwdlacup&st=$st&se=$se&spr=https,http&sig=$sig_enc"
sas_conn="QueueEndpoint=$endpoint;SharedAccessSignature=$sas"
sas_url="$endpoint?$sas"
# A SAS whose signature Azurite rejects (403), for the error paths.
fake_raw='kX9/Qm+7ZpL2vR4tW8yB1nC6dF0gH3jK5sT7uV9wXa='
fake_conn="QueueEndpoint=$endpoint;SharedAccessSignature=${sas%%&sig=*}&sig=$(urlenc "$fake_raw")"
bad_key='c2VjcmV0LWtleS10aGF0LW11c3Qtbm90LWxlYWstMTIzNDU2Nzg5MA=='
bad_key_conn="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$bad_key;QueueEndpoint=$endpoint"

pg_pass='Pg-S3cret-pa55word-7f3a'
psql -h 127.0.0.1 -p "$pg_port" -U sqlq -d postgres -qc "CREATE DATABASE $pg_db" >/dev/null ||
    fail "cannot create database $pg_db"
pg_conn=$(sed "s/PWD=;/PWD=$pg_pass;/" "$env_dir/postgres/odbc")"Database=$pg_db;"
echo "$pg_conn" | grep -q "PWD=$pg_pass;" || fail "could not put a password into $pg_conn"

# Every form of every secret that would give it away (or enough of it).
secrets=("$key" "${key:0:20}" "${key: -24}" "$(urlenc "$key")" "$sig_raw" "$sig_enc"
    "${sig_raw:0:16}" "$fake_raw" "$(urlenc "$fake_raw")" "$bad_key" "${bad_key:0:20}" "$pg_pass")

runs=0
placeholder=0
logged=0
# run NAME [ENV=VALUE...] -- sqlq args...: run at trace in both formats and search the output.
run() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    for fmt in text json; do
        local out="$tmp/$name.$fmt"
        local rc=0
        env "${envs[@]}" "$bin" "$@" --log-level trace --log-format "$fmt" >"$out" 2>&1 </dev/null || rc=$?
        runs=$((runs + 1))
        if grep -q "is not built yet" "$out"; then
            placeholder=$((placeholder + 1))
            continue
        fi
        [ -s "$out" ] && logged=$((logged + 1))
        for s in "${secrets[@]}"; do
            if grep -qF -- "$s" "$out"; then
                echo "--- output of $name ($fmt, exit $rc):" >&2
                cat "$out" >&2
                fail "$name ($fmt): secret '${s:0:6}…' appears in the output"
            fi
        done
        if [ "$fmt" = json ] && command -v jq >/dev/null 2>&1; then
            # Lines that look like JSON log records must be JSON (a broken escape could leak).
            { grep '^{' "$out" || true; } | while read -r line; do
                echo "$line" | jq -e . >/dev/null 2>&1 || fail "$name: not JSON: $line"
            done
        fi
        echo "ok: $name ($fmt): exit $rc, $(wc -l <"$out") lines, no secret"
    done
}

run queue-create -- queue create "$q" --queue-connection "$azurite_conn"
run queue-put -- queue put "$q" "hello" --queue-connection "$azurite_conn"
run queue-stats-key -- queue stats "$q" --queue-connection "$azurite_conn"
run queue-stats-env SQLQ_QUEUE_CONNECTION="$azurite_conn" -- queue stats "$q"
run queue-stats-webjobs-env AzureWebJobsStorage="$azurite_conn" -- queue stats "$q"
run queue-list-key -- queue list --queue-connection "$azurite_conn"
run queue-put-sas -- queue put "$q" "via sas" --queue-connection "$sas_conn"
run queue-peek-sas-url -- queue peek "$q" --queue-connection "$sas_url"
run queue-get-sas-env SQLQ_QUEUE_CONNECTION="$sas_conn" -- queue get "$q" --visibility-s 1
run queue-list-sas-url -- queue list --queue-connection "$sas_url"
run queue-stats-fake-sas -- queue stats "$q" --queue-connection "$fake_conn"
run queue-peek-fake-sas-env SQLQ_QUEUE_CONNECTION="$fake_conn" -- queue peek "$q"
run queue-stats-bad-key -- queue stats "$q" --queue-connection "$bad_key_conn"
run consume-sas -- consume "$q" --exec cat --exit-when-empty --queue-connection "$sas_conn"
run queue-put-failing -- queue put "$q" "handler fails" --queue-connection "$azurite_conn"
run consume-key-env SQLQ_QUEUE_CONNECTION="$azurite_conn" -- consume "$q" --exec 'exit 1' \
    --exit-when-empty --max-dequeue-count 1
run poison-list -- poison list "$q" --queue-connection "$sas_conn"
run queue-delete -- queue delete "$q" --queue-connection "$sas_url"
run queue-delete-poison -- queue delete "$q-poison" --queue-connection "$azurite_conn"
run status-pg -- status --db "$pg_conn"
run setup-pg -- setup --db "$pg_conn" --table public.no_such_table
run bridge-pg -- bridge --once --db "$pg_conn" --table public.no_such_table --queue "$q" \
    --queue-connection "$azurite_conn"
run bridge-pg-env SQLQ_DB_CONNECTION="$pg_conn" SQLQ_QUEUE_CONNECTION="$sas_conn" -- \
    bridge --once --table public.no_such_table --queue "$q"

# A mistyped connection string (the driver's '}' missing): refused before connecting, without
# echoing it. The driver manager would take the rest, PWD= and all, as the driver's name and
# print it in its error.
bad_conn=$(echo "$pg_conn" | sed 's/Unicode}/Unicode/')
[ "$bad_conn" != "$pg_conn" ] || fail "could not drop the '}' from $pg_conn"
run bridge-unclosed-brace -- bridge --db "$bad_conn" --table orders --queue "$q" \
    --queue-connection "$azurite_conn"
run setup-unclosed-brace -- setup --db "$bad_conn" --table orders
run config-check-unclosed-brace -- config check --db "$bad_conn" --table orders --queue "$q" \
    --queue-connection "$azurite_conn"
for name in bridge setup config-check; do
    grep -q "the value of Driver opens '{' at offset 7 and never closes it" "$tmp/$name-unclosed-brace.text" ||
        fail "$name: the unclosed brace was not refused: $(cat "$tmp/$name-unclosed-brace.text")"
done

queue_placeholder=$(cat "$tmp"/queue-* | grep -c "is not built yet" || true)
if [ "$queue_placeholder" -gt 0 ]; then
    echo "SKIP: 'sqlq queue' is still a placeholder ($placeholder of $runs runs were placeholders)"
    exit 77
fi
[ "$logged" -gt 0 ] || fail "no command wrote anything at trace level: the search proves nothing"
echo "all $runs runs clean ($placeholder placeholder runs, $logged with output)"
