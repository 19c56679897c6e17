#!/usr/bin/env bash
# docker/monitoring/: the alert rules pass `promtool check rules`, and every metric name the
# dashboard and the rules use is one that sqlq exports: scraped from the /metrics of a real
# `sqlq bridge` (SQLite, one route), `sqlq consume` and `sqlq console` against the fixtures'
# Azurite, after a change went through.
set -euo pipefail
: "${SQLQ_BIN:?run through ctest}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
mon="$SQLQ_SOURCE_DIR/docker/monitoring"
work=$(mktemp -d)
q="mon-$$-$RANDOM"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "monitoring_files: $*" >&2; exit 1; }
command -v promtool >/dev/null || fail "promtool is missing: scripts/install-deps.sh installs it (Debian package prometheus)"

# 1. the rules as Prometheus reads them
promtool check rules "$mon/sqlq-alerts.yml" || fail "promtool check rules failed"

# 2. a real run of each daemon and of the console, and their /metrics
port() { "$SQLQ_SOURCE_DIR/tests/support/free_port.sh"; }
scrape() { # URL FILE: until it answers with sqlq_ lines
    for _ in $(seq 1 100); do
        curl -sf "$1" >"$2" 2>/dev/null && grep -q '^sqlq_' "$2" && return 0
        sleep 0.1
    done
    fail "no metrics at $1"
}
db="Driver={SQLite3};Database=$work/shop.db;Timeout=5000;"
sqlite3 "$work/shop.db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)"
"$SQLQ_BIN" setup --db "$db" --table orders >/dev/null
"$SQLQ_BIN" queue create "$q" >/dev/null
bp=$(port)
"$SQLQ_BIN" bridge --db "$db" --table orders --queue "$q" --listen "127.0.0.1:$bp" \
    --log-level warn 2>"$work/bridge.log" &
pids+=($!)
sqlite3 "$work/shop.db" "INSERT INTO orders VALUES (1, 'one')"
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$bp/metrics" | grep -q '^sqlq_changes_published_total{[^}]*} [1-9]' && break
    sleep 0.1
done
scrape "http://127.0.0.1:$bp/metrics" "$work/bridge.prom"
cp_=$(port)
"$SQLQ_BIN" consume "$q" --noop --listen "127.0.0.1:$cp_" --max-polling-interval-ms 200 \
    --log-level warn 2>"$work/consume.log" &
pids+=($!)
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$cp_/metrics" | grep -q '^sqlq_messages_consumed_total{[^}]*} [1-9]' && break
    sleep 0.1
done
scrape "http://127.0.0.1:$cp_/metrics" "$work/consume.prom"
"$SQLQ_BIN" console --console-listen 127.0.0.1:0 --table orders --queue "$q" >"$work/console.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q 'serving on' "$work/console.out" && break; sleep 0.1; done
curl_url=$(grep -o 'http://[^ ]*' "$work/console.out" | head -1) || fail "console did not start"
scrape "${curl_url}metrics" "$work/console.prom"

# 3. every sqlq_ name used must be exported (a histogram's _bucket/_sum/_count as rendered)
cat "$work"/*.prom | grep -o '^sqlq_[a-z_]*' | sort -u >"$work/exported"
grep -oh 'sqlq_[a-z_]*' "$mon/sqlq-dashboard.json" "$mon/sqlq-alerts.yml" | sort -u >"$work/used"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$mon/sqlq-dashboard.json" ||
    fail "the dashboard is not JSON"
[ -s "$work/used" ] || fail "no sqlq_ metric found in the dashboard and rules"
# Metrics of states this run does not reach (a stopped capture, a logical route's slot) count
# as exported when the source defines them under that exact name.
for m in sqlq_route_stopped sqlq_slot_retained_wal_bytes; do
    grep -rqs "\"$m\"" "$SQLQ_SOURCE_DIR/bridge" "$SQLQ_SOURCE_DIR/common" ||
        fail "$m is not a metric sqlq defines"
    echo "$m" >>"$work/exported"
done
sort -u -o "$work/exported" "$work/exported"
missing=$(comm -23 "$work/used" "$work/exported")
[ -z "$missing" ] || fail "used but not exported by sqlq: $(echo $missing) (exported: $(echo $(cat "$work/exported")))"
echo "monitoring_files: ok: $(wc -l <"$work/used") metric names used, all exported"
