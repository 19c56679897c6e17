#!/usr/bin/env bash
# Poison tools that say exactly what they did, against Azurite (some behind
# tests/support/fault_proxy.py to slow it down):
#  - an interrupted `poison export --delete` names every exported id still in the poison queue
#    (and those whose delete may have been done), and those are exactly what is left of the file;
#  - `poison import` checks every line before it imports anything, a 70,000-byte text included;
#    from standard input an interrupted import saves the input and prints a command that works;
#  - `poison requeue --all` while a consumer keeps failing the messages exits 0: it covered what
#    was in the poison queue when it started;
#  - `consume --poison-envelope` wraps JSON bodies that no double or int64 holds, with their
#    reason, and says so in the log when a body cannot be wrapped.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
unset SQLQ_CONFIG SQLQ_POISON_ENVELOPE
support="$SQLQ_SOURCE_DIR/tests/support"
work=$(mktemp -d)
export TMPDIR="$work"
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
aport=$(cat "$SQLQ_TEST_ENV_DIR/azurite/port")
export SQLQ_QUEUE_CONNECTION="$conn" SQLQ_STATE_DIR="$work/state"
q="honest-$$"
p="$q-poison"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    for x in "$q" "$p" "$q-e" "$q-e-poison"; do "$SQLQ_BIN" queue delete "$x" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "poison_honest: $*" >&2; exit 1; }
ok() { echo "poison_honest: $*: ok"; }
count() { { "$SQLQ_BIN" queue stats "$1" 2>/dev/null || true; } | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
run() { local name=$1; shift; rc=0; "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?; }
has() { grep -q -- "$2" "$work/$1.out" || { cat "$work/$1.out" "$work/$1.err" >&2; fail "$1: no '$2' in the output"; }; }
mkdir -p "$work/px"
echo pass >"$work/px/mode"
python3 "$support/fault_proxy.py" "$aport" "$work/px" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/px/port" ] && break; sleep 0.05; done
pconn=$(printf '%s' "$conn" | sed "s/:$aport/:$(cat "$work/px/port")/")
proxy() { echo "$*" >"$work/px/mode"; }
ids_of() { python3 -c 'import json,sys; [print(json.loads(l)["id"]) for l in open(sys.argv[1]) if l.strip()]' "$1" | sort; }

# ---- import: every line checked first, a 70,000-byte text included ----
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
good = lambda i: json.dumps({"text": "good-%d" % i})
with open(w + "/big.jsonl", "w") as f:
    f.write(good(1) + "\n" + json.dumps({"text": "x" * 70000}) + "\n" + good(3) + "\n")
with open(w + "/400.jsonl", "w") as f:
    for i in range(400):
        f.write(json.dumps({"body": "s-%d" % i}) + "\n")
PY
run big "$SQLQ_BIN" poison import "$work/big.jsonl" "$p"
[ "$rc" = 1 ] || fail "import of a file with a 70,000-byte line exited $rc"
has big "nothing was imported into $p: line 2: "
has big 'too large\|over\|exceed'
[ "$(count "$p")" = "" ] || [ "$(count "$p")" = 0 ] || fail "import put $(count "$p") message(s) from a file with an oversize line"
run bigpipe sh -c "cat '$work/big.jsonl' | '$SQLQ_BIN' poison import - '$p'"
[ "$rc" = 1 ] || fail "import from stdin of an oversize line exited $rc"
has bigpipe "nothing was imported into $p: line 2: "
[ "$(count "$p")" = "" ] || [ "$(count "$p")" = 0 ] || fail "import from stdin put messages"
ls "$work"/sqlq-import-* >/dev/null 2>&1 && fail "a refused import from stdin left its copy behind"
ok "import refuses a 70,000-byte line before importing anything"

# ---- import from stdin, interrupted: the saved input and a command that works ----
proxy delay 20
sh -c "cat '$work/400.jsonl' | '$SQLQ_BIN' poison import - '$p' --queue-connection '$pconn'" \
    >"$work/ximp.out" 2>"$work/ximp.err" &
ipid=$!
pids+=($ipid)
sleep 1.5
kill -INT "$(pgrep -P "$ipid" -f 'poison import')" 2>/dev/null || kill -INT "$ipid"
rc=0; wait "$ipid" || rc=$?
proxy pass
[ "$rc" = 1 ] || fail "interrupted import exited $rc: $(cat "$work/ximp.out")"
grep -q 'FILE' "$work/ximp.out" && fail "the import prints a placeholder: $(cat "$work/ximp.out")"
has ximp 'the input (standard input) is saved in '
finish=$(sed -n 's/.*to finish: //p' "$work/ximp.out")
[ -n "$finish" ] || fail "no command to finish: $(cat "$work/ximp.out")"
finish=${finish//sqlq poison import/\"\$SQLQ_BIN\" poison import}
eval "$finish" >"$work/finish.out" 2>&1 || fail "the suggested command failed: $finish: $(cat "$work/finish.out")"
"$SQLQ_BIN" poison export "$q" "$work/after-import.jsonl" >/dev/null 2>&1 || true
missing=$(python3 - "$work/after-import.jsonl" <<'PY'
import json, sys
got = {json.loads(l)["body"] for l in open(sys.argv[1]) if l.strip()}
print(sum(1 for i in range(400) if "s-%d" % i not in got))
PY
)
[ "$missing" = 0 ] || fail "after the suggested command $missing of 400 lines are missing"
ok "interrupted import from stdin: the input saved, the printed command finished it"
"$SQLQ_BIN" queue clear "$p" >/dev/null

# ---- export --delete, interrupted: exactly which exported ids are still in the queue ----
for i in $(seq 1 500); do echo "{\"body\":\"e-$i\"}"; done >"$work/500.jsonl"
"$SQLQ_BIN" poison import "$work/500.jsonl" "$p" >/dev/null
proxy delay 15
"$SQLQ_BIN" poison export "$q" "$work/x.jsonl" --delete --visibility-s 3 --queue-connection "$pconn" \
    >"$work/xdel.out" 2>&1 &
epid=$!
pids+=($epid)
sleep 1.2
kill -INT "$epid"
rc=0; wait "$epid" || rc=$?
proxy pass
[ "$rc" = 1 ] || fail "interrupted export exited $rc"
sed -n '/are in .* and still in /,/^[^ ]/p' "$work/xdel.out" | sed -n 's/^  //p' | sort >"$work/said-still"
sed -n '/are in .* and may still be in /,/^[^ ]/p' "$work/xdel.out" | sed -n 's/^  //p' | sort >"$work/said-maybe"
ids_of "$work/x.jsonl" >"$work/exported"
sleep 4 # what the run still held is visible again
"$SQLQ_BIN" poison export "$q" "$work/rest.jsonl" >/dev/null 2>&1 || true
ids_of "$work/rest.jsonl" >"$work/rest"
comm -12 "$work/exported" "$work/rest" >"$work/truly-still"
n_still=$(sed -n 's/^\([0-9]*\) exported message(s) are in .* and still in .*/\1/p' "$work/xdel.out")
[ "${n_still:-0}" = "$(wc -l <"$work/said-still")" ] || fail "export: the count (${n_still:-0}) and the ids listed ($(wc -l <"$work/said-still")) differ"
# every id said to be still there is there; every exported id still there was named
[ -z "$(comm -23 "$work/said-still" "$work/truly-still")" ] || fail "export named ids as still in the queue that are gone: $(comm -23 "$work/said-still" "$work/truly-still" | head -3)"
sort -u "$work/said-still" "$work/said-maybe" >"$work/said-any"
[ -z "$(comm -23 "$work/truly-still" "$work/said-any")" ] || fail "exported ids still in the queue that the report does not name: $(comm -23 "$work/truly-still" "$work/said-any" | wc -l) of $(wc -l <"$work/truly-still"): $(cat "$work/xdel.out")"
[ "$(wc -l <"$work/exported")" -gt 0 ] || fail "the export wrote nothing before the interrupt"
ok "interrupted export --delete: $(wc -l <"$work/exported") exported, $(wc -l <"$work/truly-still") still queued, all named ($(wc -l <"$work/said-maybe") maybe)"
"$SQLQ_BIN" queue clear "$p" >/dev/null

# ---- requeue --all while a consumer keeps failing them: exit 0, it covered its start ----
for i in $(seq 1 100); do echo "{\"body\":\"loop-$i\"}"; done >"$work/loop.jsonl"
"$SQLQ_BIN" poison import "$work/loop.jsonl" "$p" >/dev/null
"$SQLQ_BIN" consume "$q" --exec 'sleep 0.3; exit 1' --max-dequeue-count 1 --max-polling-interval-ms 200 \
    >/dev/null 2>&1 &
cpid=$!
pids+=($cpid)
sleep 1
run loop timeout -s KILL 120 "$SQLQ_BIN" poison requeue "$q" --all
[ "$rc" = 0 ] || fail "requeue --all with a re-poisoning consumer exited $rc: $(cat "$work/loop.out")"
has loop '^moved 100 message'
grep -q 'were not looked at' "$work/loop.out" && fail "requeue says messages were not looked at: $(cat "$work/loop.out")"
kill "$cpid"; wait "$cpid" 2>/dev/null || true
ok "requeue --all moved the 100 that were there, exit 0, consumer re-poisoning them"
"$SQLQ_BIN" queue clear "$p" >/dev/null
"$SQLQ_BIN" queue clear "$q" >/dev/null

# ---- consume --poison-envelope: JSON that no double or int64 holds is wrapped, with its reason ----
e="$q-e"
"$SQLQ_BIN" queue create "$e" >/dev/null
bodies=('{"a":1e400}' '{"n":123456789012345678901234567890}' 'not json')
for b in "${bodies[@]}"; do "$SQLQ_BIN" queue put "$e" "$b" >/dev/null; done
timeout 60 "$SQLQ_BIN" consume "$e" --exec 'echo "cannot use it" >&2; exit 65' --poison-envelope \
    --exit-when-empty --max-polling-interval-ms 300 2>"$work/env.log" || fail "consume exit $?"
"$SQLQ_BIN" poison export "$e" "$work/env.jsonl" >/dev/null
for b in "${bodies[@]:0:2}"; do
    python3 - "$work/env.jsonl" "$b" <<'PY' || fail "the poison copy of $b is not the envelope with its reason and exact bytes"
import json, sys
want = sys.argv[2]
for l in open(sys.argv[1]):
    body = json.loads(l)["body"]
    if want in body:
        assert body.startswith('{"sqlq_poison":1,"reason":"'), body
        assert "cannot use it" in body, body
        assert body.endswith('"message":' + want + "}"), body
        sys.exit(0)
sys.exit(1)
PY
done
grep -q '"body":"not json"' "$work/env.jsonl" || fail "the body that is not JSON did not move byte-identical"
grep -q 'event=consumer.poison_envelope_skipped .*why="the body is not a JSON object or array"' "$work/env.log" \
    || fail "no log line for the body that could not be wrapped"
ok "--poison-envelope wraps 1e400 and a 30-digit integer with the reason; logs a body it cannot wrap"
