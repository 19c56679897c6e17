#!/bin/sh
# entrypoint: the container's command dispatcher. All of these work:
#   docker run IMAGE bridge --config /etc/sqlq/bridge.json   -> sqlq bridge ...
#   docker run IMAGE sqlq queue stats orders                 -> sqlq queue stats orders
#   docker run IMAGE --version                               -> sqlq --version
#   docker run IMAGE sh -c 'echo hi'                         -> sh -c 'echo hi'
#   docker run IMAGE                                         -> sqlq --help
# Rule: a first word "sqlq" is dropped; a sqlq command or an option goes to sqlq; an executable
# on PATH runs as it is; anything else goes to sqlq, which names the unknown command.
# Every branch uses exec, so the program replaces this shell and receives SIGTERM directly
# (from tini, the image's PID 1, which forwards signals and reaps zombies).
# SQLQ_BIN_PATH overrides the binary (tests run this script outside a container).
set -eu

sqlq=${SQLQ_BIN_PATH:-/usr/local/bin/sqlq}

if [ "$#" -eq 0 ]; then
    exec "$sqlq" --help
fi

if [ "$1" = sqlq ]; then
    shift
    exec "$sqlq" "$@"
fi

case "$1" in
    bridge | setup | status | consume | poison | queue | config | help | version | -*)
        exec "$sqlq" "$@"
        ;;
esac

if command -v "$1" >/dev/null 2>&1; then
    exec "$@"
fi
exec "$sqlq" "$@"
