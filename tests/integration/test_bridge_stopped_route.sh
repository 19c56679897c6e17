#!/usr/bin/env bash
# A route that cannot capture still says what waits, on one change-log database (argument:
# sqlite, postgres or mariadb). The table is keyed by a unique index (--key-columns id); the
# index is replaced by one on (id, aa) under a running bridge: capture stops with
# table_key_changed while the triggers keep logging. Then:
# - sqlq_pending_changes counts the two changes the log holds (measured from the log),
#   sqlq_oldest_pending_change_age_seconds grows, sqlq_route_stopped{reason="table_key_changed"}
#   is 1, and no poll_failed line says transient=true (a key change is no transient fault);
# - `sqlq status` prints the counts and the reason (text and JSON), exit 1;
# - the index made again on (id): capture goes on, the changes arrive, the gauge returns to 0.
# docs/bridge.md (Metrics), docs/capture.md (Schema changes).
set -euo pipefail
kind=${1:?usage: test_bridge_stopped_route.sh sqlite|postgres|mariadb}
pid=""
fail() {
    echo "FAIL: $kind: $*" >&2
    grep '^sqlq_\(pending\|oldest\|route_stopped\)' "$tmp/metrics" >&2 || true
    tail -20 "$tmp/bridge.log" >&2 || true
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_KEY_COLUMNS || true
prefix=stoproute
. "$(dirname "$0")/../support/change_log_db.sh"
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; cleanup' EXIT

drop_index() { if [ "$kind" = mariadb ]; then sql "DROP INDEX $1 ON t"; else sql "DROP INDEX $1"; fi; }
sql "CREATE TABLE t (id INTEGER NOT NULL, aa INTEGER NOT NULL, v VARCHAR(20))"
sql "CREATE UNIQUE INDEX t_id ON t (id)"
"$sqlq" setup --db "$conn" --table t --key-columns id >/dev/null
q="stoproute-$kind-$$"
queues+=("$q")
lport=$("$(dirname "$0")/../support/free_port.sh")
base="http://127.0.0.1:$lport"
"$sqlq" bridge --db "$conn" --table t --queue "$q" --polling-interval-ms 100 \
    --listen "127.0.0.1:$lport" >"$tmp/bridge.out" 2>"$tmp/bridge.log" &
pid=$!

wait_for() { # WHAT SECONDS CMD...
    local what=$1 secs=$2
    shift 2
    for _ in $(seq $((secs * 5))); do
        "$@" && return 0
        kill -0 "$pid" 2>/dev/null || fail "bridge exited while waiting for: $what"
        sleep 0.2
    done
    fail "timed out waiting for: $what"
}
metric() { # NAME_WITH_LABELS: its value ("" when absent), the scrape kept in $tmp/metrics
    curl -s "$base/metrics" >"$tmp/metrics" || return 1
    grep -F "$1 " "$tmp/metrics" | sed -n 's/.* \([0-9.e+-]*\)$/\1/p' | head -1
}
metric_is() { [ "$(metric "$1")" = "$2" ]; }
metric_above() { local v; v=$(metric "$1"); [ -n "$v" ] && awk -v v="$v" -v m="$2" 'BEGIN { exit !(v > m) }'; }

sql "INSERT INTO t VALUES (1, 1, 'first')"
wait_for "the first change delivered" 30 metric_is "sqlq_changes_published_total{table=\"t\",queue=\"$q\"}" 1

drop_index t_id
sql "CREATE UNIQUE INDEX t_id_aa ON t (id, aa)"
sql "INSERT INTO t VALUES (2, 1, 'second')"
sql "INSERT INTO t VALUES (3, 1, 'third')"
stopped='sqlq_route_stopped{table="t",reason="table_key_changed"}'
wait_for "capture stopped with table_key_changed" 30 metric_is "$stopped" 1
wait_for "the pending count measured from the log" 30 metric_is 'sqlq_pending_changes{table="t"}' 2
wait_for "the oldest pending change's age growing" 40 \
    metric_above 'sqlq_oldest_pending_change_age_seconds{table="t"}' 0
grep -q 'event=table_key_changed' "$tmp/bridge.log" || fail "no table_key_changed line"
if grep 'event=poll_failed' "$tmp/bridge.log" | grep -q 'transient=true'; then
    fail "a key change was logged as a transient poll failure: $(grep 'event=poll_failed' "$tmp/bridge.log" | head -2)"
fi
echo "$kind: capture stopped: pending 2 from the log, age growing, sqlq_route_stopped 1: ok"

code=0
"$sqlq" status --db "$conn" --table t >"$tmp/status" 2>&1 || code=$?
[ "$code" = 1 ] || fail "status exit $code, expected 1 (capture stopped): $(cat "$tmp/status")"
grep -q 'capture stopped (table_key_changed)' "$tmp/status" || fail "status names no reason: $(cat "$tmp/status")"
grep -q 'pending 2' "$tmp/status" || fail "status prints no count: $(cat "$tmp/status")"
"$sqlq" status --db "$conn" --table t --json >"$tmp/status.json" 2>/dev/null || true
python3 - "$tmp/status.json" <<'EOF' || fail "status --json: $(cat "$tmp/status.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
b = doc["tables"][0]["bridges"][0]
assert b["stopped"] == "table_key_changed", b
assert b["pending"] == 2, b
assert "error" in b and "sync_version" in b, b
EOF
echo "$kind: status prints the counts and the reason: ok"

drop_index t_id_aa
sql "CREATE UNIQUE INDEX t_id ON t (id)"
wait_for "capture going on after the index came back" 60 metric_is "$stopped" 0
wait_for "the changes delivered" 30 metric_is 'sqlq_pending_changes{table="t"}' 0
echo "$kind: the index made again: capture goes on, sqlq_route_stopped 0: ok"
grep -q "event=capture_resumed" "$tmp/bridge.log" || fail "no capture_resumed line"
