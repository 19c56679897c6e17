#!/usr/bin/env bash
# A private PostgreSQL server on 127.0.0.1 for tests and benchmarks (trust auth, fsync off).
#   postgres.sh start DIR [PORT]   initdb if needed, start, wait; writes DIR/port and DIR/odbc
#                                  (ODBC connection string prefix without Database=)
#   postgres.sh stop DIR
# SQLQ_PG_DURABLE=1 keeps PostgreSQL's durable defaults (fsync, synchronous_commit and
# full_page_writes on), as a production server runs: bench/write_overhead.py measures both.
# SQLQ_PG_WAL_LEVEL sets wal_level (default replica, PostgreSQL's own; the test fixture starts
# it with logical, so that tests can decode the WAL).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?usage: postgres.sh start|stop DIR [PORT]}
dir=${2:?usage: postgres.sh start|stop DIR [PORT]}
dir=$(mkdir -p "$dir" && cd "$dir" && pwd)

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bindir" ] || { echo "postgres.sh: no PostgreSQL server installed: run scripts/install-deps.sh" >&2; exit 1; }

as_pg() {
    # initdb and postgres refuse to run as root: use the postgres account then.
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
    start)
        if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
        if [ ! -f "$dir/data/PG_VERSION" ]; then
            as_pg "$bindir/initdb" -D "$dir/data" -U sqlq --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
                || { cat "$dir/initdb.log" >&2; exit 1; }
        fi
        as_pg "$bindir/pg_ctl" -D "$dir/data" stop -m immediate >/dev/null 2>&1 || true
        port=${3:-$("$here/free_port.sh")}
        fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        [ "${SQLQ_PG_DURABLE:-0}" != 1 ] || fast=""
        # SQLQ_PG_SYNC_COMMIT=1 (fsync still off): each commit writes its WAL out before it
        # returns, so a walsender decodes it at once instead of at the WAL writer's next round.
        [ "${SQLQ_PG_SYNC_COMMIT:-0}" != 1 ] || fast=${fast/synchronous_commit=off/synchronous_commit=on}
        wal="-c wal_level=${SQLQ_PG_WAL_LEVEL:-replica} -c max_replication_slots=50 -c max_wal_senders=50"
        as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $fast $wal -c max_connections=300 -c max_prepared_transactions=20" >/dev/null \
            || { cat "$dir/server.log" >&2; exit 1; }
        echo "$port" >"$dir/port"
        echo "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=$port;UID=sqlq;PWD=;BoolsAsChar=0;UseDeclareFetch=1;Fetch=1000;" >"$dir/odbc"
        echo "postgres on 127.0.0.1:$port"
        ;;
    stop)
        [ -f "$dir/data/PG_VERSION" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" stop -m fast -w >/dev/null 2>&1 || true
        ;;
    *) echo "postgres.sh: unknown command $cmd" >&2; exit 2 ;;
esac
