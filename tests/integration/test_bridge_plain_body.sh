#!/usr/bin/env bash
# A row that --encoding plain cannot carry (U+FFFE: XML 1.0 refuses it) is a refusal of that one
# message's body, refused before any request: publish_failed, counted toward poison, then the
# change in {queue}-poison with the reason (the character written as a JSON escape there). Never
# an outage, never "TLS": the rows before and after it, and every later change, go out, and
# /readyz stays 200. In the row, batch and functions formats, on the database $SQLQ_TEST_DATABASE
# names (sqlite, postgres, mariadb).
set -euo pipefail
kind=${SQLQ_TEST_DATABASE:?run through ctest (sqlq_database_test sets it)}
bridge_pid=
fail() {
    echo "FAIL: $kind: $*" >&2
    for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v level=debug "$f" | tail -12 >&2; }; done
    exit 1
}
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG SQLQ_ENCODING SQLQ_FORMAT SQLQ_MAX_ATTEMPTS || true
prefix=plainbody
. "$(dirname "$0")/../support/change_log_db.sh"
trap '[ -z "$bridge_pid" ] || kill "$bridge_pid" 2>/dev/null || true; cleanup' EXIT
# 'x U+FFFE y' as the database writes it (UTF-8 EF BF BE)
case "$kind" in
sqlite) hostile="CAST(x'7820EFBFBE2079' AS TEXT)" ;;
postgres) hostile="E'x \\uFFFE y'" ;;
mariadb) hostile="CONVERT(x'7820EFBFBE2079' USING utf8mb4)" ;;
esac

# ids QUEUE FORMAT: the ids of the changes in the visible messages, sorted, one line
ids() {
    "$sqlq" queue peek "$1" --limit 32 --encoding plain | python3 -c '
import json, sys
fmt = sys.argv[1]
ids = []
for line in sys.stdin:
    if not line.strip():
        continue
    m = json.loads(json.loads(line)["body"])
    if fmt == "row":
        ids.append(m["key"]["id"])
    elif fmt == "batch":
        ids += [c["key"]["id"] for c in m["changes"]]
    else:
        ids += [c["Item"]["id"] for c in m]
print(",".join(str(i) for i in sorted(ids)))' "$2"
}

for fmt in row batch functions; do
    t="pl_$fmt"
    q="plain-$fmt-$$"
    queues+=("$q" "$q-poison")
    sql "CREATE TABLE $t (id INTEGER PRIMARY KEY, s TEXT)"
    # the bridge name's: a logical source's slot is one bridge name's
    "$sqlq" setup --db "$conn" --table "$t" --bridge-name "plb$fmt" >"$tmp/setup.log" 2>&1 || fail "$fmt: setup"
    sql "INSERT INTO $t VALUES (1, 'ok'); INSERT INTO $t VALUES (2, $hostile); INSERT INTO $t VALUES (5, 'after')"
    mport=$("${SQLQ_SOURCE_DIR:?}/tests/support/free_port.sh")
    log="$tmp/bridge-$fmt.log"
    "$sqlq" bridge --db "$conn" --table "$t" --queue "$q" --encoding plain --format "$fmt" \
        --bridge-name "plb$fmt" --max-attempts 2 --polling-interval-ms 200 \
        --listen "127.0.0.1:$mport" >"$log" 2>&1 &
    bridge_pid=$!
    for _ in $(seq 1 150); do
        "$sqlq" queue stats "$q-poison" 2>/dev/null | grep -q '"approximate_count": *[1-9]' && break
        sleep 0.2
    done
    # The poison copy: the hostile change with the reason, U+FFFE as the escape \ufffe.
    "$sqlq" queue peek "$q-poison" --limit 8 --encoding plain >"$tmp/poison-$fmt.json" 2>"$tmp/peek.log" ||
        fail "$fmt: peek the poison queue"
    python3 - "$tmp/poison-$fmt.json" "$fmt" <<'PY' || fail "$fmt: poison copy: $(cat "$tmp/poison-$fmt.json")"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
assert len(lines) == 1, lines
body = json.loads(lines[0])["body"]
assert "\\ufffe" in body, body
p = json.loads(body)
assert p["sqlq_poison"] == 1 and "not UTF-8 XML can carry" in p["reason"], p["reason"]
m, fmt = p["message"], sys.argv[2]
row = m["row"] if fmt == "row" else m["changes"][0]["row"] if fmt == "batch" else m[0]["Item"]
assert row["id"] == 2 and row["s"] == "x \ufffe y", row
PY
    # The rows around it, and a later one: the route did not stall.
    sql "INSERT INTO $t VALUES (6, 'later')"
    for _ in $(seq 1 100); do [ "$(ids "$q" "$fmt")" = "1,5,6" ] && break; sleep 0.2; done
    [ "$(ids "$q" "$fmt")" = "1,5,6" ] || fail "$fmt: main queue holds ids '$(ids "$q" "$fmt")' (want 1,5,6)"
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/readyz")
    [ "$code" = 200 ] || fail "$fmt: /readyz is $code after a refused body (want 200)"
    curl -s "http://127.0.0.1:$mport/metrics" | grep -q "^sqlq_messages_poisoned_total{queue=\"$q\"} 1$" ||
        fail "$fmt: sqlq_messages_poisoned_total: $(curl -s "http://127.0.0.1:$mport/metrics" | grep poisoned)"
    kill "$bridge_pid"; wait "$bridge_pid" || true; bridge_pid=
    grep -q "publish_failed" "$log" || fail "$fmt: no publish_failed for the refused body"
    grep -q "change_poisoned" "$log" || fail "$fmt: no change_poisoned"
    # The log counts the failed attempts as the poison reason does (--max-attempts 2; it said 3)
    grep -q "change_poisoned.*failed_attempts=2" "$log" || fail "$fmt: change_poisoned does not say failed_attempts=2: $(grep change_poisoned "$log")"
    ! grep -q "queue_outage" "$log" || fail "$fmt: a refused body was logged as an outage"
    ! grep -qi "TLS" "$log" || fail "$fmt: a refused body was blamed on TLS"
    echo "ok $fmt"
done
echo "ok: a body plain text cannot carry goes to poison alone; the route goes on"
