#!/usr/bin/env bash
# `sqlq setup` and `sqlq status` on the database $SQLQ_TEST_DATABASE names (sqlite, postgres,
# mariadb): install is idempotent and says what it did, --drop leaves nothing behind, status
# reports tables, bridges and pending changes, usage errors exit 2 and operational failures
# exit 1; each database's own cases (SQLite: an earlier sqlq's trigger upgraded; PostgreSQL:
# schemas and names folded as in SQL; MariaDB: a name in backticks); the cursor source installs
# nothing and checks its column.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
fail() { echo "FAIL: $kind: $*" >&2; exit 1; }
unset SQLQ_DB_CONNECTION || true
prefix=setup_cli
. "$(dirname "$0")/../support/change_log_db.sh"
expect_rc() { # expect_rc CODE cmd...
    local want=$1 got=0
    shift
    "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
    [ "$got" -eq "$want" ] || { cat "$tmp/out" "$tmp/err" >&2; fail "exit $got, wanted $want: $*"; }
}

# ---- usage -----------------------------------------------------------------------------------
expect_rc 0 "$sqlq" setup --help
grep -q -- "--table" "$tmp/out" && grep -q -- "--drop" "$tmp/out" || fail "setup --help lacks options"
grep -q "SQLQ_DB_CONNECTION" "$tmp/out" || fail "setup --help does not name SQLQ_DB_CONNECTION"
expect_rc 0 "$sqlq" status --help
grep -q -- "--json" "$tmp/out" || fail "status --help lacks --json"
expect_rc 2 env -u SQLQ_DB_CONNECTION "$sqlq" setup --table t
grep -q "no database" "$tmp/err" || fail "missing --db not explained"
expect_rc 2 "$sqlq" setup --db "Driver={SQLite3};Database=$tmp/x.db;"
grep -q "no table" "$tmp/err" || fail "missing --table not explained"
expect_rc 2 "$sqlq" setup --db x --table t --no-such-option
expect_rc 2 "$sqlq" status --db x --json=maybe

# ---- SQLite ----------------------------------------------------------------------------------
sqlite_cases() {
    db="$tmp/shop.db"
    conn="Driver={SQLite3};Database=$db;Timeout=5000;"
    sqlite3 "$db" "CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT);
                   CREATE TABLE \"Order Lines\" (\"order\" INTEGER, line INTEGER, qty INTEGER,
                                                 PRIMARY KEY (\"order\", line));"
    expect_rc 1 "$sqlq" setup --db "$conn" --table missing
    grep -q "missing" "$tmp/err" || fail "an unknown table is not named"
    expect_rc 0 "$sqlq" setup --db "$conn" --table orders --table '"Order Lines"'
    grep -q "^orders: change log installed" "$tmp/out" || fail "setup did not report the install: $(cat "$tmp/out")"
    grep -q '^"Order Lines": change log installed' "$tmp/out" || fail "second --table ignored"
    # idempotent, and the connection may come from SQLQ_DB_CONNECTION_FILE
    printf '%s' "$conn" >"$tmp/conn"
    expect_rc 0 env -u SQLQ_DB_CONNECTION SQLQ_DB_CONNECTION_FILE="$tmp/conn" "$sqlq" setup orders
    grep -q "already installed" "$tmp/out" || fail "second setup not reported as already installed"
    sqlite3 "$db" "INSERT INTO orders VALUES (1, 'a'), (2, 'b'); UPDATE orders SET note = 'c' WHERE id = 1;
                   INSERT INTO \"Order Lines\" VALUES (1, 1, 5);"
    [ "$(sqlite3 "$db" 'SELECT count(*) FROM sqlq_log_orders')" = 2 ] || fail "log rows: latest change per key"
    # setup again upgrades the trigger of an earlier sqlq (a counter row bumped per change, shared by
    # every table): versions go on above that counter, and no trigger writes it any more
    sqlite3 "$db" "DROP TRIGGER sqlq_log_orders_ai; UPDATE sqlq_counter SET value = 500 WHERE name = 'version';
                   CREATE TRIGGER sqlq_log_orders_ai AFTER INSERT ON orders FOR EACH ROW BEGIN
                   UPDATE sqlq_counter SET value = value + 1 WHERE name = 'version';
                   INSERT INTO sqlq_log_orders (id, sqlq_version, sqlq_op, sqlq_since) VALUES (NEW.id,
                   (SELECT value FROM sqlq_counter WHERE name = 'version'), 'I', NULL); END;
                   INSERT INTO orders VALUES (5, 'old trigger');"
    expect_rc 0 "$sqlq" setup --db "$conn" --table orders
    sqlite3 "$db" "INSERT INTO orders VALUES (6, 'new trigger')"
    # (the old trigger took 501 from the counter; the new one goes on above every version)
    [ "$(sqlite3 "$db" "SELECT sqlq_version FROM sqlq_log_orders WHERE id = 5")" = 501 ] &&
        [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlq_log_orders WHERE sqlq_version >= (SELECT sqlq_version FROM sqlq_log_orders WHERE id = 6)")" = 1 ] ||
        fail "versions after the upgrade: $(sqlite3 "$db" 'SELECT * FROM sqlq_log_orders')"
    [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%UPDATE sqlq_counter%'")" = 0 ] ||
        fail "a trigger still writes the counter after setup"
    expect_rc 0 "$sqlq" status --db "$conn"
    grep -q "^orders (change log)" "$tmp/out" || fail "status lacks orders: $(cat "$tmp/out")"
    grep -q "no bridge has started" "$tmp/out" || fail "status does not say no bridge ran"
    expect_rc 0 "$sqlq" status --db "$conn" --table orders --json
    python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
t = doc["tables"]
assert len(t) == 1 and t[0]["table"] == "orders" and t[0]["source"] == "change_log", t
assert t[0]["log"] == "sqlq_log_orders" and t[0]["bridges"] == [], t
EOF
    expect_rc 1 "$sqlq" status --db "$conn" --table missing
    # --drop of one table keeps the other's log and sqlq's tables
    expect_rc 0 "$sqlq" setup --db "$conn" --table orders --drop
    grep -q "change log and triggers removed" "$tmp/out" || fail "drop not reported"
    [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlq_log_orders%'")" = 0 ] ||
        fail "orders' change log still there"
    [ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name = 'sqlq_tables'")" = 1 ] ||
        fail "registry dropped while another table is still set up"
    sqlite3 "$db" "INSERT INTO orders VALUES (3, 'after drop')" # no trigger left to fail
    expect_rc 0 "$sqlq" setup --db "$conn" --drop '"Order Lines"'
    grep -q "nothing of sqlq is left" "$tmp/out" || fail "last drop did not say everything is gone"
    left=$(sqlite3 "$db" "SELECT group_concat(name) FROM sqlite_master WHERE name LIKE 'sqlq%'")
    [ -z "$left" ] || fail "objects left after --drop: $left"
}

# ---- PostgreSQL ------------------------------------------------------------------------------
postgres_cases() {
    pg_db=$name
    pconn=$conn
    psql_() { psql -q -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
    psql_ -d "$pg_db" -c "CREATE SCHEMA sales; CREATE TABLE sales.orders (id bigint PRIMARY KEY, v text);
                          CREATE TABLE \"Mixed\" (k uuid PRIMARY KEY, v int);"
    expect_rc 0 "$sqlq" setup --db "$pconn" --table sales.orders --table '"Mixed"'
    grep -q "^sales.orders: change log installed: table sqlq.log_orders_" "$tmp/out" ||
        fail "PostgreSQL setup output: $(cat "$tmp/out")"
    expect_rc 0 "$sqlq" setup --db "$pconn" --table SALES.ORDERS # unquoted names fold as in SQL
    grep -q "already installed" "$tmp/out" || fail "SALES.ORDERS did not resolve to sales.orders"
    psql_ -d "$pg_db" -c "INSERT INTO sales.orders VALUES (1, 'x'), (2, 'y'); DELETE FROM sales.orders WHERE id = 2;
                          INSERT INTO \"Mixed\" VALUES (gen_random_uuid(), 1);"
    ops=$(psql_ -d "$pg_db" -At -c "SELECT string_agg(sqlq_op, '' ORDER BY id) FROM sqlq.\"$(psql_ -d "$pg_db" -At -c "SELECT object_name FROM sqlq.tables WHERE table_name = 'sales.orders'" | sed 's/^sqlq\.//')\"")
    [ "$ops" = "ID" ] || fail "PostgreSQL log ops: '$ops', wanted ID"
    expect_rc 0 "$sqlq" status --db "$pconn" --json
    python3 - "$tmp/out" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
names = sorted(t["table"] for t in doc["tables"])
assert names == ['public."Mixed"', "sales.orders"], names
EOF
    expect_rc 0 "$sqlq" setup --db "$pconn" --drop --table sales.orders --table '"Mixed"'
    left=$(psql_ -d "$pg_db" -At -c "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'sqlq')
                                         + (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'sqlq%')
                                         + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'capture_%')")
    [ "$left" = 0 ] || fail "PostgreSQL objects left after --drop: $left"
    psql_ -d "$pg_db" -c "INSERT INTO sales.orders VALUES (5, 'after drop')" >/dev/null
}

# ---- MariaDB ---------------------------------------------------------------------------------
my_() { mariadb --no-defaults -N -h 127.0.0.1 -P "$port" -u sqlq "$name" -e "$1"; }
mariadb_cases() {
    sql 'CREATE TABLE orders (id int PRIMARY KEY, note text); CREATE TABLE `Order Lines` (`order` int,
         line int, qty int, PRIMARY KEY (`order`, line))'
    expect_rc 1 "$sqlq" setup --db "$conn" --table missing
    grep -q "missing" "$tmp/err" || fail "an unknown table is not named"
    expect_rc 0 "$sqlq" setup --db "$conn" --table orders --table '`Order Lines`'
    grep -q "^$name.orders: change log installed: table sqlq.log_orders_" "$tmp/out" ||
        fail "setup did not report the install: $(cat "$tmp/out")"
    grep -q 'Order Lines.*: change log installed' "$tmp/out" || fail "second --table ignored"
    expect_rc 0 "$sqlq" setup --db "$conn" --table orders
    grep -q "already installed" "$tmp/out" || fail "second setup not reported as already installed"
    sql "INSERT INTO orders VALUES (1, 'a'), (2, 'b'); DELETE FROM orders WHERE id = 2"
    # database sqlq is the server's: status lists the tables of every database set up there (its
    # exit code speaks for other tests' tables too, so only this database's entries are checked)
    "$sqlq" status --db "$conn" --json >"$tmp/out" 2>"$tmp/err" || true
python3 - "$tmp/out" "$name" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
names = sorted(t["table"] for t in doc["tables"] if t["table"].startswith(sys.argv[2] + "."))
assert names == sorted([sys.argv[2] + ".orders", sys.argv[2] + '."Order Lines"']), names
EOF
    expect_rc 0 "$sqlq" setup --db "$conn" --table orders --drop
    grep -q "change log and triggers removed" "$tmp/out" || fail "drop not reported"
    [ "$(my_ "SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = '$name' AND event_object_table = 'orders'")" = 0 ] ||
        fail "orders' triggers still there"
    expect_rc 0 "$sqlq" setup --db "$conn" --drop --table '`Order Lines`'
    n=$(my_ "SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = '$name'")
    [ "$n" = 0 ] || fail "$n triggers left after --drop"
    sql "INSERT INTO orders VALUES (3, 'after drop')" # no trigger left to fail
}

case "$kind" in
sqlite) sqlite_cases ;;
postgres) postgres_cases ;;
mariadb) mariadb_cases ;;
esac

# ---- cursor source: nothing installed, the column checked, what a cursor cannot see said -----
triggers() {
    case "$kind" in
    sqlite) sqlite3 "$tmp/shop.db" "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'" ;;
    postgres) psql -X -q -A -t -h 127.0.0.1 -p "$port" -U sqlq -d "$name" \
        -c "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'sqlq%'" ;;
    mariadb) my_ "SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = '$name'" ;;
    esac
}
cconn=$conn
sql "CREATE TABLE ev (id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, gone INTEGER, f REAL)"
expect_rc 0 "$sqlq" setup --db "$cconn" --table ev --source cursor --cursor-column ts --soft-delete-column gone
grep -q "hard deletes (DELETE) are NOT visible" "$tmp/out" || fail "cursor setup does not say deletes are invisible"
[ "$(triggers)" = 0 ] || fail "cursor setup installed triggers"
expect_rc 0 "$sqlq" setup --db "$cconn" --table ev --source cursor --cursor-column ts
grep -q "deletes are NOT visible to a cursor: use a soft-delete column" "$tmp/out" || fail "no soft-delete advice"
expect_rc 1 "$sqlq" setup --db "$cconn" --table ev --source cursor --cursor-column f
grep -q "cannot be used" "$tmp/err" || fail "unsafe cursor column not refused"
expect_rc 2 "$sqlq" setup --db "$cconn" --table ev --source cursor
expect_rc 0 "$sqlq" setup --db "$cconn" --table ev --source cursor --drop
echo "setup/status CLI: all checks passed"
