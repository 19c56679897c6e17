#!/usr/bin/env bash
# What sqlq really sends matches docs/message.schema.json: row, batch and functions formats,
# a delete, a truncated oversize row, a poison envelope, backfill's read messages and the
# manifests of backfill --repair.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
src=${SQLQ_SOURCE_DIR:?run through ctest}
export SQLQ_QUEUE_CONNECTION=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
tmp=$(mktemp -d)
queues=()
cleanup() {
    for q in "${queues[@]}"; do "$sqlq" queue delete "$q" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db="$tmp/shop.db"
conn="Driver={SQLite3};Database=$db;Timeout=5000;"
sqlite3 "$db" "CREATE TABLE orders(id INTEGER PRIMARY KEY, region TEXT, total NUMERIC, paid BOOLEAN, note BLOB, at TEXT)"
"$sqlq" setup --db "$conn" --table orders >/dev/null
sqlite3 "$db" "INSERT INTO orders VALUES (1, 'eu', 19.90, 1, X'00FF', '2026-11-21T10:00:00');
               INSERT INTO orders VALUES (2, 'us', 5, 0, NULL, NULL);
               INSERT INTO orders VALUES (3, 'x', 1, 1, randomblob(60000), NULL);
               UPDATE orders SET total = 21 WHERE id = 1; DELETE FROM orders WHERE id = 2;"

check() { # check QUEUE WHAT: every message of QUEUE is valid
    "$sqlq" queue peek "$1" --limit 32 >"$tmp/peek"
    node "$src/tests/support/validate_messages.js" "$src/docs/message.schema.json" <"$tmp/peek" \
        >"$tmp/valid" || fail "$2: a message does not match the schema"
    echo "$2: $(cat "$tmp/valid")"
}
# Each run reads its own copy: a caught-up bridge trims the change log, and a bridge name
# that starts later only replays what the log still holds.
for f in row batch functions poison; do cp "$db" "$tmp/$f.db"; done
for format in row batch functions; do
    q="schema-$format-$$"
    queues+=("$q")
    "$sqlq" bridge --db "Driver={SQLite3};Database=$tmp/$format.db;" --table orders --queue "$q" \
        --format "$format" --once 2>/dev/null
    check "$q" "bridge --format $format"
    [ "$format" != row ] || grep -q 'truncated' "$tmp/peek" || fail "the oversize row was not truncated"
done

q="schema-poison-$$"
queues+=("$q" "$q-poison")
"$sqlq" bridge --db "Driver={SQLite3};Database=$tmp/poison.db;" --table orders --queue "$q" \
    --oversize poison --once 2>/dev/null
check "$q-poison" "bridge poison envelope"

# A column selection and a --where that turns an update into a delete keep the shapes;
# a consumer's --poison-envelope is the poison shape.
sel="$tmp/sel.db"
sqlite3 "$sel" "CREATE TABLE orders(id INTEGER PRIMARY KEY, region TEXT, total NUMERIC)"
"$sqlq" setup --db "Driver={SQLite3};Database=$sel;" --table orders >/dev/null
sqlite3 "$sel" "INSERT INTO orders VALUES (1, 'eu', 5), (2, 'us', 50)"
q="schema-sel-$$"
queues+=("$q" "$q-poison")
"$sqlq" bridge --db "Driver={SQLite3};Database=$sel;" --table orders --queue "$q" --columns total \
    --where "total > 10" --once 2>/dev/null
sqlite3 "$sel" "UPDATE orders SET total = 1 WHERE id = 2"
"$sqlq" bridge --db "Driver={SQLite3};Database=$sel;" --table orders --queue "$q" --columns total \
    --where "total > 10" --once 2>/dev/null
check "$q" "bridge --columns --where"
grep -q '\\"op\\":\\"delete\\"' "$tmp/peek" || fail "the update out of --where was not a delete"
timeout 60 "$sqlq" consume "$q" --exec 'exit 65' --poison-envelope --exit-when-empty \
    --max-polling-interval-ms 300 2>/dev/null
check "$q-poison" "consume --poison-envelope"
grep -q 'sqlq_poison' "$tmp/peek" || fail "consume --poison-envelope wrote no envelope"

# "changed" on updates and "before" on updates and deletes, row and batch.
img="$tmp/img.db"
sqlite3 "$img" "CREATE TABLE orders(id INTEGER PRIMARY KEY, region TEXT, total NUMERIC)"
"$sqlq" setup --db "Driver={SQLite3};Database=$img;" --table orders --track-columns --before-image >/dev/null
sqlite3 "$img" "INSERT INTO orders VALUES (1, 'eu', 5), (2, 'us', 50)"
cp "$img" "$tmp/img-batch.db"
for format in row batch; do
    [ "$format" = row ] && f="$img" || f="$tmp/img-batch.db"
    q="schema-img-$format-$$"
    queues+=("$q")
    "$sqlq" bridge --db "Driver={SQLite3};Database=$f;" --table orders --queue "$q" --format "$format" \
        --changed --before-image --once 2>/dev/null
    sqlite3 "$f" "UPDATE orders SET total = 6 WHERE id = 1; DELETE FROM orders WHERE id = 2"
    "$sqlq" bridge --db "Driver={SQLite3};Database=$f;" --table orders --queue "$q" --format "$format" \
        --changed --before-image --once 2>/dev/null
    check "$q" "bridge --changed --before-image --format $format"
    grep -q '\\"changed\\":\[\\"total\\"\]' "$tmp/peek" || fail "$format: no changed"
    grep -q '\\"before\\":{' "$tmp/peek" || fail "$format: no before"
done

q="schema-backfill-$$"
queues+=("$q")
"$sqlq" backfill --db "$conn" --table orders --queue "$q" 2>/dev/null
check "$q" "backfill (op read)"
grep -q '\\"op\\":\\"read\\"' "$tmp/peek" || fail "backfill sent no read messages"

q="schema-repair-$$"
queues+=("$q")
"$sqlq" backfill --db "$conn" --table orders --queue "$q" --repair --restart --batch-size 2 2>/dev/null
check "$q" "backfill --repair (its manifests)"
grep -q '\\"op\\":\\"manifest\\"' "$tmp/peek" || fail "backfill --repair sent no manifest"
grep -q '\\"op\\":\\"manifest_end\\"' "$tmp/peek" || fail "backfill --repair sent no manifest_end"

# The documented id recipe (Python json.dumps, lower-case \u escapes, RFC 8785) gives the id the
# bridge sent, for text keys holding every control character, quotes, backslashes and a
# literal "\u001F".
ids="$tmp/ids.db"
sqlite3 "$ids" "CREATE TABLE k(name TEXT PRIMARY KEY, v INTEGER)"
"$sqlq" setup --db "Driver={SQLite3};Database=$ids;" --table k >/dev/null
sqlite3 "$ids" "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 15)
                INSERT INTO k SELECT 'a' || char(2 * i + 1, 2 * i + 2) || 'b', i FROM c;
                INSERT INTO k VALUES ('del' || char(127), 127), ('q\"b\\s', 0), ('lit\\u001F', 0),
                                     ('é€😀', 0), (char(31, 10, 9, 12, 8, 13), 0);"
q="schema-ids-$$"
queues+=("$q")
"$sqlq" bridge --db "Driver={SQLite3};Database=$ids;" --table k --queue "$q" --once 2>/dev/null
"$sqlq" queue peek "$q" --limit 32 >"$tmp/peek"
python3 - "$tmp/peek" <<'PY' || fail "message ids differ from the documented recipe"
import hashlib, json, sys
n = 0
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.strip():
        continue
    m = json.loads(json.loads(line)["body"])
    canon = json.dumps(m["key"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    data = "\0".join([m["bridge"], m["table"], canon, str(m["version"])]).encode("utf-8")
    want = hashlib.sha256(data).hexdigest()[:32]
    if m["id"] != want:
        sys.exit("key %r: id %s, recipe gives %s" % (m["key"], m["id"], want))
    n += 1
if n != 21:
    sys.exit("expected 21 messages, got %d" % n)
print("ids of %d keys with control characters match the recipe" % n)
PY
