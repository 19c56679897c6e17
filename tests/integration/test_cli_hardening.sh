#!/usr/bin/env bash
# At the command line: a secret flag is gone from /proc/PID/cmdline once
# parsed; configuration mistakes are exit 2 with one clear message (a huge SAS, BlobEndpoint
# alone, plain http to a remote host, --http's prefix once, backfill --batch-size 0).
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
key=$(echo "$conn" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
work=$(mktemp -d)
q="hard-$$-$RANDOM"
pid=""
unset SQLQ_QUEUE_CONNECTION SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage
cleanup() {
    set +e # every step runs: a process already gone must not end it early
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    "$SQLQ_BIN" queue delete "$q" --queue-connection "$conn" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "cli_hardening: $*" >&2; exit 1; }
expect_rc() { # expect_rc CODE CMD...
    local want=$1 rc=0
    shift
    "$@" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" = "$want" ] || { cat "$work/out" "$work/err" >&2; fail "'$*' exited $rc, expected $want"; }
}

# The account key given as a flag: not in /proc/PID/cmdline while the consumer runs.
"$SQLQ_BIN" queue create "$q" --queue-connection "$conn" >/dev/null
"$SQLQ_BIN" consume "$q" --exec true --queue-connection "$conn" >"$work/consume.log" 2>&1 &
pid=$!
for _ in $(seq 50); do grep -q "consumer" "$work/consume.log" && break; sleep 0.1; done
tr '\0' ' ' <"/proc/$pid/cmdline" >"$work/cmdline"
grep -q -- "--queue-connection" "$work/cmdline" || fail "cmdline not read: $(cat "$work/cmdline")"
if grep -qF "${key:0:16}" "$work/cmdline" || grep -qF "AccountName" "$work/cmdline"; then
    fail "the connection string is still in /proc/$pid/cmdline"
fi
kill "$pid"
wait "$pid" || true
pid=""

# A huge SAS or endpoint: a configuration error (exit 2), not "request too large" (exit 1).
big=$(head -c 6000 /dev/zero | tr '\0' x)
expect_rc 2 "$SQLQ_BIN" queue peek "$q" --queue-connection "https://a.queue.core.windows.net/?sv=1&sig=abc&x=$big"
grep -q "SAS token is" "$work/err" || fail "huge SAS: $(cat "$work/err")"
expect_rc 2 "$SQLQ_BIN" queue peek "$q" \
    --queue-connection "QueueEndpoint=https://a.queue.core.windows.net/$big;SharedAccessSignature=sv=1&sig=abc"
grep -q "allowed up to" "$work/err" || fail "huge endpoint: $(cat "$work/err")"
# BlobEndpoint alone: the queue endpoint is missing.
expect_rc 2 "$SQLQ_BIN" queue peek "$q" \
    --queue-connection "BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=1&sig=abcdef"
grep -q "queue endpoint is missing" "$work/err" || fail "BlobEndpoint alone: $(cat "$work/err")"
# Plain http to a remote host: refused before any connection, allowed only when asked for.
expect_rc 2 "$SQLQ_BIN" queue peek "$q" \
    --queue-connection "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=$key"
grep -q "allow_insecure_http" "$work/err" || fail "plain http: $(cat "$work/err")"
# --http's own prefix once.
expect_rc 2 "$SQLQ_BIN" consume "$q" --http ftp://example --queue-connection "$conn"
[ "$(grep -o -- "--http" "$work/err" | wc -l)" = 1 ] || fail "--http prefix: $(cat "$work/err")"
# user:password@ in the --http handler's URL never shows in what is logged about it.
"$SQLQ_BIN" queue put "$q" hello --queue-connection "$conn" >/dev/null
port=$(bash "$SQLQ_SOURCE_DIR/tests/support/free_port.sh") # nothing listens there
"$SQLQ_BIN" consume "$q" --http "http://bob:Hunter2-pw@127.0.0.1:$port/hook?code=fn-key-123" \
    --exit-when-empty --visibility-timeout-s 30 --queue-connection "$conn" >"$work/out" 2>"$work/err" || true
grep -q "127.0.0.1:$port" "$work/err" || { cat "$work/err" >&2; fail "the failed POST was not logged"; }
if grep -q "Hunter2-pw\|bob:\|fn-key-123" "$work/err"; then
    cat "$work/err" >&2
    fail "the --http URL's password or key was logged"
fi
# backfill --batch-size 0: exit 2 (a leak turned it into 1 under LeakSanitizer).
expect_rc 2 "$SQLQ_BIN" backfill --batch-size 0 --table t --queue "$q" --db "Driver=x" --queue-connection "$conn"
echo "cli_hardening: ok"
