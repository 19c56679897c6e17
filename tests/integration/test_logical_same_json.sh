#!/usr/bin/env bash
# The logical source publishes the same JSON as the trigger source: one table with a column of
# every kind of type (pg_text_schema.sql: built-in, extension and user types, domains) set up
# for both sources, the same rows written (pg_text_rows.sql: limits, infinity, BC dates, NULLs,
# large values), a bridge of each drained; every key's row must be equal, value by value, but
# for the differences docs/types.md documents.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
export SQLQ_QUEUE_CONNECTION=$(cat "$env_dir/azurite/conn")
port=$(cat "$env_dir/postgres/port")
name="lgsame_$$_$RANDOM"
conn="$(cat "$env_dir/postgres/odbc")Database=$name;"
tmp=$(mktemp -d)
qt="lgsame-t-$$" ql="lgsame-l-$$"
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    for q in "$qt" "$ql"; do "$sqlq" queue delete "$q" >/dev/null 2>&1 || true; done
    psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE database = '$name' AND NOT active" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

psql_ -d postgres -c "CREATE DATABASE $name"
psql_ -d "$name" -f "$src/tests/integration/pg_text_schema.sql" >/dev/null
"$sqlq" setup --db "$conn" --table t >/dev/null 2>&1 || fail "setup (trigger)"
"$sqlq" setup --db "$conn" --table t --source logical >/dev/null 2>&1 || fail "setup (logical)"
psql_ -d "$name" -f "$src/tests/integration/pg_text_rows.sql" >/dev/null
psql_ -d "$name" -c "UPDATE t SET tx = coalesce(tx, '') || '!' WHERE id % 2 = 0"
"$sqlq" bridge --db "$conn" --table t --queue "$qt" --once >/dev/null 2>"$tmp/t.log" || fail "bridge (trigger)"
"$sqlq" bridge --db "$conn" --table t --queue "$ql" --source logical --once >/dev/null 2>"$tmp/l.log" \
    || fail "bridge (logical): $(tail -3 "$tmp/l.log")"
for q in "$qt" "$ql"; do
    mkdir "$tmp/$q"
    "$sqlq" consume "$q" --exit-when-empty --exec "cat > '$tmp/$q/'\$SQLQ_MESSAGE_ID" >/dev/null 2>&1 \
        || fail "drain $q"
done
python3 - "$tmp/$qt" "$tmp/$ql" <<'PY' || fail "the sources' JSON differs"
import json, os, re, sys
# docs/types.md, "Where the two sources differ": a domain over a date/time type holding what
# psqlODBC cannot hold (infinity, a year past 9999, BC) is clamped by the trigger source's
# driver; the logical source sends the value itself.
DOMAINS = {"ddate", "dts", "dtstz", "dtime", "dtimetz", "its"}
def documented(col, logical):
    return col in DOMAINS and isinstance(logical, str) and re.search(
        r"infinity|BC|^[0-9]{5,}-", logical) is not None
def last_rows(d):
    rows = {}
    for name in os.listdir(d):
        m = json.load(open(os.path.join(d, name)))
        k = json.dumps(m["key"], sort_keys=True)
        if k not in rows or rows[k][0] < m["version"]:
            rows[k] = (m["version"], m.get("row"), m.get("truncated", False))
    return {k: v[1:] for k, v in rows.items()}
t, l = last_rows(sys.argv[1]), last_rows(sys.argv[2])
assert t.keys() == l.keys(), (sorted(t.keys() - l.keys()), sorted(l.keys() - t.keys()))
bad, known = [], 0
for k in sorted(t):
    (rt, tt), (rl, tl) = t[k], l[k]
    if tt != tl:
        bad.append(f"{k}: truncated {tt} vs {tl}")
        continue
    for c in sorted(set(rt or {}) | set(rl or {})):
        a, b = (rt or {}).get(c, "<missing>"), (rl or {}).get(c, "<missing>")
        if a != b and documented(c, b):
            known += 1
        elif a != b:
            bad.append(f"{k} {c}: trigger {json.dumps(a)[:80]} logical {json.dumps(b)[:80]}")
print(f"{len(t)} rows compared, {len(bad)} differences ({known} documented ones)")
for b in bad[:40]:
    print("  " + b)
sys.exit(1 if bad else 0)
PY
echo "logical_same_json: ok"
