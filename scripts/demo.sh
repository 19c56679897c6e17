#!/usr/bin/env bash
# demo: the main job, end to end, on a fresh Debian machine. Installs what is missing
# (scripts/install-deps.sh), builds sqlq into build-demo/ (build/ is scripts/test.sh's), starts
# a private in-memory Azurite unless SQLQ_QUEUE_CONNECTION or AzureWebJobsStorage names a queue
# service, creates a SQLite database with an orders table, runs `sqlq setup` and `sqlq bridge`,
# makes changes with sqlite3, shows the messages as they arrive, stops all it started, exits 0.
#   scripts/demo.sh              the whole demo
#   scripts/demo.sh --no-install skip install-deps (already done)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
install=yes
for arg in "$@"; do
    case "$arg" in
        --no-install) install=no ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "demo: unknown option $arg" >&2; exit 2 ;;
    esac
done

work=$(mktemp -d "${TMPDIR:-/tmp}/sqlq-demo.XXXXXX")
bridge_pid=""
azurite_dir=""
queue=""
cleanup() {
    local rc=$?
    if [ -n "$bridge_pid" ] && kill -0 "$bridge_pid" 2>/dev/null; then
        kill -TERM "$bridge_pid" 2>/dev/null || true
        wait "$bridge_pid" 2>/dev/null || true
    fi
    if [ -n "$queue" ] && [ -x "${sqlq:-}" ] && [ -z "$azurite_dir" ]; then
        "$sqlq" queue delete "$queue" >/dev/null 2>&1 || true # a real account: leave nothing behind
    fi
    [ -n "$azurite_dir" ] && "$root/tests/support/azurite.sh" stop "$azurite_dir" >/dev/null 2>&1 || true
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. dependencies (scripts/install-deps.sh)"
if [ "$install" = yes ]; then "$root/scripts/install-deps.sh"; else echo "skipped (--no-install)"; fi

step "2. build (cmake → build-demo/)"
# Its own build directory: one configured without tests must never be what scripts/test.sh runs.
cmake -S "$root" -B "$root/build-demo" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSQLQ_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build-demo" -j"$(nproc)" --target sqlq >/dev/null
sqlq="$root/build-demo/cli/sqlq"
"$sqlq" --version

step "3. queue service"
if [ -z "${SQLQ_QUEUE_CONNECTION:-}" ] && [ -z "${AzureWebJobsStorage:-}" ]; then
    azurite_dir="$work/azurite"
    "$root/tests/support/azurite.sh" start "$azurite_dir"
    SQLQ_QUEUE_CONNECTION=$(cat "$azurite_dir/conn")
    export SQLQ_QUEUE_CONNECTION
else
    echo "using the queue service of SQLQ_QUEUE_CONNECTION / AzureWebJobsStorage"
fi

step "4. a SQLite database with an orders table, and sqlq setup"
db="$work/shop.db"
export SQLQ_DB_CONNECTION="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 -cmd ".timeout 5000" "$db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL,
               total NUMERIC NOT NULL, status TEXT NOT NULL DEFAULT 'new', created TEXT);"
echo "sqlq setup --table orders"
"$sqlq" setup --table orders

queue="orders-demo-$$"
step "5. sqlq bridge --table orders --queue $queue (in the background)"
"$sqlq" bridge --table orders --queue "$queue" --polling-interval-ms 200 >"$work/bridge.log" 2>&1 &
bridge_pid=$!
sleep 1
kill -0 "$bridge_pid" 2>/dev/null || { cat "$work/bridge.log" >&2; echo "demo: the bridge did not start" >&2; exit 1; }

step "6. inserts, an update and a delete with sqlite3"
sql() { echo "  sqlite> $1"; sqlite3 -cmd ".timeout 5000" "$db" "$1"; }
sql "INSERT INTO orders (customer, total, created) VALUES ('ada', 19.90, datetime('now'));"
sql "INSERT INTO orders (customer, total, created) VALUES ('grace', 250.00, datetime('now'));"
sql "INSERT INTO orders (customer, total, created) VALUES ('linus', 7.5, datetime('now'));"
sql "UPDATE orders SET status = 'paid' WHERE customer = 'ada';"
sql "DELETE FROM orders WHERE customer = 'linus';"

step "7. the messages in queue $queue (sqlq queue get, decoded)"
# Each line of `sqlq queue get` is JSON with the decoded body; show the body, pretty-printed.
show() {
    node -e '
        const lines = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean);
        for (const l of lines) {
            const m = JSON.parse(l);
            console.log(`message ${m.id} (dequeue ${m.dequeue_count}):`);
            try { console.log(JSON.stringify(JSON.parse(m.body), null, 2)); } catch { console.log(m.body ?? m.text); }
        }
        process.exitCode = lines.length ? 0 : 3;'
}
sleep 1.5 # a few polls (every 200 ms) have gone by
got=0
for _ in $(seq 50); do
    out=$("$sqlq" queue get "$queue" --limit 32 --visibility-s 300)
    if [ -n "$out" ]; then
        printf '%s\n' "$out" | show
        got=$((got + $(printf '%s\n' "$out" | grep -c .)))
    elif [ "$got" -ge 3 ]; then
        break
    fi
    sleep 0.2
done
echo
echo "$got messages, base64 JSON as an Azure Functions queue trigger reads them. Changes to one"
echo "row between two polls arrive as one message with the latest state (op is relative to what"
echo "was delivered before). Bridge log:"
sed 's/^/  /' "$work/bridge.log"
[ "$got" -ge 3 ] || { echo "demo: expected at least 3 messages" >&2; exit 1; }

step "8. stop (SIGTERM): the bridge finishes what is in flight and exits 0"
kill -TERM "$bridge_pid"
wait "$bridge_pid"
echo "bridge exited with $?"
bridge_pid=""
