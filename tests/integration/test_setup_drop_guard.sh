#!/usr/bin/env bash
# `sqlq setup --drop` does not lose changes silently, on one change-log database (argument:
# sqlite, postgres or mariadb):
# 1. while a bridge runs (under a writer), --drop --bridge-name and --drop refuse (exit 1),
#    naming the instance; nothing is removed;
# 2. --drop --bridge-name --force removes its state and says what it discards; the running
#    bridge finds its state gone and stops with an error (exit 1) instead of making it again
#    from "now" (it would skip the changes in between);
# 3. with the bridge stopped and a change not delivered, --drop refuses naming the pending
#    change; --force drops and says it discards it;
# 4. a stopped bridge with nothing pending: --drop goes through (exit 0).
# docs/capture.md (Commands).
set -euo pipefail
kind=${1:?usage: test_setup_drop_guard.sh sqlite|postgres|mariadb}
pid=""
fail() {
    echo "FAIL: $kind: $*" >&2
    tail -15 "$tmp/bridge.log" >&2 2>/dev/null || true
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true
prefix=dropguard
. "$(dirname "$0")/../support/change_log_db.sh"
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; cleanup' EXIT

run() { # run CODE WHAT CMD...: exit CODE, output (both streams) in $tmp/out
    local want=$1 what=$2 got=0
    shift 2
    "$@" >"$tmp/out" 2>&1 || got=$?
    [ "$got" = "$want" ] || fail "$what: exit $got, wanted $want: $(cat "$tmp/out")"
}
pending() { # the pending count of bridge default (sqlq status --json)
    "$sqlq" status --db "$conn" --table acct --json 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); b=d["tables"][0]["bridges"]; print(b[0]["pending"] if b else "none")'
}

sql "CREATE TABLE acct (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)"
"$sqlq" setup --db "$conn" --table acct >/dev/null
q="dropguard-$kind-$$"
queues+=("$q")
"$sqlq" bridge --db "$conn" --table acct --queue "$q" --polling-interval-ms 100 --lease-s 6 \
    >/dev/null 2>"$tmp/bridge.log" &
pid=$!
for i in $(seq 1 5); do sql "INSERT INTO acct VALUES ($i, 0)"; done
for _ in $(seq 100); do [ "$(pending)" = 0 ] && break; sleep 0.1; done
[ "$(pending)" = 0 ] || fail "the bridge did not deliver the first changes"

# 1. refused while the bridge runs
run 1 "drop of the bridge's state while it runs" "$sqlq" setup --db "$conn" --table acct --drop --bridge-name default
grep -q "refusing --drop of bridge default" "$tmp/out" || fail "no refusal: $(cat "$tmp/out")"
grep -q "bridge default: instance .* is working on the table" "$tmp/out" || fail "the instance is not named: $(cat "$tmp/out")"
run 1 "drop of the table while a bridge runs" "$sqlq" setup --db "$conn" --table acct --drop
grep -q "refusing --drop" "$tmp/out" || fail "table drop not refused: $(cat "$tmp/out")"
[ "$(pending)" = 0 ] || fail "a refused drop changed the state"
kill -0 "$pid" || fail "the bridge stopped after a refused drop"
echo "$kind: --drop refused while a bridge runs, naming it: ok"

# 2. --force under a writer: the bridge stops with an error, it does not start again from now
(for i in $(seq 6 40); do sql "UPDATE acct SET bal = $i WHERE id = $((i % 5 + 1))"; sleep 0.05; done) &
writer=$!
sleep 0.3
run 0 "forced drop of the bridge's state" "$sqlq" setup --db "$conn" --table acct --drop --bridge-name default --force
grep -q "discarding: bridge default: instance" "$tmp/out" || fail "--force does not say what it discards: $(cat "$tmp/out")"
wait "$writer"
code=0
for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$pid" 2>/dev/null && fail "the bridge still runs 30 s after its state was removed"
wait "$pid" || code=$?
pid=""
[ "$code" = 1 ] || fail "the bridge exited $code after its state was removed, expected 1"
grep -q "sync state of bridge default for table .* is gone" "$tmp/bridge.log" ||
    fail "the bridge does not say its state is gone"
grep -q "event=capture_opened" <(sed -n '/setup --drop removed it/,$p' "$tmp/bridge.log") &&
    fail "the bridge opened its capture again after its state was removed"
"$sqlq" status --db "$conn" --table acct >"$tmp/status" 2>&1 || true
grep -q "no bridge has started" "$tmp/status" || fail "the state was made again: $(cat "$tmp/status")"
echo "$kind: --force: state removed, the running bridge stopped with an error, nothing made again: ok"

# 3. a change not delivered: refused, then --force says what it discards
"$sqlq" bridge --db "$conn" --table acct --queue "$q" --once >/dev/null 2>"$tmp/bridge.log" ||
    fail "bridge --once exited $?"
sql "UPDATE acct SET bal = 999 WHERE id = 1"
[ "$(pending)" = 1 ] || fail "pending $(pending), expected 1"
run 1 "drop with a change pending" "$sqlq" setup --db "$conn" --table acct --drop
grep -q "bridge default: 1 change(s) not delivered yet" "$tmp/out" || fail "the pending change is not named: $(cat "$tmp/out")"
[ "$(pending)" = 1 ] || fail "a refused drop lost the pending change"
run 0 "forced drop with a change pending" "$sqlq" setup --db "$conn" --table acct --drop --force
grep -q "discarding: bridge default: 1 change(s) not delivered yet" "$tmp/out" || fail "--force does not name what it discards: $(cat "$tmp/out")"
grep -q "change log and triggers removed" "$tmp/out" || fail "not dropped: $(cat "$tmp/out")"
echo "$kind: --drop refused with a change pending; --force says it discards it: ok"

# 4. nothing to lose: --drop goes through
"$sqlq" setup --db "$conn" --table acct >/dev/null
sql "UPDATE acct SET bal = 1000 WHERE id = 1"
"$sqlq" bridge --db "$conn" --table acct --queue "$q" --once >/dev/null 2>"$tmp/bridge.log" ||
    fail "bridge --once exited $?"
run 0 "drop with nothing pending" "$sqlq" setup --db "$conn" --table acct --drop
run 2 "--force without --drop" "$sqlq" setup --db "$conn" --table acct --force
echo "$kind: --drop with nothing to lose goes through: ok"
