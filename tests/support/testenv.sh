# testenv.sh: sourced by shell integration tests that use the fixtures' Azurite and PostgreSQL:
# bin (the sqlq binary), SQLQ_QUEUE_CONNECTION (exported), port and pgodbc (the PostgreSQL
# server's port and ODBC connection string prefix), psql_ (psql on it, stopping at an error),
# settled (nothing pending or leased for a table, by `sqlq status`).
bin=${SQLQ_BIN:?run through ctest}
SQLQ_QUEUE_CONNECTION=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
export SQLQ_QUEUE_CONNECTION
port=$(cat "$SQLQ_TEST_ENV_DIR/postgres/port")
pgodbc=$(cat "$SQLQ_TEST_ENV_DIR/postgres/odbc")
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }

# settled CONN TABLE TENTHS: wait up to TENTHS tenths of a second until `sqlq status` says no
# change of TABLE is pending or leased; the last status (JSON) is in $status, and the exit code
# says whether it settled.
settled() {
    status=""
    for _ in $(seq 1 "$3"); do
        status=$("$bin" status --db "$1" --table "$2" --json)
        echo "$status" | grep -q '"pending": *0[,}]' && echo "$status" | grep -q '"leased": *0[,}]' &&
            return 0
        sleep 0.1
    done
    return 1
}
