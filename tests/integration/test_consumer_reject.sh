#!/usr/bin/env bash
# The handler decides: --exec exit 65 and --http 422 send the message to
# QUEUE-poison on its first attempt, with the reason logged; the poison text stays byte-identical
# unless --poison-envelope, which wraps it with the reason, and `poison requeue` puts back the
# original bytes. Other failures still retry (exit 1, a 500). The --sql sink's constraint
# violations, per database: test_consume_sql_reject.sh.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
export SQLQ_QUEUE_CONNECTION=$(cat "${SQLQ_TEST_ENV_DIR:?}/azurite/conn")
tmp=$(mktemp -d)
queues=()
server_pid=
cleanup() {
    [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
    for q in "${queues[@]}"; do "$sqlq" queue delete "$q" >/dev/null 2>&1 || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -6 "$f" >&2; }; done; exit 1; }
unset SQLQ_POISON_ENVELOPE || true

msg='{"id":"1","op":"insert","table":"orders","key":{"id":1},"row":{"id":1,"v":null},"version":1,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
newq() { q="rej-$1-$$"; queues+=("$q" "$q-poison"); "$sqlq" queue create "$q" >/dev/null; "$sqlq" queue put "$q" "$msg" >/dev/null; }
consume() { # consume LOG ARGS...: drain the queue
    local log=$1; shift
    timeout 60 "$sqlq" consume "$q" --exit-when-empty --max-polling-interval-ms 300 "$@" >"$tmp/$log" 2>&1 \
        || fail "$log: consume exited $?"
}
poison_body() { "$sqlq" queue peek "$q-poison" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["body"])'; }
expect_poisoned_at_once() { # LOG REASON
    grep -q "event=consumer.poisoned .*dequeue_count=1 .*$2" "$tmp/$1" || fail "$1: not poisoned on the first attempt with reason '$2'"
    [ "$(poison_body)" = "$msg" ] || fail "$1: the poison text changed: $(poison_body)"
}

# --exec: exit 65 poisons at once; exit 1 is retried (dequeue_count 2 before poison).
newq exec
consume exec.log --exec 'echo "v must not be null" >&2; exit 65'
expect_poisoned_at_once exec.log "command rejected the message (exit 65: poison now); stderr: v must not be null"
newq exec1
consume exec1.log --exec 'exit 1' --max-dequeue-count 2
grep -q "event=consumer.poisoned .*dequeue_count=2 " "$tmp/exec1.log" || fail "exit 1 was not retried"

# --http: 422 poisons at once with the response body as the reason; 500 is retried.
hport=$("${SQLQ_SOURCE_DIR:?}/tests/support/free_port.sh")
cat >"$tmp/server.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        code = 422 if self.path == "/reject" else 500
        self.send_response(code); self.end_headers(); self.wfile.write(b"total must be positive")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$tmp/server.py" "$hport" & server_pid=$!
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$hport/" && break; sleep 0.1; done
newq http
consume http.log --http "http://127.0.0.1:$hport/reject"
expect_poisoned_at_once http.log "answered 422 (rejected: poison now): total must be positive"
newq http5
consume http5.log --http "http://127.0.0.1:$hport/fail" --max-dequeue-count 2
grep -q "event=consumer.poisoned .*dequeue_count=2 " "$tmp/http5.log" || fail "a 500 was not retried"

# --poison-envelope: the reason travels with the message; requeue puts back the same bytes.
newq env
SQLQ_POISON_ENVELOPE=true consume env.log --exec 'echo "no such customer" >&2; exit 65'
body=$(poison_body)
python3 - "$body" "$msg" <<'PY' || fail "envelope: $body"
import json, sys
e, want = sys.argv[1], sys.argv[2]
assert e.startswith('{"sqlq_poison":1,"reason":"command rejected the message'), e
assert "no such customer" in json.loads(e)["reason"]
assert e.endswith(',"message":' + want + '}'), e
PY
"$sqlq" poison requeue "$q" --all >"$tmp/requeue.log" 2>&1 || fail "requeue"
got=$("$sqlq" queue peek "$q" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["body"])')
[ "$got" = "$msg" ] || fail "requeue did not put back the original bytes: $got"
echo ok
