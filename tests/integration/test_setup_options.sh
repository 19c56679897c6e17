#!/usr/bin/env bash
# x1, on one change-log database ($SQLQ_TEST_DATABASE: sqlite, postgres or mariadb): sqlq setup's
# --track-columns / --before-image and the names, types and files around them.
# 1. ALTER COLUMN ... TYPE after --before-image: setup again brings the copy columns to the
#    new type, and the application's UPDATE/DELETE work (SQLite: affinities, nothing to do).
# 2. a key column named like sqlq's option columns (sqlq_changed, sqlq_b_…) is refused, exit 2.
# 3. --no-track-columns / --no-before-image are refused (exit 2): only --drop removes them.
# 4. a before-image column name too long: exit 2 (the operator's input).
# 5. one config file drives setup and the bridge: setup honours a route's track_columns and
#    before_image, the bridge accepts track_columns.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() { echo "FAIL: $kind: $*" >&2; exit 1; }
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_TRACK_COLUMNS SQLQ_BEFORE_IMAGE \
    SQLQ_KEY_COLUMNS SQLQ_CHANGED || true

prefix=setopt
. "$(dirname "$0")/../support/change_log_db.sh"
# expect CODE what cmd...: exit CODE, output in $tmp/out
expect() {
    local want=$1 what=$2 got=0
    shift 2
    "$@" >"$tmp/out" 2>&1 || got=$?
    [ "$got" = "$want" ] || fail "$what: exit $got, wanted $want: $(cat "$tmp/out")"
}

# 1. ALTER COLUMN ... TYPE after --before-image.
sql "CREATE TABLE items (id INTEGER PRIMARY KEY, code VARCHAR(5), n INTEGER)"
sql "INSERT INTO items VALUES (1, 'abcde', 7)"
expect 0 "setup --before-image" "$sqlq" setup --db "$conn" --table items --before-image --track-columns
case "$kind" in
postgres) sql "ALTER TABLE items ALTER COLUMN code TYPE varchar(50)"
          sql "ALTER TABLE items ALTER COLUMN n TYPE text" ;;
mariadb) sql "ALTER TABLE items MODIFY code varchar(50)"
         sql "ALTER TABLE items MODIFY n text" ;;
esac
sql "UPDATE items SET code = 'a-code-longer-than-five', n = 'x' WHERE id = 1" 2>/dev/null || true
expect 0 "setup again after ALTER TYPE" "$sqlq" setup --db "$conn" --table items
sql "UPDATE items SET code = 'another-code-longer-than-five', n = 'seven' WHERE id = 1" \
    || fail "UPDATE after ALTER TYPE and setup again"
sql "DELETE FROM items WHERE id = 1" || fail "DELETE after ALTER TYPE and setup again"
q="setopt-$kind-$$"
queues+=("$q")
"$sqlq" bridge --db "$conn" --table items --queue "$q" --bridge-name a --once --before-image \
    >"$tmp/bridge.log" 2>&1 || fail "bridge: $(tail -3 "$tmp/bridge.log")"
"$sqlq" queue peek "$q" --limit 32 | grep -q 'another-code-longer-than-five' \
    || fail "the delete's before image lacks the long value"

# 2. Key columns named like the option columns.
for col in sqlq_changed sqlq_b_id; do
    sql "CREATE TABLE k_$col ($col INTEGER PRIMARY KEY, v INTEGER)"
    expect 2 "key column $col" "$sqlq" setup --db "$conn" --table "k_$col"
    grep -q "primary-key column $col of k_$col clashes with sqlq's own column" "$tmp/out" \
        || fail "key column $col: $(cat "$tmp/out")"
done

# 3. --no-track-columns / --no-before-image.
for flag in --no-track-columns --no-before-image --no-before-image=true; do
    expect 2 "$flag" "$sqlq" setup --db "$conn" --table items "$flag"
    grep -q "is not allowed: .*only --drop removes them" "$tmp/out" || fail "$flag: $(cat "$tmp/out")"
done

# 4. A column name too long for its before-image column (PostgreSQL's 63 bytes; the other
# databases take the same limit).
long=c$(printf '%0.sx' $(seq 1 58))
sql "CREATE TABLE longcol (id INTEGER PRIMARY KEY, $long INTEGER)"
expect 2 "long column name" "$sqlq" setup --db "$conn" --table longcol --before-image
grep -q "the name is too long for its before-image column" "$tmp/out" || fail "long name: $(cat "$tmp/out")"

# 5. One config file for setup and the bridge.
sql "CREATE TABLE routed (id INTEGER PRIMARY KEY, v INTEGER)"
sql "CREATE TABLE plain (id INTEGER PRIMARY KEY, v INTEGER)"
cat >"$tmp/c.json" <<JSON
{"db": "$conn", "routes": [
  {"table": "routed", "queue": "$q", "bridge_name": "r", "track_columns": true, "before_image": true,
   "changed": true},
  {"table": "plain", "queue": "$q", "bridge_name": "p"}]}
JSON
expect 0 "setup --config" "$sqlq" setup --config "$tmp/c.json"
grep -q "routed: change log installed: .*keeps changed columns and before images" "$tmp/out" \
    || fail "setup ignored the route's options: $(cat "$tmp/out")"
grep "plain: change log" "$tmp/out" | grep -q "keeps" && fail "options leaked to another route: $(cat "$tmp/out")"
expect 0 "bridge with the same file" "$sqlq" bridge --config "$tmp/c.json" --once
expect 0 "config check with the same file" "$sqlq" config check --config "$tmp/c.json"
sed 's/"track_columns": true/"track_columns": 1/' "$tmp/c.json" >"$tmp/bad.json"
expect 2 "setup: track_columns not a boolean" "$sqlq" setup --config "$tmp/bad.json"
grep -q "routes\[0\] key track_columns: 1 is not allowed (true or false)" "$tmp/out" || fail "bad route value: $(cat "$tmp/out")"
expect 2 "bridge: track_columns not a boolean" "$sqlq" bridge --config "$tmp/bad.json" --once
grep -q "routes\[0\] key track_columns" "$tmp/out" || fail "bridge bad route value: $(cat "$tmp/out")"
echo "$kind: ok"
