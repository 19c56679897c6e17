#!/usr/bin/env bash
# `sqlq config check`: validates a bridge configuration and connects to both ends without
# changing anything; each problem is reported on its own line; exit 0 / 1 / 2.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?run through ctest}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc CODE cmd...
    local want=$1 got=0
    shift
    "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
    [ "$got" -eq "$want" ] || { cat "$tmp/out" "$tmp/err" >&2; fail "exit $got, wanted $want: $*"; }
}
conn_q=$(cat "$env_dir/azurite/conn")
export SQLQ_QUEUE_CONNECTION="$conn_q"
db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 "$db" "CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT); CREATE TABLE nokey(a TEXT);"
q="check-$$"

# Not set up yet: the check says what to run, and creates nothing.
expect_rc 1 "$sqlq" config check --db "$conn" --table orders --queue "$q"
grep -q "^ok   database: connected" "$tmp/out" || fail "no database line"
grep -q "^FAIL table orders.*sqlq setup" "$tmp/out" || fail "missing setup hint"
grep -q "does not exist yet" "$tmp/out" || fail "missing queue note"
[ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlq%'")" = 0 ] \
    || fail "check created objects"
"$sqlq" queue list --queue-connection "$conn_q" | grep -qx "$q" && fail "check created the queue"

"$sqlq" setup --db "$conn" --table orders >/dev/null
before=$(sqlite3 "$db" "SELECT group_concat(name) FROM sqlite_master ORDER BY name")
expect_rc 0 "$sqlq" config check --db "$conn" --table orders --queue "$q"
grep -q "^0 problems found" "$tmp/out" || fail "not clean after setup"
[ "$(sqlite3 "$db" "SELECT group_concat(name) FROM sqlite_master ORDER BY name")" = "$before" ] \
    || fail "check changed the schema"
# A column selection naming a column the table lacks
expect_rc 1 "$sqlq" config check --db "$conn" --table orders --queue "$q" --columns totl
grep -q "^FAIL table orders: every column of columns exists: no column 'totl'" "$tmp/out" || fail "unknown column not reported"

# x1: a route asking for what the change log does not keep is a configuration error (exit 2,
# as the bridge says), every missing setup option named at once; the FAIL line does not read
# as if the earlier checks had passed.
expect_rc 2 "$sqlq" config check --db "$conn" --table orders --queue "$q" --changed --before-image
grep -q "^FAIL table orders: keys changed and before_image: .*--track-columns --before-image" "$tmp/out" \
    || { cat "$tmp/out" >&2; fail "missing setup options not both reported"; }
grep -q "exists, has a key" "$tmp/out" && { cat "$tmp/out" >&2; fail "FAIL line reads as if checks passed"; }
expect_rc 2 "$sqlq" config check --db "$conn" --table orders --queue "$q" --changed
grep -q "^FAIL table orders: key changed: .*--track-columns\` first" "$tmp/out" || { cat "$tmp/out" >&2; fail "missing --track-columns not reported"; }

# Routes from a file: every route is checked, each problem on its own line.
cat >"$tmp/routes.json" <<JSON
{"db": "$conn", "routes": [{"table": "orders", "queue": "$q"},
                           {"table": "nokey", "queue": "$q-b"},
                           {"table": "missing", "queue": "$q-c"}]}
JSON
expect_rc 1 "$sqlq" config check --config "$tmp/routes.json"
grep -q "^FAIL table nokey: table nokey has no primary key" "$tmp/out" || { cat "$tmp/out" >&2; fail "no-key table not reported"; }
grep -q "^FAIL table missing" "$tmp/out" || fail "missing table not reported"
grep -q "^2 problems found" "$tmp/out" || fail "wrong problem count"

# Wrong credentials: the queue side fails with the service's error code, and the key never prints.
bad=$(printf '%s' "$conn_q" | sed 's|AccountKey=[^;]*|AccountKey=d3JvbmdrZXl3cm9uZ2tleXdyb25na2V5|')
expect_rc 1 env SQLQ_QUEUE_CONNECTION="$bad" "$sqlq" config check --db "$conn" --table orders --queue "$q"
grep -q "^FAIL queue $q.*403" "$tmp/out" || fail "auth failure not reported"
grep -q "^FAIL queue $q: reachable with these credentials: key rejected: " "$tmp/out" \
    || { cat "$tmp/out" >&2; fail "the rejected key is not named as the cause"; }
grep -q "d3JvbmdrZXl3cm9uZ2tleXdyb25na2V5" "$tmp/out" "$tmp/err" && fail "key printed"
# An expired SAS (properly signed, expired an hour ago): the same diagnosis as the bridge's
# (retry/fault.c), not only the service's generic 403 AuthenticationFailed.
expired=$(node "${SQLQ_SOURCE_DIR:?}/tests/support/queue_sas.js" account "$conn_q" sco rwdlacup -3600)
se=$(printf '%s' "$expired" | sed -n 's/.*se=\([^&;]*\).*/\1/p' | sed 's/%3A/:/g')
[ -n "$se" ] || fail "no se= in the SAS: $expired"
expect_rc 1 env SQLQ_QUEUE_CONNECTION="$expired" "$sqlq" config check --db "$conn" --table orders --queue "$q"
echo "config check, expired SAS: $(grep "^FAIL queue" "$tmp/out")"
grep -q "^FAIL queue $q: reachable with these credentials: SAS expired at $se: restart with a fresh SAS" "$tmp/out" \
    || { cat "$tmp/out" >&2; fail "the expired SAS is not named as the cause"; }
grep -q "403" "$tmp/out" || { cat "$tmp/out" >&2; fail "the service's answer is not kept"; }
sig=$(printf '%s' "$expired" | sed -n 's/.*sig=\([^&;]*\).*/\1/p')
grep -qF "$sig" "$tmp/out" "$tmp/err" && fail "SAS signature printed"

# A mistyped SQLite path: reported, and no empty database file is created (check changes nothing).
expect_rc 1 "$sqlq" config check --db "Driver={SQLite3};Database=$tmp/typo.db" --table orders --queue "$q"
grep -q "^FAIL database: the SQLite file $tmp/typo.db does not exist" "$tmp/out" || fail "missing SQLite file not reported"
[ ! -e "$tmp/typo.db" ] || fail "config check created $tmp/typo.db"

# Invalid configuration: exit 2 naming key and value.
expect_rc 2 "$sqlq" config check --db "$conn" --table orders --queue "$q" --max-batch-size 0
grep -q "max-batch-size: 0 is out of range" "$tmp/err" || fail "bad value not named"
expect_rc 2 "$sqlq" config bogus
# No database: the error names the command that was run, not the bridge.
expect_rc 2 env -u SQLQ_DB_CONNECTION -u SQLQ_DB_CONNECTION_FILE "$sqlq" config check --queue "$q"
grep -q "^sqlq config check: db is not set" "$tmp/err" || { cat "$tmp/err" >&2; fail "wrong prefix for a missing db"; }
echo "config check: ok"
