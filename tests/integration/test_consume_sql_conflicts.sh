#!/usr/bin/env bash
# `sqlq consume --sql` applies batch messages whose keys overlap, many at once (24 in flight by
# default): each message's changes are applied in the order of their keys, so two transactions
# never wait for each other's rows in opposite orders, and a deadlock or serialization failure
# that still happens (a unique index, a foreign key) is tried again before it counts against the
# message. Before, messages whose keys came in different orders deadlocked, and one that lost five
# deadlocks went to poison although nothing was wrong with it. Every key must end at the newest
# version, with no message poisoned and no deadlock reported.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
port=$(cat "$SQLQ_TEST_ENV_DIR/postgres/port")
db="cconf_$$"
odbc="$(cat "$SQLQ_TEST_ENV_DIR/postgres/odbc")Database=$db;"
work=$(mktemp -d)
q="cconf-$$"
psql_() { psql -X -q -A -t -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consume_sql_conflicts: $*" >&2; exit 1; }
. "$(dirname "$0")/../support/queue_count.sh"

messages=40 keys=60
psql_ -d postgres -c "CREATE DATABASE $db"
psql_ -d "$db" -c "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)"
psql_ -d "$db" -c "INSERT INTO t SELECT g, 0 FROM generate_series(1, $keys) g"
"$SQLQ_BIN" queue create "$q" >/dev/null
# Message m updates every key to v = m at version m, its keys in an order of its own.
python3 - "$messages" "$keys" > "$work/msgs" <<'PY'
import json, random, sys
n, k = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(7)
for m in range(1, n + 1):
    ids = list(range(1, k + 1))
    rnd.shuffle(ids)
    changes = [{"id": f"{m}-{i}", "op": "update", "table": "t", "key": {"id": i},
                "row": {"id": i, "v": m}, "version": m, "bridge": "default", "ts": "x"} for i in ids]
    print(json.dumps({"changes": changes}))
PY
while IFS= read -r m; do "$SQLQ_BIN" queue put "$q" "$m" >/dev/null; done < "$work/msgs"

timeout 180 "$SQLQ_BIN" consume "$q" --sql "$odbc" --table t --exit-when-empty \
    --max-polling-interval-ms 300 2> "$work/log" \
    || fail "consume exited $?: $(tail -3 "$work/log")"
if grep -qi 'deadlock' "$work/log"; then
    fail "a deadlock was reported: $(grep -i -m2 deadlock "$work/log")"
fi
poisoned=$(q="$q-poison" count)
[ "$poisoned" = 0 ] || fail "$poisoned message(s) poisoned"
got=$(psql_ -d "$db" -c "SELECT count(*) FROM t WHERE v = $messages")
[ "$got" = "$keys" ] || fail "$got of $keys keys at the newest version"
echo "consume_sql_conflicts: $messages overlapping messages applied at once, none poisoned: ok"
