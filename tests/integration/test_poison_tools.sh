#!/usr/bin/env bash
# `sqlq poison` round trips against Azurite, counting every message: import, export (keeps
# them, and they are visible again at once), export --delete, import of the export (same
# texts), requeue --where / --dry-run / --limit / --all (safe to re-run), purge; then a requeue
# killed with SIGKILL half way and run again: every message arrives, at most one twice.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}"
support=$(cd "$(dirname "$0")/../support" && pwd)
work=$(mktemp -d)
# An Azurite of its own: hundreds of messages moved back and forth, and a requeue killed half
# way, are load that left the shared one answering nothing for 15-30 s at a time.
"$support/azurite.sh" start "$work/azurite" >/dev/null
export SQLQ_QUEUE_CONNECTION="$(cat "$work/azurite/conn")"
q="ptools-$$"
p="$q-poison"
pid=
cleanup() {
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    "$support/azurite.sh" stop "$work/azurite" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "poison_tools: $*" >&2; exit 1; }
count() { "$SQLQ_BIN" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
expect_count() { [ "$(count "$1")" = "$2" ] || fail "$3: $1 has $(count "$1") messages, want $2"; }
# The bodies now in the main queue, one a line, sorted (drained with the consumer).
drain_main() {
    rm -f "$work/drained"
    timeout 120 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
        --exec "b=\$(cat); printf '%s\n' \"\$b\" >> '$work/drained'" 2>/dev/null || fail "drain exited $?"
    sort "$work/drained"
}
texts() { sed -n 's/.*"text":"\([^"]*\)".*/\1/p' "$1" | sort; }

"$SQLQ_BIN" queue create "$q" >/dev/null
for i in $(seq 1 200); do printf '{"body":"{\\"kind\\":\\"k%d\\",\\"i\\":%d}"}\n' $((i % 2)) "$i"; done > "$work/in.jsonl"
for i in $(seq 1 200); do printf '{"kind":"k%d","i":%d}\n' $((i % 2)) "$i"; done | sort > "$work/all.sorted"
"$SQLQ_BIN" poison import "$work/in.jsonl" "$p" | grep -q "imported 200 message(s) into $p" || fail "import"
expect_count "$p" 200 "after import"

"$SQLQ_BIN" poison export "$q" "$work/e1.jsonl" >/dev/null
[ "$(wc -l < "$work/e1.jsonl")" = 200 ] || fail "export wrote $(wc -l < "$work/e1.jsonl") lines"
[ "$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' "$work/e1.jsonl" | sort -u | wc -l)" = 200 ] || fail "export ids not unique"
expect_count "$p" 200 "export without --delete"
# Visible again at once: a second export sees all of them.
"$SQLQ_BIN" poison export "$q" "$work/e2.jsonl" --delete >/dev/null
[ "$(wc -l < "$work/e2.jsonl")" = 200 ] || fail "export --delete wrote $(wc -l < "$work/e2.jsonl") lines"
expect_count "$p" 0 "export --delete"
sed -n 's/.*"body":"\(.*\)"}$/\1/p' "$work/e2.jsonl" | sed 's/\\"/"/g' | sort > "$work/e2.bodies"
cmp -s "$work/e2.bodies" "$work/all.sorted" || fail "exported bodies differ from the imported ones"
"$SQLQ_BIN" poison export "$q" "$work/e2.jsonl" 2>/dev/null && fail "export overwrote a file"

"$SQLQ_BIN" poison import "$work/e2.jsonl" "$p" >/dev/null
expect_count "$p" 200 "import of the export"
"$SQLQ_BIN" poison export "$q" "$work/e3.jsonl" >/dev/null
cmp -s <(texts "$work/e2.jsonl") <(texts "$work/e3.jsonl") || fail "import did not keep the texts verbatim"
echo "poison_tools: import/export round trips: ok"

out=$("$SQLQ_BIN" poison requeue "$q" --where kind=k1 --dry-run)
echo "$out" | grep -q '^would move 100 message' || fail "dry run: $out"
expect_count "$q" 0 "dry run"
expect_count "$p" 200 "dry run"
"$SQLQ_BIN" poison requeue "$q" --where kind=k1 | grep -q '^moved 100 message' || fail "requeue --where"
expect_count "$q" 100 "requeue --where"
expect_count "$p" 100 "requeue --where"
"$SQLQ_BIN" poison requeue "$q" --where kind=k1 | grep -q '^moved 0 message' || fail "requeue again moved something"
"$SQLQ_BIN" poison requeue "$q" --all --limit 30 | grep -q '^moved 30 message' || fail "requeue --limit"
"$SQLQ_BIN" poison requeue "$q" --all | grep -q '^moved 70 message' || fail "requeue --all"
expect_count "$p" 0 "requeue --all"
drain_main > "$work/main.sorted"
cmp -s "$work/main.sorted" "$work/all.sorted" || fail "requeued bodies differ: $(diff "$work/main.sorted" "$work/all.sorted" | head -3)"
echo "poison_tools: requeue moved every message exactly once: ok"

"$SQLQ_BIN" poison import "$work/e1.jsonl" "$p" >/dev/null
set +e; echo | "$SQLQ_BIN" poison purge "$q" >/dev/null 2>&1; code=$?; set -e
[ "$code" = 2 ] || fail "purge without --yes exited $code, want 2"
expect_count "$p" 200 "refused purge"
"$SQLQ_BIN" poison purge "$q" --yes >/dev/null
expect_count "$p" 0 "purge"
echo "poison_tools: purge: ok"

# Crash in the middle of a requeue, then run it again.
for i in $(seq 1 300); do printf '{"body":"crash-%d"}\n' "$i"; done > "$work/crash.jsonl"
seq 1 300 | sed 's/^/crash-/' | sort > "$work/crash.sorted"
"$SQLQ_BIN" poison import "$work/crash.jsonl" "$p" >/dev/null
"$SQLQ_BIN" poison requeue "$q" --all --visibility-s 2 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ "$(count "$q")" -ge 40 ] && break; sleep 0.05; done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
moved_before=$(count "$q")
[ "$moved_before" -lt 300 ] || fail "the requeue finished before it could be killed"
sleep 2.5 # what the killed run held becomes visible again
"$SQLQ_BIN" poison requeue "$q" --all --visibility-s 2 >/dev/null
expect_count "$p" 0 "requeue after the crash"
total=$(count "$q")
[ "$total" -ge 300 ] && [ "$total" -le 301 ] || fail "$total messages after the crash and re-run (want 300, at most one duplicate)"
drain_main | sort -u > "$work/crash.got"
cmp -s "$work/crash.got" "$work/crash.sorted" || fail "messages lost in the crash"
echo "poison_tools: killed after $moved_before, re-run: $total messages for 300 (nothing lost): ok"

# A change the bridge poisoned is {"sqlq_poison":1, "reason", "message"}: requeue puts back the
# message itself; an envelope without the marker (not written by sqlq) goes back byte-identical.
"$SQLQ_BIN" queue clear "$q" >/dev/null
inner='{"id":"0123abcd","op":"update","table":"orders","key":{"id":7},"row":{"id":7,"v":"x"},"version":42}'
printf '{"sqlq_poison":1,"reason":"refused: MessageTooLarge","message":%s}' "$inner" | "$SQLQ_BIN" queue put "$p" >/dev/null
"$SQLQ_BIN" poison requeue "$q" --all >/dev/null
[ "$(drain_main)" = "$inner" ] || fail "bridge poison envelope not unwrapped on requeue: $(cat "$work/drained")"
foreign=$(printf '{"reason":"theirs","message":%s}' "$inner")
printf '%s' "$foreign" | "$SQLQ_BIN" queue put "$p" >/dev/null
"$SQLQ_BIN" poison requeue "$q" --all >/dev/null
[ "$(drain_main)" = "$foreign" ] || fail "an unmarked envelope was changed on requeue: $(cat "$work/drained")"
echo "poison_tools: sqlq envelope unwrapped, foreign one kept byte-identical on requeue: ok"

# A misspelled queue name is not "nothing was ever poisoned": neither QUEUE nor QUEUE-poison
# exists, so every poison command says so and exits 1 (found by a user-play session).
typo="ptools-typo-$$"
for args in "list $typo" "requeue $typo --all" "export $typo $work/typo.jsonl" "purge $typo --yes"; do
    rc=0
    # shellcheck disable=SC2086
    "$SQLQ_BIN" poison $args >/dev/null 2>"$work/typo.err" || rc=$?
    [ "$rc" -eq 1 ] || fail "poison $args on a missing queue exited $rc, want 1"
    grep -q "neither $typo nor $typo-poison exists" "$work/typo.err" || fail "poison $args: $(cat "$work/typo.err")"
done
[ ! -e "$work/typo.jsonl" ] || fail "export on a missing queue wrote a file"
# The main queue exists and its poison queue does not: nothing was ever poisoned, exit 0.
"$SQLQ_BIN" queue delete "$p" >/dev/null
"$SQLQ_BIN" poison list "$q" >/dev/null 2>"$work/none.err" || fail "poison list with no poison queue exited $?"
grep -q "nothing was ever poisoned" "$work/none.err" || fail "poison list: $(cat "$work/none.err")"
echo "poison_tools: a misspelled queue exits 1, a queue never poisoned exits 0: ok"
