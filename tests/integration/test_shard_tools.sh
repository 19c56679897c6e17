#!/usr/bin/env bash
# A shard set with the operator tools (docs/scaling.md): the bridge publishes a table to
# QUEUE-0..2 (--shards 3) and to a listed set (a,b); `sqlq consume QUEUE --shards 3` drains
# every shard at once (one poll loop each) and so do several QUEUE arguments; `sqlq poison
# list|requeue QUEUE --shards 3` walks each shard's -poison queue in turn; the same settings
# in a config file route (a listed set, one queue in a second account from "accounts"); the
# documented change of the number of shards (drain, then switch: 3 to 2, checked by the SDK);
# a bad shard set is refused naming what is allowed.
set -euo pipefail
kind=sqlite
fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -8 "$f" >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_SHARDS SQLQ_QUEUE || true
prefix=shardtools
. "$(dirname "$0")/../support/change_log_db.sh"
q="st$$r$RANDOM"
for i in 0 1 2; do queues+=("$q-$i" "$q-$i-poison"); done
queues+=("$q-a" "$q-a-poison" "$q-b" "$q-b-poison")

sql "CREATE TABLE kv (id integer PRIMARY KEY, v integer NOT NULL)"
"$sqlq" setup --db "$conn" --table kv >"$tmp/setup.log" 2>&1 || fail "setup"
for i in $(seq 1 60); do sql "INSERT INTO kv VALUES ($i, $i)"; done
"$sqlq" bridge --db "$conn" --table kv --queue "$q" --shards 3 --once --log-level debug \
    >"$tmp/bridge.log" 2>&1 || fail "bridge --shards 3"
total=0
for i in 0 1 2; do
    n=$("$sqlq" queue stats "$q-$i" | grep -o '"approximate_count":[0-9]*' | cut -d: -f2)
    [ "$n" -gt 5 ] || fail "shard $i holds $n of 60 messages: not spread"
    total=$((total + n))
    # The rounds' lanes_put lines (each lane's messages, its end in ms): lane i's messages
    # over every round are what shard i holds.
    logged=$(grep 'event=lanes_put' "$tmp/bridge.log" | sed 's/.* messages=\([0-9,]*\) end_ms=\([0-9,]*\).*/\1 \2/' |
        awk -v i=$((i + 1)) '{ if (split($1, m, ",") != 3 || split($2, e, ",") != 3) bad = 1; s += m[i] }
                             END { print (bad || NR == 0) ? -1 : s }')
    [ "$logged" -eq "$n" ] || fail "lanes_put lines give shard $i $logged messages, it holds $n"
done
[ "$total" -eq 60 ] || fail "the shards hold $total messages, want 60"
echo "ok: 60 changes over 3 shards, each round's lanes in a lanes_put debug line"

# consume --shards: every shard drained at once, each its own poll loop.
"$sqlq" consume "$q" --shards 3 --noop --exit-when-empty >"$tmp/consume.log" 2>&1 || fail "consume --shards 3"
got=$(grep -o 'consumer.stopped queue=[^ ]* received=[0-9]*' "$tmp/consume.log" | sed 's/.*received=//' | awk '{s += $1} END {print s + 0}')
[ "$(grep -c 'consumer.stopped' "$tmp/consume.log")" -eq 3 ] || fail "want three poll loops"
[ "$got" -eq 60 ] || fail "consume --shards 3 received $got, want 60"
echo "ok: consume --shards 3 took 60 messages from 3 queues"

# poison list / requeue over the set: a message in shard 1's poison queue only.
"$sqlq" queue create "$q-1-poison" >/dev/null || fail "create a poison queue"
"$sqlq" queue put "$q-1-poison" '{"stuck":1}' >/dev/null || fail "put into poison"
"$sqlq" poison list "$q" --shards 3 >"$tmp/list.out" 2>"$tmp/list.log" || fail "poison list --shards 3"
for i in 0 1 2; do grep -qx "== $q-$i" "$tmp/list.out" || fail "poison list shows no heading for $q-$i"; done
grep -q stuck "$tmp/list.out" || fail "poison list does not show the stuck message"
"$sqlq" poison requeue "$q" --shards 3 --all >"$tmp/requeue.out" 2>"$tmp/requeue.log" || fail "poison requeue --shards 3"
n=$("$sqlq" queue stats "$q-1" | grep -o '"approximate_count":[0-9]*' | cut -d: -f2)
[ "$n" -eq 1 ] || fail "the requeued message is not back in $q-1 ($n)"
"$sqlq" consume "$q-0" "$q-1" "$q-2" --noop --exit-when-empty >"$tmp/consume2.log" 2>&1 || fail "consume Q-0 Q-1 Q-2"
grep -q "queue=$q-1 received=1" "$tmp/consume2.log" || fail "consume of three named queues did not take the requeued message"
echo "ok: poison list/requeue and consume over a shard set"

# Changing the number of shards, drain then switch (docs/scaling.md): the bridge is stopped
# (here: --once ran to the end), every old shard queue is empty (consumed above), then the
# bridge runs with 2 shards: each key's messages go to its new shard, nothing to the third.
sql "UPDATE kv SET v = v + 500"
for i in 0 1 2; do
    n=$("$sqlq" queue stats "$q-$i" | grep -o '"approximate_count":[0-9]*' | cut -d: -f2)
    [ "$n" -eq 0 ] || fail "before the switch $q-$i still holds $n"
done
"$sqlq" bridge --db "$conn" --table kv --queue "$q" --shards 2 --once >"$tmp/bridge2.log" 2>&1 || fail "bridge --shards 2"
n=$("$sqlq" queue stats "$q-2" | grep -o '"approximate_count":[0-9]*' | cut -d: -f2)
[ "$n" -eq 0 ] || fail "after the switch to 2 shards $q-2 received $n"
sqlite3 -separator ' ' "$tmp/shop.db" "SELECT id, v FROM kv" >"$tmp/table"
node "$(dirname "$0")/../support/shard_drain.js" "$SQLQ_QUEUE_CONNECTION" "$tmp/table" "$q-0" "$q-1" ||
    fail "after the switch to 2 shards"
echo "ok: 3 shards to 2, drain then switch"

# A config file route with a listed set in two accounts ("default" and a named one, here the
# same Azurite under another name: each has its own credential entry).
sql "UPDATE kv SET v = v + 1000"
cat >"$tmp/sqlq.json" <<JSON
{"accounts": {"second": {"connection_env": "SECOND_QUEUE_CONNECTION"}},
 "routes": [{"table": "kv", "queue": "$q-a,second:$q-b", "bridge_name": "listed", "start_from": "beginning"}]}
JSON
SECOND_QUEUE_CONNECTION=$SQLQ_QUEUE_CONNECTION "$sqlq" bridge --db "$conn" --config "$tmp/sqlq.json" --once \
    >"$tmp/listed.log" 2>&1 || fail "bridge with a listed shard set in two accounts"
a=$("$sqlq" queue stats "$q-a" | grep -o '"approximate_count":[0-9]*' | cut -d: -f2)
b=$("$sqlq" queue stats "$q-b" | grep -o '"approximate_count":[0-9]*' | cut -d: -f2)
[ $((a + b)) -eq 60 ] && [ "$a" -gt 10 ] && [ "$b" -gt 10 ] || fail "listed set: $a + $b messages, want 60 spread"
echo "ok: a listed shard set over two accounts ($a + $b)"

# Refusals name the key, the value and what is allowed.
expect_usage() {
    local want=$1; shift
    if "$@" >"$tmp/bad.out" 2>&1; then fail "accepted: $*"; fi
    grep -q -- "$want" "$tmp/bad.out" || { cat "$tmp/bad.out" >&2; fail "refusal of '$*' does not say '$want'"; }
}
expect_usage "shards 300 is not allowed\|out of range" "$sqlq" bridge --db "$conn" --table kv --queue "$q" --shards 300 --once
expect_usage "appears twice" "$sqlq" bridge --db "$conn" --table kv --queue "$q-a,$q-a" --once
expect_usage "not one of the config file's" "$sqlq" bridge --db "$conn" --table kv --queue "nosuch:$q-a" --once
expect_usage "SECRET_NOT_SET_ANYWHERE is not set" env SQLQ_CONFIG="$tmp/bad.json" sh -c \
    "echo '{\"accounts\": {\"x\": {\"connection_env\": \"SECRET_NOT_SET_ANYWHERE\"}}}' >'$tmp/bad.json'; '$sqlq' bridge --db '$conn' --table kv --queue x:$q-a --once"
expect_usage "shards takes one QUEUE" "$sqlq" consume "$q-0" "$q-1" --shards 2 --noop
echo "ok: refusals"
