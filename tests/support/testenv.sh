# testenv.sh: sourced by shell integration tests that use the fixtures' Azurite and PostgreSQL:
# bin (the sqlq binary), SQLQ_QUEUE_CONNECTION (exported), port and pgodbc (the PostgreSQL
# server's port and ODBC connection string prefix), psql_ (psql on it, stopping at an error).
bin=${SQLQ_BIN:?run through ctest}
SQLQ_QUEUE_CONNECTION=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
export SQLQ_QUEUE_CONNECTION
port=$(cat "$SQLQ_TEST_ENV_DIR/postgres/port")
pgodbc=$(cat "$SQLQ_TEST_ENV_DIR/postgres/odbc")
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
