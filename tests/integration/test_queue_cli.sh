#!/usr/bin/env bash
# `sqlq queue`: --help for every subcommand, exit codes (0 ok / 1 failed / 2 usage), where the
# connection comes from, and a get -> update -> delete-message round trip with pop receipts.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
work=$(mktemp -d)
q="cli-$$"
unset SQLQ_QUEUE_CONNECTION SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage
cleanup() { SQLQ_QUEUE_CONNECTION="$conn" "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "queue_cli: $*" >&2; exit 1; }
expect_rc() { # expect_rc CODE CMD...
    local want=$1 rc=0
    shift
    "$@" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" = "$want" ] || { cat "$work/out" "$work/err" >&2; fail "'$*' exited $rc, expected $want"; }
}
field() { node -e 'const o=JSON.parse(require("fs").readFileSync(0,"utf8").split("\n")[0]);console.log(o[process.argv[1]])' "$1" < "$work/out"; }

for sub in create delete list stats put peek get delete-message update clear; do
    expect_rc 0 "$SQLQ_BIN" queue "$sub" --help
    grep -q "^usage: sqlq queue $sub" "$work/out" || fail "$sub --help has no usage line"
done
expect_rc 0 "$SQLQ_BIN" queue --help
expect_rc 2 "$SQLQ_BIN" queue
expect_rc 2 "$SQLQ_BIN" queue frobnicate
expect_rc 2 "$SQLQ_BIN" queue create "$q"                      # no connection anywhere
grep -q "no queue connection" "$work/err" || fail "missing connection not explained"
expect_rc 2 "$SQLQ_BIN" queue create "$q" --queue-connection "AccountName=x;AccountKey=bm90LWEta2V5!"
grep -q "AccountKey" "$work/err" && ! grep -q "bm90LWEta2V5" "$work/err" || fail "bad key not explained or echoed"
expect_rc 2 "$SQLQ_BIN" queue create Not_Valid --queue-connection "$conn"
expect_rc 2 "$SQLQ_BIN" queue get "$q" --limit 33 --queue-connection "$conn"
expect_rc 2 "$SQLQ_BIN" queue peek "$q" --count 33 --queue-connection "$conn"
# "At most N messages" is --limit, as in the poison commands; --count stays accepted and says so.
expect_rc 0 "$SQLQ_BIN" queue peek --help
grep -q -- "--limit N" "$work/out" && grep -A1 -- "--count N" "$work/out" | grep -q "the same as --limit" \
    || fail "peek --help does not show --limit and --count as its other spelling"
expect_rc 2 "$SQLQ_BIN" queue put "$q" a b c --queue-connection "$conn"

# Connection from each source: flag, SQLQ_QUEUE_CONNECTION, AzureWebJobsStorage, _FILE.
expect_rc 0 "$SQLQ_BIN" queue create "$q" --queue-connection "$conn"
grep -q "^created $q" "$work/out" || fail "create did not say created"
expect_rc 0 env AzureWebJobsStorage="$conn" "$SQLQ_BIN" queue create "$q"
grep -q "^exists $q" "$work/out" || fail "second create did not say exists"
printf '%s\n' "$conn" > "$work/conn"
expect_rc 0 env SQLQ_QUEUE_CONNECTION_FILE="$work/conn" "$SQLQ_BIN" queue stats "$q"
export SQLQ_QUEUE_CONNECTION="$conn"
expect_rc 1 "$SQLQ_BIN" queue stats "nosuch-$$"
grep -q "QueueNotFound" "$work/err" || fail "404 not reported"

# get -> update (new body, new receipt) -> old receipt refused -> delete with the new one.
expect_rc 0 "$SQLQ_BIN" queue put "$q" "first body"
expect_rc 0 "$SQLQ_BIN" queue get "$q" --visibility-s 60
[ "$(field body)" = "first body" ] || fail "get body"
[ "$(field dequeue_count)" = 1 ] || fail "dequeue_count"
id=$(field id)
old=$(field pop_receipt)
expect_rc 0 "$SQLQ_BIN" queue update "$q" "$id" "$old" "second body" --visibility-s 0
new=$(field pop_receipt)
[ -n "$new" ] && [ "$new" != "$old" ] || fail "update did not print a new pop receipt"
expect_rc 1 "$SQLQ_BIN" queue delete-message "$q" "$id" "$old"
grep -q "PopReceiptMismatch" "$work/err" || fail "old receipt not refused"
expect_rc 0 "$SQLQ_BIN" queue peek "$q"
[ "$(field body)" = "second body" ] || fail "update did not change the body"
expect_rc 0 "$SQLQ_BIN" queue delete-message "$q" "$id" "$new"

# --count with --in-flight, --raw, plain encoding, clear.
expect_rc 0 "$SQLQ_BIN" queue put "$q" "copy" --count 50 --in-flight 8
[ "$(field put)" = 50 ] && [ "$(field failed)" = 0 ] || fail "put --count"
expect_rc 0 "$SQLQ_BIN" queue peek "$q" --raw
[ "$(field text)" = "Y29weQ==" ] || fail "--raw shows the stored text"
expect_rc 0 "$SQLQ_BIN" queue peek "$q" --limit 5
[ "$(grep -c '"body"' "$work/out")" = 5 ] || fail "peek --limit 5 did not show 5 messages"
expect_rc 0 "$SQLQ_BIN" queue peek "$q" --count 3
[ "$(grep -c '"body"' "$work/out")" = 3 ] || fail "peek --count 3 (the other spelling) did not show 3"
expect_rc 2 "$SQLQ_BIN" queue peek "$q" --limit 3 --count 4
grep -q -- "--count is another spelling of --limit" "$work/err" || fail "--limit and --count disagreeing not explained"
expect_rc 0 "$SQLQ_BIN" queue clear "$q"
expect_rc 0 "$SQLQ_BIN" queue put "$q" "as is" --encoding plain
expect_rc 0 "$SQLQ_BIN" queue peek "$q" --encoding plain
[ "$(field body)" = "as is" ] || fail "plain round trip"
expect_rc 0 "$SQLQ_BIN" queue list --prefix "$q"
[ "$(cat "$work/out")" = "$q" ] || fail "list --prefix"
expect_rc 0 "$SQLQ_BIN" queue delete "$q"
echo "queue_cli: ok"
