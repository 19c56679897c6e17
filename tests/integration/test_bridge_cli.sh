#!/usr/bin/env bash
# `sqlq bridge` as users run it: invalid settings exit 2 naming the key and the value; a config
# file with two routes and a per-route override, secrets from *_FILE and AzureWebJobsStorage;
# a table that was never set up exits 1, naming the setup command, which runs as pasted for a
# name that needs quoting; /metrics and /readyz while running; SIGTERM exits 0.
set -euo pipefail

bin=${SQLQ_BIN:?}
azurite=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
tmp=$(mktemp -d)
qa="cli-a-$$-$RANDOM"
qb="cli-b-$$-$RANDOM"
pid=""
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    for q in "$qa" "$qb"; do SQLQ_QUEUE_CONNECTION=$azurite "$bin" queue delete "$q" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log "$tmp"/err; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    exit 1
}
unset SQLQ_QUEUE_CONNECTION SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true

db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 -cmd ".timeout 5000" "$db" "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT);
               CREATE TABLE never (id INTEGER PRIMARY KEY);"
"$bin" setup --db "$conn" --table a >/dev/null 2>&1 || fail "setup a"
"$bin" setup --db "$conn" --table b >/dev/null 2>&1 || fail "setup b"

# --- invalid settings: exit 2, the message names the key and the value
expect_usage() { # expect_usage WHAT-MUST-APPEAR... -- ARGS...
    local want=()
    while [ "$1" != -- ]; do want+=("$1"); shift; done
    shift
    set +e
    env SQLQ_QUEUE_CONNECTION="$azurite" "$@" >"$tmp/out" 2>"$tmp/err"
    local code=$?
    set -e
    [ "$code" = 2 ] || fail "exit $code (want 2) for: $*"
    for w in "${want[@]}"; do grep -qF -- "$w" "$tmp/err" || fail "message lacks '$w' for: $* :: $(cat "$tmp/err")"; done
}
expect_usage --max-batch-size "0 is out of range" -- "$bin" bridge --db "$conn" --table a --queue "$qa" --max-batch-size 0
expect_usage --format xml -- "$bin" bridge --db "$conn" --table a --queue "$qa" --format xml
expect_usage queue Bad_Name -- "$bin" bridge --db "$conn" --table a --queue Bad_Name
expect_usage SQLQ_POLLING_INTERVAL_MS abc -- env SQLQ_POLLING_INTERVAL_MS=abc "$bin" bridge --db "$conn" --table a --queue "$qa"
expect_usage "db is not set" -- "$bin" bridge --table a --queue "$qa"
expect_usage "queue is not set" -- "$bin" bridge --db "$conn" --table a
expect_usage "--no-such-flag" -- "$bin" bridge --db "$conn" --table a --queue "$qa" --no-such-flag
long=$(printf 'q%.0s' $(seq 60))
expect_usage "$long" poison -- "$bin" bridge --db "$conn" --table a --queue "$long"
printf '{"routes": [{"table": "a", "queue": "%s", "format": "xml"}]}' "$qa" >"$tmp/bad.json"
expect_usage "routes[0]" format xml -- "$bin" bridge --db "$conn" --config "$tmp/bad.json"
printf '{"routes": [{"table": "a", "queue": "%s", "max_in_flight": 0}]}' "$qa" >"$tmp/bad.json"
expect_usage "routes[0]" max_in_flight 0 -- "$bin" bridge --db "$conn" --config "$tmp/bad.json"
printf '{"routes": [{"table": "a", "queue": "%s"}, {"table": "a", "queue": "%s"}]}' "$qa" "$qb" >"$tmp/bad.json"
expect_usage "appears twice" -- "$bin" bridge --db "$conn" --config "$tmp/bad.json"
printf '{"routes": [{"table": "a", "queue": "%s", "colour": "red"}]}' "$qa" >"$tmp/bad.json"
expect_usage "routes[0]" colour -- "$bin" bridge --db "$conn" --config "$tmp/bad.json"

# --- a table that was never set up: the operation fails (exit 1) and says why
set +e
SQLQ_QUEUE_CONNECTION=$azurite "$bin" bridge --db "$conn" --table never --queue "$qa" --once >"$tmp/never.log" 2>&1
code=$?
set -e
[ "$code" = 1 ] || fail "bridge on a table without setup exited $code (want 1)"
grep -q "never" "$tmp/never.log" || fail "no mention of the table in: $(cat "$tmp/never.log")"

# --- a name that needs quoting: the setup command the bridge and status name runs as pasted
sqlite3 -cmd ".timeout 5000" "$db" 'CREATE TABLE "it'"'"'s ""odd"" t" (id INTEGER PRIMARY KEY)'
odd='"it'"'"'s ""odd"" t"'
pasted() { # the `sqlq setup --table …` command in $1
    echo "$1" | grep -o '`sqlq setup --table [^`]*`' | head -1 | tr -d '`'
}
out=$("$bin" status --db "$conn" --table "$odd" 2>&1) && fail "status of a table not set up exited 0: $out"
cmd=$(pasted "$out")
eval "set -- $cmd"
[ "${4-}" = "$odd" ] || fail "status's setup command ($cmd) does not give back $odd: $out"
out=$(SQLQ_QUEUE_CONNECTION=$azurite "$bin" bridge --db "$conn" --table "$odd" --queue "$qa" --once 2>&1) \
    && fail "bridge on $odd without setup exited 0"
cmd=$(pasted "$(echo "$out" | grep '^sqlq bridge: ')") # the error line, not the escaped log line
[ -n "$cmd" ] || fail "no setup command in: $out"
eval "\"\$bin\" ${cmd#sqlq } --db \"\$conn\"" >"$tmp/odd.log" 2>&1 || fail "the command said ($cmd) failed"
SQLQ_QUEUE_CONNECTION=$azurite "$bin" bridge --db "$conn" --table "$odd" --queue "$qa" --once \
    >"$tmp/odd.log" 2>&1 || fail "bridge on $odd after $cmd"

# --- config file with two routes, one override; secrets from files and AzureWebJobsStorage
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z'); INSERT INTO b VALUES (1, 'p'), (2, 'q'), (3, 'r');"
cat >"$tmp/bridge.json" <<JSON
{"polling_interval_ms": 50, "lease_s": 10,
 "routes": [{"table": "a", "queue": "$qa"},
            {"table": "b", "queue": "$qb", "format": "batch"}]}
JSON
printf '%s\n' "$conn" >"$tmp/db.secret"
env SQLQ_DB_CONNECTION_FILE="$tmp/db.secret" AzureWebJobsStorage="$azurite" \
    "$bin" bridge --config "$tmp/bridge.json" --once >"$tmp/routes.log" 2>&1 || fail "bridge with routes failed"
export SQLQ_QUEUE_CONNECTION=$azurite
na=$("$bin" queue peek "$qa" --limit 32 | grep -c '"body"' || true)
nb=$("$bin" queue peek "$qb" --limit 32 | grep -c '"body"' || true)
[ "$na" = 3 ] || fail "queue a has $na messages (want 3: row format)"
[ "$nb" = 1 ] || fail "queue b has $nb messages (want 1: batch format packs the 3 changes)"
"$bin" queue peek "$qb" --limit 1 | grep -q 'changes' || fail "queue b's message is not a batch"
grep -q "PWD\|Timeout=5000" "$tmp/routes.log" && fail "the connection string reached the log"

# --- metrics and readiness while running; SIGTERM exits 0
"$bin" bridge --db "$conn" --table a --queue "$qa" --bridge-name metrics --polling-interval-ms 50 \
    --listen 127.0.0.1:0 >"$tmp/daemon.log" 2>&1 &
pid=$!
port=""
for _ in $(seq 100); do
    port=$(sed -n 's/.*event=http_server_started .*port=\([0-9]*\).*/\1/p' "$tmp/daemon.log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "bridge exited early"
    sleep 0.1
done
[ -n "$port" ] || fail "no port in the log"
sqlite3 -cmd ".timeout 5000" "$db" "INSERT INTO a VALUES (4, 'w');"
# This bridge name sees what the change log still holds: change 4, and change 3 when the trim
# after "default" processed 1..3 kept it as the log's newest row (SQLite's versions continue
# from it, docs/capture.md): 1 or 2 published, never more.
ok=""
for _ in $(seq 100); do
    curl -s "http://127.0.0.1:$port/metrics" >"$tmp/metrics" || true
    if grep -q "^sqlq_changes_published_total{table=\"a\",queue=\"$qa\"} [12]$" "$tmp/metrics"; then ok=1; break; fi
    sleep 0.1
done
[ -n "$ok" ] || fail "sqlq_changes_published_total did not reach 1 or 2: $(grep sqlq_ "$tmp/metrics" | head)"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] || fail "/readyz not 200"
kill -TERM "$pid"
set +e
wait "$pid"
code=$?
set -e
pid=""
[ "$code" = 0 ] || fail "SIGTERM: exit $code (want 0)"
echo "ok"
