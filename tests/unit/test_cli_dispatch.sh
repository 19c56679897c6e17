#!/usr/bin/env bash
# The command line's one dispatcher and one account set-up, without servers:
# - `sqlq`, `sqlq poison` and `sqlq queue` pick commands the same way: no command or an
#   unknown one exits 2 naming it, --help exits 0 with the list on stdout;
# - every command that reaches the queue service says the same thing, exit 2, when the
#   connection is missing or invalid, and names the command.
set -euo pipefail

bin=${SQLQ_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/err" >&2 2>/dev/null || true; exit 1; }
unset SQLQ_QUEUE_CONNECTION SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage \
      AzureWebJobsStorage_FILE SQLQ_DB_CONNECTION SQLQ_CONFIG || true

# expect CODE GREP-PATTERN ARGS...: exit code CODE and stderr matching the pattern.
expect() {
    local want=$1 pattern=$2
    shift 2
    set +e
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    local code=$?
    set -e
    [ "$code" = "$want" ] || fail "sqlq $*: exit $code, want $want"
    [ -z "$pattern" ] || grep -q -- "$pattern" "$tmp/err" || fail "sqlq $*: stderr lacks '$pattern'"
}

expect 2 "usage: sqlq COMMAND"
expect 2 "sqlq: unknown command 'frobnicate'" frobnicate
expect 0 "" --help
grep -q "^  consume " "$tmp/out" || fail "sqlq --help does not list consume"
for group in poison queue; do
    expect 2 "usage: sqlq $group SUBCOMMAND" "$group"
    expect 2 "sqlq $group: unknown subcommand 'frobnicate'" "$group" frobnicate
    expect 0 "" "$group" --help
    grep -q "usage: sqlq $group SUBCOMMAND" "$tmp/out" || fail "sqlq $group --help not on stdout"
done

db="Driver={SQLite3};Database=$tmp/none.db;"
missing="no queue connection: use --queue-connection"
expect 2 "sqlq bridge: $missing" bridge --db "$db" --table a --queue orders
expect 2 "sqlq consume: $missing" consume orders --exec true
expect 2 "sqlq backfill: $missing" backfill --db "$db" --table a --queue orders
expect 2 "sqlq queue list: $missing" queue list
expect 2 "sqlq poison list: $missing" poison list orders
grep -q "AzureWebJobsStorage__accountName or AzureWebJobsStorage__queueServiceUri" "$tmp/err" ||
    fail "the missing-connection message does not name the identity-based settings"
# Azure Functions' AzureWebJobsStorage__accountName alone is a connection (not "no queue connection").
AzureWebJobsStorage__accountName=Bad.Name expect 2 \
    "sqlq queue list: .*AzureWebJobsStorage__accountName: 'Bad.Name' is not a storage account name" queue list
for cmd in "bridge --db $db --table a --queue orders" "consume orders --exec true" \
           "backfill --db $db --table a --queue orders" "queue list" "poison list orders"; do
    name=${cmd%% *}
    # shellcheck disable=SC2086
    expect 2 "sqlq $name.*: queue connection: " $cmd --queue-connection "AccountName=x"
done
# An invalid queue name is named once, as `sqlq queue` says it (no repeated prefix).
dev="UseDevelopmentStorage=true"
for cmd in "consume pq --exec true" "queue create pq"; do
    # shellcheck disable=SC2086
    expect 2 "queue name 'pq' must be 3 to 63 characters long" $cmd --queue-connection "$dev"
    grep -q "queue name: queue name" "$tmp/err" && fail "sqlq $cmd: the queue name error repeats its prefix"
done
echo "cli_dispatch: ok"
