#!/usr/bin/env bash
# On one change-log database ($SQLQ_TEST_DATABASE: sqlite, postgres or mariadb):
# "changed" (sqlq setup --track-columns, bridge --changed) and "before" (--before-image): one
# column updated; two updates collapsed into one message (the union); two bridges at different
# positions get different unions; before on update and delete; a key-changing update (a delete
# of the old key with its before image, and an insert); the route's column selection applied
# to both; flag, environment and config-file route key; a route asking without the setup
# option, or with --format functions, stops with exit 2.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -6 >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_CHANGED SQLQ_BEFORE_IMAGE SQLQ_COLUMNS \
    SQLQ_EXCLUDE_COLUMNS || true

prefix=img
. "$(dirname "$0")/../support/change_log_db.sh"

# drain BRIDGE QUEUE [options]: publish what is pending
drain() {
    local b=$1 q=$2
    shift 2
    "$sqlq" bridge --db "$conn" --table items --queue "$q" --bridge-name "$b" --once "$@" \
        >"$tmp/$b.log" 2>&1 || fail "bridge $b $*"
}
# got QUEUE: "op key changed before" per message, in queue order; then the queue is emptied
got() {
    "$sqlq" queue peek "$1" --limit 32 | python3 -c '
import json, sys
for line in sys.stdin:
    if not line.strip():
        continue
    m = json.loads(json.loads(line)["body"])
    ch = ",".join(m["changed"]) if "changed" in m else "-"
    b = m.get("before")
    bt = ",".join("%s=%s" % (k, b[k]) for k in sorted(b)) if b is not None else "-"
    print(m["op"], m["key"]["id"], ch, bt, sep=" ")' | tr '\n' ';'
    "$sqlq" queue clear "$1" >/dev/null 2>&1 || fail "queue clear $1"
}

sql "CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR(40), qty INTEGER, note VARCHAR(40))"
"$sqlq" setup --db "$conn" --table items >"$tmp/setup.log" 2>&1 || fail "setup"
qa="img-a-$kind-$$"; qb="img-b-$kind-$$"; qc="img-c-$kind-$$"
queues+=("$qa" "$qb" "$qc")

# A route asking for what the log does not keep stops at start, naming the setup option.
for opt in "--changed:--track-columns" "--before-image:--before-image"; do
    set +e
    "$sqlq" bridge --db "$conn" --table items --queue "$qa" --bridge-name a --once "${opt%%:*}" \
        >"$tmp/nosetup.log" 2>&1
    code=$?
    set -e
    [ "$code" = 2 ] || fail "${opt%%:*} without setup gave exit $code"
    grep -q "does not keep it: run \`sqlq setup --table .*items ${opt##*:}\` first" "$tmp/nosetup.log" \
        || fail "${opt%%:*} without setup: $(tail -1 "$tmp/nosetup.log")"
done
set +e
"$sqlq" bridge --db "$conn" --table items --queue "$qa" --format functions --changed --once >"$tmp/fn.log" 2>&1
code=$?
set -e
[ "$code" = 2 ] && grep -q "key changed: not allowed with format functions" "$tmp/fn.log" \
    || fail "--format functions --changed gave exit $code"

# The options are added over the existing log (changes already logged stay), and kept by a
# later setup without them.
sql "INSERT INTO items VALUES (1, 'apple', 1, 'n1')"
sql "INSERT INTO items VALUES (2, 'pear', 2, 'n2')"
sql "INSERT INTO items VALUES (3, 'plum', 3, 'n3')"
"$sqlq" setup --db "$conn" --table items --track-columns --before-image >"$tmp/setup.log" 2>&1 || fail "setup --track-columns --before-image"
"$sqlq" setup --db "$conn" --table items >"$tmp/setup.log" 2>&1 || fail "setup again"
grep -q "keeps changed columns and before images" "$tmp/setup.log" || fail "a later setup dropped the options: $(cat "$tmp/setup.log")"
grep -q "triggers_name_columns" "$tmp/setup.log" || fail "setup did not warn that the triggers name every column: $(cat "$tmp/setup.log")"

drain a "$qa" --changed --before-image
drain b "$qb" --changed --before-image
[ "$(got "$qa")" = "insert 1 - -;insert 2 - -;insert 3 - -;" ] || fail "inserts carry changed or before"
got "$qb" >/dev/null

# One column: changed = [it], before = the row before.
sql "UPDATE items SET name = 'apricot' WHERE id = 1"
drain a "$qa" --changed --before-image
want="update 1 name id=1,name=apple,note=n1,qty=1;"
r=$(got "$qa"); [ "$r" = "$want" ] || fail "one column: $r (want $want)"

# Two updates between two polls: one message, the union; before = the row before the latest.
sql "UPDATE items SET qty = 10 WHERE id = 1"
sql "UPDATE items SET note = 'x1' WHERE id = 1"
drain a "$qa" --changed --before-image
want="update 1 qty,note id=1,name=apricot,note=n1,qty=10;"
r=$(got "$qa"); [ "$r" = "$want" ] || fail "collapsed: $r (want $want)"

# Bridge b last delivered the insert: its union holds every update since.
SQLQ_CHANGED=true drain b "$qb"
r=$(got "$qb"); [ "$r" = "update 1 name,qty,note -;" ] || fail "bridge b (environment): $r"

# Delete and a key-changing update: before on the deletes, none on the insert.
sql "DELETE FROM items WHERE id = 2"
sql "UPDATE items SET id = 4 WHERE id = 3"
drain a "$qa" --changed --before-image
want="delete 2 - id=2,name=pear,note=n2,qty=2;delete 3 - id=3,name=plum,note=n3,qty=3;insert 4 - -;"
r=$(got "$qa"); [ "$r" = "$want" ] || fail "delete / key change: $r (want $want)"

# The route's column selection applies to both (config-file route keys; the key stays).
cat >"$tmp/route.json" <<JSON
{"db": "$conn", "routes": [{"table": "items", "queue": "$qc", "bridge_name": "c", "columns": "name",
  "changed": true, "before_image": true}]}
JSON
"$sqlq" bridge --config "$tmp/route.json" --once >"$tmp/c.log" 2>&1 || fail "bridge c (config file)"
got "$qc" >/dev/null
sql "UPDATE items SET name = 'banana', qty = 5 WHERE id = 1"
"$sqlq" bridge --config "$tmp/route.json" --once >"$tmp/c.log" 2>&1 || fail "bridge c (config file)"
r=$(got "$qc"); [ "$r" = "update 1 name id=1,name=apricot;" ] || fail "column selection: $r"
echo "$kind: ok"
