#!/usr/bin/env bash
# A private Azurite queue service on 127.0.0.1 for tests and demos.
#   azurite.sh start DIR [PORT] [--disk]  start (in memory unless --disk), wait until it answers;
#                                         writes DIR/port, DIR/pid, DIR/conn (connection string)
#   azurite.sh stop DIR                   stop it (no error when it is not running)
# It runs Azurite through azurite_queue.js, which batches Azurite's extent garbage collection
# (one-by-one deletes froze the service for 15-30 s once a minute under test load; see there).
# SQLQ_TEST_AZURITE_STOCK=1 runs node_modules/.bin/azurite-queue as it is (to compare, with
# azurite_probe.js).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cmd=${1:?usage: azurite.sh start|stop DIR [PORT] [--disk]}
dir=${2:?usage: azurite.sh start|stop DIR [PORT] [--disk]}
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

stop() {
    if [ -f "$dir/pid" ]; then
        pid=$(cat "$dir/pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/pid"
    fi
}

case "$cmd" in
    start)
        mkdir -p "$dir"
        stop
        port=${3:-}
        persist=(--inMemoryPersistence)
        for a in "${@:3}"; do [ "$a" = --disk ] && persist=(--location "$dir/data"); done
        [ -n "$port" ] && [ "$port" != --disk ] || port=$("$here/free_port.sh")
        bin="$root/node_modules/.bin/azurite-queue"
        [ -x "$bin" ] || { echo "azurite.sh: $bin missing: run scripts/install-deps.sh" >&2; exit 1; }
        launch=(node "$here/azurite_queue.js")
        [ "${SQLQ_TEST_AZURITE_STOCK:-0}" = 1 ] && launch=("$bin")
        mkdir -p "$dir/data"
        setsid "${launch[@]}" --queueHost 127.0.0.1 --queuePort "$port" "${persist[@]}" \
            --disableTelemetry --silent >"$dir/azurite.log" 2>&1 < /dev/null &
        echo $! >"$dir/pid"
        echo "$port" >"$dir/port"
        printf 'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=%s;QueueEndpoint=http://127.0.0.1:%s/devstoreaccount1;\n' \
            "$key" "$port" >"$dir/conn"
        for _ in $(seq 200); do
            if curl -s -o /dev/null "http://127.0.0.1:$port/devstoreaccount1?comp=list"; then
                echo "azurite on 127.0.0.1:$port (pid $(cat "$dir/pid"))"
                exit 0
            fi
            kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
            sleep 0.1
        done
        echo "azurite.sh: Azurite did not start; log:" >&2
        cat "$dir/azurite.log" >&2
        stop
        exit 1
        ;;
    stop) stop ;;
    *) echo "azurite.sh: unknown command $cmd" >&2; exit 2 ;;
esac
