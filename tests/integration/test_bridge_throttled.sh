#!/usr/bin/env bash
# A queue service that answers every request 503 ServerBusy (a fake one, in Node, counting the
# requests it gets): the bridge waits without a hot loop (the issue saw about 465 puts/s),
# reports /readyz 503 and the cause, counts no attempt, and when pointed at a working queue
# service (Azurite) delivers every change with none in poison.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
azurite=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
tmp=$(mktemp -d)
q="busy-$$-$RANDOM"
pid=""
fake=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    [ -n "$fake" ] && kill "$fake" 2>/dev/null
    for name in "$q" "$q-poison"; do SQLQ_QUEUE_CONNECTION=$azurite "$sqlq" queue delete "$name" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -10 >&2; }; done
    exit 1
}
unset SQLQ_QUEUE_CONNECTION SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true

fport=$("$src/tests/support/free_port.sh")
node -e '
const http = require("http");
const fs = require("fs");
let n = 0;
http.createServer((req, res) => {
  fs.writeFileSync(process.argv[2], String(++n));
  req.resume();
  res.writeHead(503, { "x-ms-error-code": "ServerBusy", "content-type": "application/xml" });
  res.end("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy</Code>" +
          "<Message>The server is busy.</Message></Error>");
}).listen(Number(process.argv[1]), "127.0.0.1");
' "$fport" "$tmp/requests" &
fake=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$fport/" && break; sleep 0.1; done
requests() { cat "$tmp/requests" 2>/dev/null || echo 0; }
key=$(echo "$azurite" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
busy="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;QueueEndpoint=http://127.0.0.1:$fport/devstoreaccount1;"

db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 -cmd ".timeout 5000" "$db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, v TEXT);"
"$sqlq" setup --db "$conn" --table orders >/dev/null 2>&1 || fail "setup"
for i in $(seq 20); do sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO orders VALUES ($i, 'v$i');"; done

port=$("$src/tests/support/free_port.sh")
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --polling-interval-ms 50 --max-attempts 2 \
    --listen "127.0.0.1:$port" --queue-connection "$busy" >"$tmp/busy.log" 2>&1 &
pid=$!
sleep 20
kill -0 "$pid" || fail "bridge exited while the service was busy"
n=$(requests)
# 20 changes, 20 s: a first round of 20 puts, each retried by the client for about 5 s, then one
# probing put per back-off step (itself retried for about 5 s). A hot loop makes thousands.
[ "$n" -le 250 ] || fail "$n requests in 20 s against a busy service: a hot loop"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 503 ] || fail "/readyz not 503"
grep -q 'event=queue_outage .*cause="queue service busy (HTTP 503 ServerBusy)' "$tmp/busy.log" \
    || fail "no queue_outage line naming the throttling"
grep -q 'event=change_poisoned' "$tmp/busy.log" && fail "a busy service made the bridge poison changes"
kill -TERM "$pid"
set +e
wait "$pid"
code=$?
set -e
pid=""
[ "$code" = 0 ] || fail "SIGTERM while the service was busy: exit $code (want 0)"

# The service is back (here: Azurite): everything arrives, nothing was counted (max_attempts 2).
"$sqlq" bridge --db "$conn" --table orders --queue "$q" --max-attempts 2 --once --queue-connection "$azurite" \
    >"$tmp/after.log" 2>&1 || fail "bridge --once against Azurite exited $?"
grep -q "messages=20 released=20 poisoned=0" "$tmp/after.log" || fail "not every change was delivered after the busy spell"
echo "ok ($n requests in 20 s against a service answering 503)"
