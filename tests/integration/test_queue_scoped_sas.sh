#!/usr/bin/env bash
# A queue-scoped SAS URL from the official SDK's generateSasUrl() (what the Portal
# gives) works as the queue connection: the queue comes from the URL, a different queue on the
# command line is a configuration error (exit 2) naming both, and commands that need the poison
# queue say it is not reachable with such a SAS.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
endpoint=$(echo "$conn" | sed -n 's/.*QueueEndpoint=\([^;]*\).*/\1/p')
key=$(echo "$conn" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
work=$(mktemp -d)
q="scoped-$$-$RANDOM"
unset SQLQ_QUEUE_CONNECTION SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage
cleanup() { "$SQLQ_BIN" queue delete "$q" --queue-connection "$conn" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "queue_scoped_sas: $*" >&2; exit 1; }
expect_rc() { # expect_rc CODE CMD...
    local want=$1 rc=0
    shift
    "$@" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" = "$want" ] || { cat "$work/out" "$work/err" >&2; fail "'$*' exited $rc, expected $want"; }
}

expect_rc 0 "$SQLQ_BIN" queue create "$q" --queue-connection "$conn"
sas_url=$(cd "$SQLQ_SOURCE_DIR" && node tests/support/queue_sas_url.js "$endpoint" devstoreaccount1 "$key" "$q" raup)
case "$sas_url" in "$endpoint/$q?"*sig=*) ;; *) fail "unexpected SAS URL form: ${sas_url%%sig=*}" ;; esac

# The queue from the URL: put, peek and consume work (before the fix: /ACCOUNT/Q/Q/messages, 400).
expect_rc 0 "$SQLQ_BIN" queue put "$q" "hello-scoped" --queue-connection "$sas_url"
expect_rc 0 "$SQLQ_BIN" queue peek "$q" --queue-connection "$sas_url"
grep -q "hello-scoped" "$work/out" || fail "peek through the SAS URL did not show the message"
expect_rc 0 "$SQLQ_BIN" consume "$q" --exec "cat > $work/handled" --exit-when-empty \
    --queue-connection "$sas_url"
[ "$(cat "$work/handled")" = "hello-scoped" ] || fail "consume through the SAS URL did not run the handler"
grep -q "poison_queue_unreachable" "$work/err" || fail "consume did not say the poison queue is out of reach"

# The bridge publishes through the URL (a queue SAS cannot create the queue: it goes on as if
# it exists), from SQLite.
db="$work/src.db"
sqlite3 "$db" "CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT);"
sqlite_conn="Driver={SQLite3};Database=$db;Timeout=5000;"
"$SQLQ_BIN" setup --db "$sqlite_conn" --table items >/dev/null 2>&1 || fail "setup failed"
sqlite3 "$db" "INSERT INTO items VALUES (1, 'via-queue-sas');"
expect_rc 0 "$SQLQ_BIN" bridge --db "$sqlite_conn" --table items --queue "$q" --once \
    --queue-connection "$sas_url"
grep -q "poison_queue_unreachable" "$work/err" || fail "the bridge did not say the poison queue is out of reach"
expect_rc 0 "$SQLQ_BIN" queue peek "$q" --limit 32 --queue-connection "$conn"
grep -q "via-queue-sas" "$work/out" || { cat "$work/out" >&2; fail "the bridge's message did not arrive"; }
expect_rc 0 "$SQLQ_BIN" queue create "$q" --queue-connection "$sas_url"
grep -q "queue_create_skipped" "$work/err" || fail "create through a queue SAS: no note"

# Another queue on the command line: exit 2 naming both.
for cmd in "queue put other-queue x" "queue peek other-queue" "consume other-queue --exec true --exit-when-empty" \
    "bridge --db $sqlite_conn --table items --queue other-queue --once"; do
    # shellcheck disable=SC2086
    expect_rc 2 "$SQLQ_BIN" $cmd --queue-connection "$sas_url"
    grep -q "'other-queue'" "$work/err" && grep -q "'$q'" "$work/err" ||
        { cat "$work/err" >&2; fail "'$cmd' does not name both queues"; }
done

# The poison queue is not reachable with a SAS for one queue: said clearly, exit 2.
expect_rc 2 "$SQLQ_BIN" poison list "$q" --queue-connection "$sas_url"
grep -q "not reachable with this credential" "$work/err" || { cat "$work/err" >&2; fail "poison list: no clear reason"; }
echo "queue_scoped_sas: ok"
