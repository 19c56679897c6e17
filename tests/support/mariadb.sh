#!/usr/bin/env bash
# A private MariaDB server on 127.0.0.1 for tests and benchmarks, in DIR, as the current user
# (root included: --user=root), its socket in DIR, durability off.
#   mariadb.sh start DIR [PORT]   install the data directory if needed, start, wait; creates the
#                                 account sqlq (all privileges, no password) and writes DIR/port
#                                 and DIR/odbc (ODBC connection string prefix without Database=)
#   mariadb.sh stop DIR
# Grants are enforced (no --skip-grant-tables), so tests can make least-privilege accounts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?usage: mariadb.sh start|stop DIR [PORT]}
dir=${2:?usage: mariadb.sh start|stop DIR [PORT]}
dir=$(mkdir -p "$dir" && cd "$dir" && pwd)

server=$(command -v mariadbd || ls /usr/sbin/mariadbd 2>/dev/null || true)
[ -n "$server" ] || { echo "mariadb.sh: no MariaDB server installed: run scripts/install-deps.sh" >&2; exit 1; }
user=$(id -un)
# unix_socket authentication: install-db gives the OS user that ran it (root or not) an
# account of its own name with every privilege.
client() { mariadb --no-defaults --socket="$dir/mysqld.sock" -u "$user" "$@"; }

stop_server() {
    [ -f "$dir/mysqld.pid" ] || return 0
    pid=$(cat "$dir/mysqld.pid")
    kill "$pid" 2>/dev/null || { rm -f "$dir/mysqld.pid"; return 0; }
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/mysqld.pid"
}

case "$cmd" in
    start)
        stop_server
        mkdir -p "$dir/tmp" # the server's temporary files stay in DIR (/tmp may not be writable)
        if [ ! -d "$dir/data/mysql" ]; then
            # root@localhost and <user>@localhost authenticate by unix socket (no password).
            mariadb-install-db --no-defaults --datadir="$dir/data" --user="$user" \
                --auth-root-authentication-method=socket --skip-test-db --tmpdir="$dir/tmp" >"$dir/install.log" 2>&1 \
                || { cat "$dir/install.log" >&2; exit 1; }
        fi
        port=${3:-$("$here/free_port.sh")}
        setsid "$server" --no-defaults --datadir="$dir/data" --user="$user" --port="$port" \
            --bind-address=127.0.0.1 --socket="$dir/mysqld.sock" --pid-file="$dir/mysqld.pid" \
            --tmpdir="$dir/tmp" \
            --log-error="$dir/server.log" --skip-name-resolve --max-connections=300 \
            --innodb-flush-log-at-trx-commit=0 --sync-binlog=0 --innodb-doublewrite=0 \
            --innodb-buffer-pool-size=64M --character-set-server=utf8mb4 \
            --collation-server=utf8mb4_bin --default-time-zone=+00:00 \
            --innodb-lock-wait-timeout=5 >/dev/null 2>&1 &
        for _ in $(seq 1 600); do
            client -e 'SELECT 1' >/dev/null 2>&1 && break
            [ -f "$dir/mysqld.pid" ] || kill -0 $! 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
            sleep 0.1
        done
        client -e 'SELECT 1' >/dev/null 2>&1 || { cat "$dir/server.log" >&2; stop_server; exit 1; }
        # Tests connect over TCP as sqlq, which may create databases and accounts of its own.
        client -e "CREATE USER IF NOT EXISTS 'sqlq'@'127.0.0.1' IDENTIFIED BY '';
                   GRANT ALL PRIVILEGES ON *.* TO 'sqlq'@'127.0.0.1' WITH GRANT OPTION;" \
            || { stop_server; exit 1; }
        echo "$port" >"$dir/port"
        echo "Driver={MariaDB Unicode};Server=127.0.0.1;Port=$port;UID=sqlq;PWD=;" >"$dir/odbc"
        echo "mariadb on 127.0.0.1:$port"
        ;;
    stop) stop_server ;;
    *) echo "mariadb.sh: unknown command $cmd" >&2; exit 2 ;;
esac
