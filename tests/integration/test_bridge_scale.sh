#!/usr/bin/env bash
# Bridge instances joining and leaving a sharded route under a steady writer, as an autoscaler
# would run them (argument: postgres or mariadb): one instance, then three, then one again (one
# killed with kill -9, one stopped with SIGTERM), the queue service a local proxy away (25 ms a
# request, so batches are on the wire when the instances change). Then the official SDK drains
# every shard: nothing lost (each row's newest message matches the table, each deleted key
# ends in a delete), every message on the shard its key hashes to, versions increasing per key
# on its shard, no change twice but what the killed instance's expired leases allow. The SIGTERM hand-back is measured: the stopped instance holds no lease the
# moment it has exited (no wait for lease_s), while the killed one's stay until they expire.
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:-${1:?usage: test_bridge_scale.sh postgres|mariadb (or through ctest)}}
pids=()
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -8 >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_SHARDS SQLQ_QUEUE || true

prefix=scale
. "$(dirname "$0")/../support/change_log_db.sh"
support=$(cd "$(dirname "$0")/../support" && pwd)
stop_all() {
    touch "$tmp/stop-writer"
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    cleanup
}
trap stop_all EXIT

sql "CREATE TABLE kv (id integer PRIMARY KEY, v integer NOT NULL)"
"$sqlq" setup --db "$conn" --table kv >"$tmp/setup.log" 2>&1 || fail "setup"
q="scale$$r$RANDOM"
for i in 0 1 2; do queues+=("$q-$i" "$q-$i-poison"); done

# The queue service one proxy away (requests take 25 ms more).
mkdir -p "$tmp/proxy"
echo "delay 25" >"$tmp/proxy/mode"
python3 "$support/fault_proxy.py" "$(cat "$env_dir/azurite/port")" "$tmp/proxy" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/proxy/port" ] && break; sleep 0.05; done
[ -s "$tmp/proxy/port" ] || fail "the proxy did not start"
pconn=$(sed "s/127.0.0.1:[0-9]*/127.0.0.1:$(cat "$tmp/proxy/port")/" "$env_dir/azurite/conn")

# The writer: five upserts per statement over 300 keys, a delete every 7th; v always new.
upsert() {
    case "$kind" in
    postgres) echo "INSERT INTO kv (id, v) VALUES $1 ON CONFLICT (id) DO UPDATE SET v = excluded.v" ;;
    mariadb) echo "INSERT INTO kv (id, v) VALUES $1 ON DUPLICATE KEY UPDATE v = VALUES(v)" ;;
    esac
}
writer() {
    local i=0 vals j
    while [ ! -f "$tmp/stop-writer" ]; do
        i=$((i + 1))
        vals=""
        for j in 1 2 3 4 5; do vals+="${vals:+,}($(((i * 7 + j * 61) % 300)), $((i * 10 + j)))"; done
        sql "$(upsert "$vals")" || { echo "write $i failed" >>"$tmp/writer.err"; }
        [ $((i % 7)) -eq 0 ] && sql "DELETE FROM kv WHERE id = $(((i * 13) % 300))"
        echo "$i" >"$tmp/writes"
    done
}
writer &
pids+=($!)

# start NAME: a bridge instance on the shard set orders-0..2 (here $q-0..2); its pid in $started.
start() {
    "$sqlq" bridge --db "$conn" --table kv --queue "$q" --shards 3 --lease-s 8 \
        --polling-interval-ms 100 --max-batch-size 25 --max-in-flight 4 \
        --queue-connection "$pconn" --log-level debug >"$tmp/$1.log" 2>&1 &
    started=$!
    pids+=("$started")
}
instance_of() {
    local id=""
    for _ in $(seq 200); do
        id=$(grep -o 'bridge_starting instance=[^ ]*' "$tmp/$1.log" 2>/dev/null | head -1 | cut -d= -f2) || true
        [ -n "$id" ] && { echo "$id"; return; }
        sleep 0.05
    done
    fail "instance $1 did not start"
}
status_json() { "$sqlq" status --db "$conn" --table kv --json 2>>"$tmp/status.err"; }
leases_of() { status_json | python3 -c 'import json,sys
d=json.load(sys.stdin); o=sys.argv[1]
print(sum(b.get("owners",{}).get(o,0) for t in d["tables"] for b in t["bridges"]))' "$1"; }
pending() { status_json | python3 -c 'import json,sys
d=json.load(sys.stdin); print(sum(b.get("pending",0) for t in d["tables"] for b in t["bridges"]))'; }
now_ms() { date +%s%3N; }

start a; a=$started; ida=$(instance_of a)
sleep 4
start b; b=$started; idb=$(instance_of b)
start c; c=$started; idc=$(instance_of c)
sleep 6

# sqlq status shows what each running instance publishes, per shard (sampled every 5 s).
rates() { status_json | python3 -c 'import json,sys
d=json.load(sys.stdin); ids=set(sys.argv[1:])
inst=[i for t in d["tables"] for b in t["bridges"] for i in b.get("instances",[]) if i["instance"] in ids]
ok=[i for i in inst if len(i["queues"])==3 and abs(sum(i["queues"].values())-i["per_s"])<0.01*max(1,i["per_s"])]
print(len(ok), sum(1 for i in ok if i["per_s"]>0))' "$ida" "$idb" "$idc"; }
listed=0 busy=0
for _ in $(seq 30); do read -r listed busy < <(rates); [ "$listed" -eq 3 ] && [ "$busy" -ge 2 ] && break; sleep 0.5; done
[ "$listed" -eq 3 ] && [ "$busy" -ge 2 ] ||
    fail "status shows rates of $listed of 3 instances ($busy publishing): $(status_json)"
"$sqlq" status --db "$conn" --table kv | grep -q "instance $ida: [0-9.]* changes/s ($q-0 " ||
    fail "status's text has no rate line for instance a: $("$sqlq" status --db "$conn" --table kv)"

# Scale-in: one instance dies (node lost), one is stopped as a scaler stops it.
kill -9 "$b"
held_b=$(leases_of "$idb")
sleep 1
held_c=0
for _ in $(seq 40); do held_c=$(leases_of "$idc"); [ "$held_c" -gt 0 ] && break; sleep 0.05; done
t0=$(now_ms)
kill -TERM "$c"
rc=0
wait "$c" || rc=$?
stop_ms=$(($(now_ms) - t0))
[ "$rc" -eq 0 ] || fail "instance c exited $rc after SIGTERM"
after_c=$(leases_of "$idc")
after_b=$(leases_of "$idb")
echo "SIGTERM hand-back: instance c held $held_c lease(s) just before SIGTERM, exited in $stop_ms ms, holds $after_c after (lease_s 8)"
echo "kill -9: instance b held $held_b lease(s) when killed, $after_b a second later (they wait for expiry)"
[ "$after_c" -eq 0 ] || fail "instance c still holds $after_c lease(s) after a clean stop: left to expire"
grep -q route_stopped "$tmp/c.log" || fail "instance c did not log route_stopped"
sleep 5

# The writer stops; the one instance left delivers the rest (b's leases expire meanwhile).
touch "$tmp/stop-writer"
sleep 0.5
[ ! -s "$tmp/writer.err" ] || fail "writes failed: $(head -3 "$tmp/writer.err")"
n=1
for _ in $(seq 120); do n=$(pending); [ "$n" -eq 0 ] && break; sleep 0.5; done
[ "$n" -eq 0 ] || fail "$n change(s) still pending 60 s after the writer stopped"
kill -TERM "$a"
rc=0
wait "$a" || rc=$?
[ "$rc" -eq 0 ] || fail "instance a exited $rc after SIGTERM"

for i in a c; do
    got=$(grep -o 'bridge_done changes=[0-9]*' "$tmp/$i.log" | cut -d= -f2)
    [ "${got:-0}" -gt 0 ] || fail "instance $i published nothing"
    echo "instance $i: $got change(s)"
done
grep -q 'route_started' "$tmp/b.log" || fail "instance b never started"
echo "writes: $(cat "$tmp/writes") statements"

case "$kind" in
postgres) psql -X -q -At -F ' ' -h 127.0.0.1 -p "$port" -U sqlq -d "$name" -c "SELECT id, v FROM kv" >"$tmp/table" ;;
mariadb) mariadb --no-defaults -N -B -h 127.0.0.1 -P "$port" -u sqlq "$name" -e "SELECT id, v FROM kv" >"$tmp/table" ;;
esac
[ -s "$tmp/table" ] || fail "the table is empty"
# Duplicates only from the killed instance: at most the batch on the wire and the one accepted
# before it (2 x max_batch_size); joining, leaving on SIGTERM and sharing publish none twice.
node "$support/shard_drain.js" --max-duplicates 50 "$(cat "$env_dir/azurite/conn")" "$tmp/table" "$q-0" "$q-1" "$q-2" ||
    fail "the SDK's drain of the shards"
for i in 0 1 2; do
    n=$("$sqlq" queue stats "$q-$i-poison" 2>/dev/null | grep -o '"approximate_count":[0-9]*' | cut -d: -f2) || true
    [ "${n:-0}" -eq 0 ] || fail "$n message(s) in $q-$i-poison"
done
echo "PASS: $kind"
