# Sourced by the shell tests that run on one database: $kind is sqlite, postgres or mariadb (the
# test sets it from $SQLQ_TEST_DATABASE, which sqlq_database_test gives it), $prefix names the
# test's database, and the test defines fail() first. Sets sqlq, env_dir, tmp, name, queues (the
# queues the test creates, deleted at exit), conn, sql() (statements on the test's database) and
# query() (one query's rows, a line each, columns joined by |, NULL as an empty column) and
# check() (a check a known product bug breaks, below); at exit drops that database and $tmp.
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
export SQLQ_QUEUE_CONNECTION=$(cat "$env_dir/azurite/conn")
tmp=$(mktemp -d)
name="${prefix:?}_$$_$RANDOM"
queues=()
cleanup() {
    for q in "${queues[@]}"; do "$sqlq" queue delete "$q" >/dev/null 2>&1 || true; done
    case "$kind" in
    postgres) # its logical slots first: a database with one cannot be dropped, and it keeps WAL
        psql -X -q -h 127.0.0.1 -p "$(cat "$env_dir/postgres/port")" -U sqlq -d postgres \
            -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
                WHERE database = '$name' AND NOT active" >/dev/null 2>&1 || true
        psql -X -q -h 127.0.0.1 -p "$(cat "$env_dir/postgres/port")" -U sqlq -d postgres \
            -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true ;;
    mariadb) mariadb --no-defaults -h 127.0.0.1 -P "$(cat "$env_dir/mariadb/port")" -u sqlq \
        -e "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true ;;
    esac
    rm -rf "$tmp"
}
trap cleanup EXIT

# check "DATABASES" "BUG" COMMAND...: the shell form of SQLQ_TEST_CHECK (tests/support/testenv.h).
# On a database DATABASES lists (space-separated) COMMAND must fail: BUG is printed and the test
# goes on; once it passes there, fail() asks for the database to come off the list. Elsewhere
# COMMAND must pass.
check() {
    local known=" $1 " bug=$2 on=$kind
    shift 2
    # a word database-source names one source of a database (postgres-logical)
    [[ -z "${SQLQ_TEST_SOURCE:-}" || "$known" != *" $kind-$SQLQ_TEST_SOURCE "* ]] || on=$kind-$SQLQ_TEST_SOURCE
    if "$@"; then
        [[ "$known" != *" $on "* ]] || fail "passes on $on now: the known bug ($bug) is gone, take $on off its list"
    elif [[ "$known" == *" $on "* ]]; then
        echo "KNOWN PRODUCT BUG on $on: $bug" >&2
    else
        fail "$bug"
    fi
}

case "$kind" in
sqlite)
    conn="Driver={SQLite3};Database=$tmp/shop.db;"
    sql() { sqlite3 -cmd ".timeout 5000" "$tmp/shop.db" "$1"; }
    query() { sqlite3 -cmd ".timeout 5000" "$tmp/shop.db" "$1"; } ;;
postgres)
    port=$(cat "$env_dir/postgres/port")
    psql -X -q -h 127.0.0.1 -p "$port" -U sqlq -d postgres -c "CREATE DATABASE $name" >/dev/null
    conn="$(cat "$env_dir/postgres/odbc")Database=$name;"
    sql() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq -d "$name" -c "$1" >/dev/null; }
    query() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq -d "$name" -c "$1"; } ;;
mariadb)
    port=$(cat "$env_dir/mariadb/port")
    mariadb --no-defaults -h 127.0.0.1 -P "$port" -u sqlq -e "CREATE DATABASE $name"
    conn="$(cat "$env_dir/mariadb/odbc")Database=$name;"
    sql() { mariadb --no-defaults -h 127.0.0.1 -P "$port" -u sqlq "$name" -e "$1"; }
    query() {
        mariadb --no-defaults --default-character-set=utf8mb4 -N -B -r -h 127.0.0.1 -P "$port" -u sqlq \
            "$name" -e "$1" | sed ':a; s/\tNULL\t/\t\t/; ta; s/\tNULL$/\t/; s/^NULL\t/\t/; s/^NULL$//' |
            tr '\t' '|'
    } ;;
*) fail "unknown database" ;;
esac
