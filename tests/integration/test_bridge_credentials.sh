#!/usr/bin/env bash
# The bridge and its storage credential, against a private Azurite (with its debug log, to count
# the requests that reach it) and SQLite:
#  1. least privilege: an account SAS with only add (sp=a, srt=o) and a queue-scoped SAS with
#     only add publish to existing queues (and `sqlq config check` accepts them);
#     message_ttl_s per route, poison copies that never expire; messages never expire (ExpirationTime 9999-12-31, read
#     with the official SDK); a missing queue is created at the first put when the credential
#     may, and a refused create is reported as such (--once exits 1 naming the permission);
#  2. a SAS that expires mid-run: changes written before expiry arrive, the ones written after
#     wait (no poison, no hot loop: few failed requests, /readyz 503, a log line "SAS expired
#     at <se>"), and after a restart with a fresh SAS every change is in the main queue, none
#     in poison.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
peer="$src/tests/support/queue_sas.js"
tmp=$(mktemp -d)
pid=""
azpid=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    [ -n "$azpid" ] && kill "$azpid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && [ "$f" != "$tmp/azurite.log" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}
unset SQLQ_QUEUE_CONNECTION SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true

azport=$("$src/tests/support/free_port.sh")
setsid "$src/node_modules/.bin/azurite-queue" --queueHost 127.0.0.1 --queuePort "$azport" --inMemoryPersistence \
    --disableTelemetry --silent --debug "$tmp/azurite.log" >/dev/null 2>&1 </dev/null &
azpid=$!
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
admin="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;QueueEndpoint=http://127.0.0.1:$azport/devstoreaccount1;"
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$azport/devstoreaccount1?comp=list" && break; sleep 0.1; done
# Requests Azurite refused with 401/403 so far.
refused() { grep -c 'EndMiddleware: End response.*StatusCode=40[13]' "$tmp/azurite.log" || true; }
count() { node "$peer" peek "$admin" "$1" | grep -c . || true; }

db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
# One table per part: a bridge name sees only what the change log holds when it first starts.
for t in orders created refused expiry ttl; do
    sqlite3 -cmd ".timeout 5000" "$db" "CREATE TABLE $t (id INTEGER PRIMARY KEY, v TEXT);"
    "$sqlq" setup --db "$conn" --table "$t" >/dev/null 2>&1 || fail "setup $t"
done
insert() { # insert TABLE ID...
    local t=$1
    shift
    for i in "$@"; do sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO $t VALUES ($i, 'v$i');"; done
}

q="cred-$$"
for name in "$q" "$q-poison"; do "$sqlq" queue create "$name" --queue-connection "$admin" >/dev/null || fail "create $name"; done

# --- 1. least privilege, and messages that never expire
add_only=$(node "$peer" account "$admin" o a 3600)
queue_add_only=$(node "$peer" queue "$admin" "$q" a 3600)
insert orders 1 2
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --once --queue-connection "$queue_add_only" \
    >"$tmp/least-queue.log" 2>&1 || fail "bridge --once with a queue-scoped add-only SAS exited $?"
insert orders 3
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --once --queue-connection "$add_only" \
    >"$tmp/least-account.log" 2>&1 || fail "bridge --once with an account add-only SAS exited $?"
node "$peer" peek "$admin" "$q" >"$tmp/peek.json"
[ "$(grep -c . "$tmp/peek.json")" = 3 ] || fail "want 3 messages, got: $(cat "$tmp/peek.json")"
[ "$(grep -c '"expiresOn":"9999-12-31' "$tmp/peek.json")" = 3 ] || fail "messages expire: $(cat "$tmp/peek.json")"

# `sqlq config check` with that SAS: the credential works, metadata cannot be read, no FAIL.
"$sqlq" config check --db "$conn" --table orders --queue "$q" --queue-connection "$add_only" >"$tmp/check.log" 2>&1 \
    || fail "config check with an add-only SAS exited $?: $(cat "$tmp/check.log")"
grep -q "may not read its metadata" "$tmp/check.log" || fail "config check does not explain the add-only SAS"

# message_ttl_s per route (config file) applies to main-queue messages only; poison copies of
# the bridge (here a change too large under --oversize poison) never expire; 0 is refused.
insert ttl 1
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO ttl VALUES (2, printf('%.2000c', 'x'));"
printf '{"routes": [{"table": "ttl", "queue": "%s-ttl", "message_ttl_s": 3600}]}' "$q" >"$tmp/ttl.json"
for name in "$q-ttl" "$q-ttl-poison"; do "$sqlq" queue create "$name" --queue-connection "$admin" >/dev/null; done
"$sqlq" bridge --db "$conn" --config "$tmp/ttl.json" --once --oversize poison --max-message-bytes 1024 \
    --queue-connection "$add_only" >"$tmp/ttl.log" 2>&1 || fail "bridge --once with message_ttl_s 3600 exited $?"
node "$peer" peek "$admin" "$q-ttl" >"$tmp/peek-ttl.json"
[ "$(grep -c . "$tmp/peek-ttl.json")" = 1 ] || fail "want 1 message in $q-ttl: $(cat "$tmp/peek-ttl.json")"
grep -q '"expiresOn":"9999' "$tmp/peek-ttl.json" && fail "message_ttl_s 3600 was not applied"
node "$peer" peek "$admin" "$q-ttl-poison" >"$tmp/peek-ttl-poison.json"
[ "$(grep -c '"expiresOn":"9999-12-31' "$tmp/peek-ttl-poison.json")" = 1 ] \
    || fail "the bridge's poison copy expires: $(cat "$tmp/peek-ttl-poison.json")"
set +e
"$sqlq" bridge --db "$conn" --table ttl --queue "$q" --message-ttl-s 0 --queue-connection "$admin" >"$tmp/ttl0.log" 2>&1
code=$?
set -e
[ "$code" = 2 ] && grep -q "message_ttl_s: 0 is not allowed" "$tmp/ttl0.log" || fail "message_ttl_s 0: exit $code"

# A queue that does not exist: created at the first put with a credential that may create ...
insert created 1 2 3
"$sqlq" bridge --db "$conn" --table created --queue "$q-new" --once \
    --queue-connection "$admin" >"$tmp/create.log" 2>&1 || fail "bridge --once on a missing queue exited $?"
[ "$(count "$q-new")" = 3 ] || fail "the missing queue was not created and filled"
# ... and with one that may not, the refused create is named, nothing is poisoned, exit 1.
set +e
insert refused 1
"$sqlq" bridge --db "$conn" --table refused --queue "$q-none" --once --once-outage-s 3 \
    --queue-connection "$add_only" >"$tmp/refused.log" 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "bridge --once with a create refused exited $code (want 1)"
grep -q "queue $q-none does not exist and this credential may not create it" "$tmp/refused.log" \
    || fail "the refused create is not reported as such"
[ "$(count "$q-poison")" = 0 ] || fail "changes went to poison"

# --- 2. a SAS that expires mid-run
expires_in=8
short=$(node "$peer" account "$admin" o a "$expires_in")
se=$(printf '%s' "$short" | sed -n 's/.*se=\([^&]*\).*/\1/p' | sed 's/%3A/:/g')
port=$("$src/tests/support/free_port.sh")
insert expiry 1 2 3
"$sqlq" bridge --db "$conn" --table expiry --queue "$q" --polling-interval-ms 100 \
    --listen "127.0.0.1:$port" --queue-connection "$short" >"$tmp/expiry.log" 2>&1 &
pid=$!
metric() { curl -s "http://127.0.0.1:$port/metrics" | sed -n "s/^$1 \([0-9]*\)$/\1/p"; }
ready() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz"; }
published() { metric "sqlq_changes_published_total{table=\"expiry\",queue=\"$q\"}"; }
for _ in $(seq 100); do [ "$(published)" = 3 ] && break; kill -0 "$pid" || fail "bridge exited"; sleep 0.1; done
[ "$(published)" = 3 ] || fail "the 3 changes made before expiry were not published"
[ "$(ready)" = 200 ] || fail "/readyz not 200 before expiry"
insert expiry 4 # before expiry, published at once
while [ "$(date -u +%s)" -le "$(date -u -d "$se" +%s)" ]; do sleep 0.2; done
# Idle and expired: the route's probe notices (every 5 s when healthy), then backs off.
before=$(refused)
sleep 12
idle_failed=$(($(refused) - before))
[ "$(ready)" = 503 ] || fail "/readyz $(ready) while idle with an expired SAS (want 503)"
[ "$idle_failed" -le 6 ] || fail "$idle_failed requests refused in 12 s while idle: a hot loop"
insert expiry 5 6 7
before=$(refused)
sleep 15 # the outage: 3 changes waiting
after=$(refused)
kill -0 "$pid" || fail "bridge exited during the outage"
[ "$(ready)" = 503 ] || fail "/readyz $(ready) during the outage (want 503)"
grep -q "cause=\"SAS expired at $se" "$tmp/expiry.log" || fail "no log line naming the expired SAS ($se)"
lines=$(grep -c 'event=queue_outage' "$tmp/expiry.log" || true)
[ "$lines" -le 3 ] || fail "$lines queue_outage lines in 27 s (want a rate-limited few)"
failed=$((after - before))
# Back-off 1, 2, 4, 8 s with one probing message per step: about 5 requests, never a hot loop.
[ "$failed" -le 12 ] || fail "$failed requests refused in 15 s: a hot loop"
[ "$(count "$q-poison")" = 0 ] || fail "the expired SAS sent changes to poison"
kill -TERM "$pid"
set +e
wait "$pid"
code=$?
set -e
pid=""
[ "$code" = 0 ] || fail "SIGTERM during the outage: exit $code (want 0)"

fresh=$(node "$peer" account "$admin" o a 3600)
"$sqlq" bridge --db "$conn" --table expiry --queue "$q" --once \
    --queue-connection "$fresh" >"$tmp/fresh.log" 2>&1 || fail "bridge --once with a fresh SAS exited $?"
# 3 from part 1 (table orders) + 7 (table expiry), each change at least once.
node "$peer" peek "$admin" "$q" >"$tmp/peek.json"
for i in 1 2 3 4 5 6 7; do
    grep -F '\"table\":\"expiry\"' "$tmp/peek.json" | grep -qF "\\\"key\\\":{\\\"id\\\":$i}" \
        || fail "change $i is not in the main queue"
done
total=$(grep -c . "$tmp/peek.json")
[ "$total" -ge 10 ] || fail "want at least 10 messages in the main queue, got $total"
[ "$(count "$q-poison")" = 0 ] || fail "changes went to poison"
grep -q 'poisoned=0' "$tmp/fresh.log" || fail "the restarted bridge poisoned changes"
echo "ok (requests refused: $idle_failed in 12 s idle, $failed in 15 s with changes waiting)"
