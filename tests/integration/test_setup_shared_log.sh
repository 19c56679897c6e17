#!/usr/bin/env bash
# One change log per table, on one change-log database ($SQLQ_TEST_DATABASE: sqlite, postgres or mariadb).
# A table named like another table's hashed log name (orders_<hash12>) got that table's log,
# trigger functions and (SQLite) triggers: an insert into one was published as a delete in the
# other. Now such a name takes the hashed form too (a log of its own), and a log the registry
# lists against two tables, as an earlier sqlq left it, is refused by setup (exit 2, both tables
# named), the bridge and status; --drop of the table that came in removes only its own triggers
# and registry row, the other table's log stays and keeps capturing.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -8 "$f" >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true

prefix=shared
. "$(dirname "$0")/../support/change_log_db.sh"

case "$kind" in
sqlite)
    registry=sqlq_tables
    owner=orders_kept_under_a_name_longer_than_forty # > 40 bytes: hashed
    val() { sqlite3 -cmd ".timeout 5000" "$tmp/shop.db" "$1"; } ;;
postgres)
    registry=sqlq.tables
    owner=s1.orders # outside schema public: hashed
    sql "CREATE SCHEMA s1"
    val() { psql -X -q -tA -h 127.0.0.1 -p "$port" -U sqlq -d "$name" -c "$1"; } ;;
mariadb)
    registry=sqlq.tables
    owner=orders # every MariaDB name is hashed
    scope="AND table_name LIKE '$name.%'" # the server's one registry serves every database
    val() { mariadb --no-defaults -N -B -h 127.0.0.1 -P "$port" -u sqlq "$name" -e "$1"; } ;;
esac
scope=${scope:-}
q="shared-$kind-$$"
queues+=("$q")

# run WANT_RC LOG cmd…
run() {
    local want=$1 log=$2 got=0
    shift 2
    "$@" >"$tmp/$log.log" 2>&1 || got=$?
    [ "$got" = "$want" ] || fail "exit $got, wanted $want: $*"
}
# published: "op key" per message on the queue, then the queue is emptied
published() {
    "$sqlq" queue peek "$q" --limit 32 | python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        m = json.loads(json.loads(line)["body"])
        print(m["op"], m["key"]["id"])' | tr '\n' ';'
    "$sqlq" queue clear "$q" >/dev/null 2>&1 || fail "queue clear"
}
drain() { run 0 bridge "$sqlq" bridge --db "$conn" --table "$owner" --queue "$q" --once --bridge-name b; }
log_of() { val "SELECT object_name FROM $registry WHERE kind = 'log' AND table_name = '$1'"; }

sql "CREATE TABLE $owner (id INTEGER PRIMARY KEY, v VARCHAR(20))"
run 0 setup "$sqlq" setup --db "$conn" --table "$owner"
owner_key=$(val "SELECT table_name FROM $registry WHERE kind = 'log' $scope")
owner_log=$(log_of "$owner_key")
intruder=${owner_log#sqlq.log_}
intruder=${intruder#sqlq_log_} # orders_<hash12>: the owner's log name as a table name
[ "$intruder" != "$owner_log" ] && [ -n "$intruder" ] || fail "unexpected log name $owner_log"
[ "$kind" = postgres ] && intruder=public.$intruder # role sqlq's unqualified names: schema sqlq
sql "CREATE TABLE $intruder (id INTEGER PRIMARY KEY)"

# A new setup gives the table named like the log a log of its own: nothing crosses.
run 0 setup "$sqlq" setup --db "$conn" --table "$intruder"
intruder_key=$(val "SELECT table_name FROM $registry WHERE kind = 'log' AND table_name <> '$owner_key' $scope")
intruder_log=$(log_of "$intruder_key")
[ -n "$intruder_log" ] && [ "$intruder_log" != "$owner_log" ] \
    || fail "$intruder got log '$intruder_log', $owner has $owner_log"
sql "INSERT INTO $intruder VALUES (777)"
sql "INSERT INTO $owner VALUES (1, 'one')"
drain
[ "$(published)" = "insert 1;" ] || fail "the owner's queue got another table's change"

# The registry as an earlier sqlq left it: the intruder's log was the owner's.
run 0 drop "$sqlq" setup --db "$conn" --table "$intruder" --drop
sql "INSERT INTO $registry (kind, bridge_name, table_name, object_name, created_ms) VALUES ('log', '', '$intruder_key', '$owner_log', 0)"
for t in "$owner" "$intruder"; do
    [ "$kind" = mariadb ] && [ "$t" = "$intruder" ] && continue # no plain names: never legacy
    run 2 refused "$sqlq" setup --db "$conn" --table "$t"
    grep -q "change log $owner_log of table .* is registered to table .* too" "$tmp/refused.log" \
        && grep -qF "$owner_key" "$tmp/refused.log" && grep -qF "$intruder_key" "$tmp/refused.log" \
        && grep -qF "sqlq setup --table $intruder_key --drop" "$tmp/refused.log" \
        || fail "setup $t: $(cat "$tmp/refused.log")"
done
set +e
"$sqlq" bridge --db "$conn" --table "$owner" --queue "$q" --once --bridge-name b >"$tmp/bridge.log" 2>&1
code=$?
set -e
[ "$code" != 0 ] && grep -q "is registered to table" "$tmp/bridge.log" || fail "bridge on a shared log: exit $code"
run 1 status "$sqlq" status --db "$conn" --table "$owner"
grep -q "change log $owner_log is registered to table" "$tmp/status.log" || fail "status on a shared log"

# --drop of the table that came in leaves the owner's log, which keeps capturing.
run 0 drop "$sqlq" setup --db "$conn" --table "$intruder" --drop
[ "$kind" = mariadb ] || grep -q "change log $owner_log kept" "$tmp/drop.log" || fail "drop did not keep the log"
[ "$(log_of "$owner_key")" = "$owner_log" ] || fail "drop removed the owner's registry row"
sql "UPDATE $owner SET v = 'two' WHERE id = 1"
drain
[ "$(published)" = "update 1;" ] || fail "the owner's log lost its change after the drop"

# Both set up again: each its own log.
run 0 setup "$sqlq" setup --db "$conn" --table "$owner"
run 0 setup "$sqlq" setup --db "$conn" --table "$intruder"
[ "$(log_of "$intruder_key")" = "$intruder_log" ] || fail "the intruder's log is not its own"
sql "DELETE FROM $intruder"
sql "INSERT INTO $owner VALUES (2, 'two')"
drain
[ "$(published)" = "insert 2;" ] || fail "changes crossed tables after both setups"
run 0 drop "$sqlq" setup --db "$conn" --table "$intruder" --drop
[ "$(log_of "$owner_key")" = "$owner_log" ] || fail "dropping one table removed the other's log"
run 0 status "$sqlq" status --db "$conn" --table "$owner"
run 0 drop "$sqlq" setup --db "$conn" --table "$owner" --drop
echo "setup shared log ($kind): ok"
