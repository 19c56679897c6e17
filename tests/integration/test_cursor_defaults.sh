#!/usr/bin/env bash
# The cursor source is safe at its default settings, on the database
# $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb): concurrent writers, commits that are
# late within the documented bound (default lag 10 s on a server: every one arrives) and beyond
# it (documented as possibly lost; sqlq backfill recovers it), a kill -9 of the bridge in the
# middle (lease shortened to 5 s to keep the test short); the startup log and sqlq status (text
# and JSON) name the rule in force. On PostgreSQL the bridge runs as a role that may only read
# the table, in a schema sqlq a DBA created for it.
# Before, the default lag was 0: late commits were lost, and the bridge ran CREATE SCHEMA.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
if [ "$kind" = postgres ]; then
    . "$(dirname "$0")/../support/testenv.sh"
else
    bin=${SQLQ_BIN:?run through ctest}
    export SQLQ_QUEUE_CONNECTION=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
fi
tmp=$(mktemp -d)
pids=()
queues=()
dbs=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for q in "${queues[@]}"; do "$bin" queue delete "$q" >/dev/null 2>&1 || true; done
    if [ "$kind" = postgres ]; then
        for d in "${dbs[@]}"; do psql_ -d postgres -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
        psql_ -d postgres -c "DROP ROLE IF EXISTS cur_reader_$$" >/dev/null 2>&1 || true
    fi
    for d in "${dbs[@]}"; do [ "$kind" != mariadb ] || my_ -e "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
    exit 1
}
start() { # start NAME CMD…: background, log in $tmp/NAME.log; pid in $last
    local name=$1
    shift
    "$@" >>"$tmp/$name.log" 2>&1 &
    last=$!
    pids+=($last)
}

my_() { mariadb --no-defaults -N -B -h 127.0.0.1 -P "$(cat "$SQLQ_TEST_ENV_DIR/mariadb/port")" -u sqlq "$@"; }
src_sql() {
    case "$kind" in
    postgres) psql_ -d "$src_db" -c "$1" ;;
    mariadb) my_ "$src_db" -e "$1" ;;
    *) sqlite3 -cmd ".timeout 20000" "$src_file" "$1" ;;
    esac
}
rep_sql() {
    case "$kind" in
    postgres) psql_ -d "$rep_db" -c "$1" ;;
    mariadb) my_ "$rep_db" -e "$1" ;;
    *) sqlite3 -cmd ".timeout 20000" "$rep_file" "$1" ;;
    esac
}
ids='SELECT id FROM items ORDER BY id'
wait_ids() { # wait_ids WHAT EXPECTED_IDS SECONDS [EXTRA]: the replica holds EXPECTED_IDS (+ EXTRA)
    local i
    for i in $(seq 1 $(($3 * 5))); do
        [ "$(rep_sql "$ids" | grep -vx "${4:-none}")" = "$2" ] && { echo "$kind: $1"; return 0; }
        sleep 0.2
    done
    diff <(echo "$2") <(rep_sql "$ids") | head -10 >&2 || true
    fail "$kind: $1: the replica does not hold the expected rows"
}
late() { # late ID SECONDS: insert, then commit SECONDS later
    if [ "$kind" = postgres ]; then
        psql_ -d "$src_db" -c "BEGIN" -c "INSERT INTO items (id, v) VALUES ($1, 0)" \
            -c "SELECT pg_sleep($2)" -c "COMMIT" >/dev/null
    elif [ "$kind" = mariadb ]; then
        my_ "$src_db" -e "BEGIN; INSERT INTO items (id, v) VALUES ($1, 0); SELECT SLEEP($2); COMMIT" >/dev/null
    else
        sqlite3 -cmd ".timeout 20000" "$src_file" "BEGIN IMMEDIATE; INSERT INTO items (id, v) VALUES ($1, 0);" \
            ".shell sleep $2" "COMMIT;"
    fi
}
writer() { # writer FIRST: 60 short transactions
    for i in $(seq "$1" $(($1 + 59))); do src_sql "INSERT INTO items (id, v) VALUES ($i, 1)"; done
}

title=$(case "$kind" in sqlite) echo SQLite ;; postgres) echo PostgreSQL ;; mariadb) echo MariaDB ;; esac)
lag=$(case "$kind" in sqlite) echo 0 ;; *) echo 10000 ;; esac)
q="curdef-$kind-$$"
queues+=("$q")
if [ "$kind" = postgres ]; then
    src_db="curdef_src_$$" rep_db="curdef_rep_$$"
    dbs+=("$src_db" "$rep_db")
    psql_ -d postgres -c "CREATE DATABASE $src_db" -c "CREATE DATABASE $rep_db" >/dev/null
    ts="timestamptz NOT NULL DEFAULT clock_timestamp()"
    # A role that may only read the table; the DBA created schema sqlq for it.
    role="cur_reader_$$"
    # (The test's admin role is named sqlq: its search_path would put new tables into the
    # schema sqlq, so the source table is created as public.items first.)
    psql_ -d "$src_db" -c "CREATE TABLE public.items (id integer PRIMARY KEY, v integer, updated_at $ts)" \
        -c "CREATE ROLE $role LOGIN" -c "CREATE SCHEMA sqlq AUTHORIZATION $role" >/dev/null
    src_conn="${pgodbc/UID=sqlq/UID=$role}Database=$src_db;"
    admin_conn="${pgodbc}Database=$src_db;"
    rep_conn="${pgodbc}Database=$rep_db;"
elif [ "$kind" = mariadb ]; then
    src_db="curdef_src_$$" rep_db="curdef_rep_$$"
    dbs+=("$src_db" "$rep_db")
    my_ -e "CREATE DATABASE $src_db; CREATE DATABASE $rep_db"
    ts="datetime(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6))" # sqlq's sessions run in UTC
    src_conn="$(cat "$SQLQ_TEST_ENV_DIR/mariadb/odbc")Database=$src_db;"
    admin_conn=$src_conn
    rep_conn="$(cat "$SQLQ_TEST_ENV_DIR/mariadb/odbc")Database=$rep_db;"
else
    src_file="$tmp/src.db" rep_file="$tmp/rep.db"
    ts="TIMESTAMP NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))"
    src_conn="Driver={SQLite3};Database=$src_file;Timeout=20000;"
    admin_conn=$src_conn
    rep_conn="Driver={SQLite3};Database=$rep_file;Timeout=20000;"
fi
[ "$kind" = postgres ] || src_sql "CREATE TABLE items (id integer PRIMARY KEY, v integer, updated_at $ts)"
rep_sql "CREATE TABLE items (id integer PRIMARY KEY, v integer, updated_at $ts)"
[ "$kind" = postgres ] && psql_ -d "$src_db" -c "GRANT SELECT ON items TO $role" >/dev/null
bridge=("$bin" bridge --db "$src_conn" --table items --queue "$q" --source cursor
        --cursor-column updated_at --polling-interval-ms 200 --lease-s 5)
start bridge "${bridge[@]}"
bridge_pid=$last
start consume "$bin" consume "$q" --sql "$rep_conn" --table items --max-polling-interval-ms 200

# Concurrent writers with commits late within the bound (2 s), and one beyond it.
beyond=12
[ "$kind" = sqlite ] && beyond=0 # SQLite: one writer, no late commit is beyond the rule
writer 1000 &
w1=$!
writer 2000 &
w2=$!
late 1 2 &
l1=$!
late 2 2 &
l2=$!
[ "$kind" = sqlite ] || { late 3 "$beyond" & l3=$!; }
sleep 1
kill -9 "$bridge_pid" 2>/dev/null || fail "the bridge died: $(tail -5 "$tmp/bridge.log")" # in the middle of it all
sleep 0.5
start bridge "${bridge[@]}"
wait "$w1" "$w2" "$l1" "$l2"
grep -q "rule=\"lag $lag ms ($title default" "$tmp/bridge.log" \
    || fail "the startup log does not name the rule in force"
"$bin" status --db "$src_conn" >"$tmp/status.out" 2>&1 || true
grep -q "items (cursor source, bridge default): lag $lag ms ($title default" \
    "$tmp/status.out" || fail "sqlq status does not show the rule: $(cat "$tmp/status.out")"
# (On MariaDB the state is one database for the whole server: status lists other tests' tables
# too, some already dropped, so its exit code is not this test's.)
"$bin" status --db "$src_conn" --json >"$tmp/status.json" 2>/dev/null || true
grep -q '"rule": "lag' "$tmp/status.json" || fail "sqlq status --json does not show the rule"
if [ "$kind" != sqlite ]; then
    wait "$l3"
    # Row 3 committed 12 s after its cursor value, beyond the 10 s default: it may be lost
    # (it arrives anyway when no poll passed its cursor value while it was open).
    want=$(src_sql "$ids" | grep -vx 3)
    wait_ids "late commits within the default lag, kill -9: all arrived" "$want" 60 3
    # Beyond the bound: documented as lost to the cursor source; a backfill recovers it.
    "$bin" backfill --db "$admin_conn" --table items --queue "$q" --cursor-column updated_at \
        2>>"$tmp/backfill.log" || fail "backfill exited $?"
    wait_ids "the commit beyond the lag recovered by backfill" "$(src_sql "$ids")" 30
else
    wait_ids "concurrent writers, late commits, kill -9: all arrived" "$(src_sql "$ids")" 30
fi
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()
