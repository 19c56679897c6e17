#!/usr/bin/env bash
# `sqlq consume --http` and `--exec` while what the handler needs is down: an outage, never the
# messages' fault. --http: an endpoint that refuses connections, then answers 503 and 502, then
# works. --exec: a command that exits 75 (EX_TEMPFAIL) until its "database" is back. No message
# is poisoned or counted as failed, /readyz is 503 and sqlq_handler_unavailable 1 meanwhile, and
# every message is handled once it works again. A drain that meets such an outage stops with
# exit 1 saying so, its message left in the queue.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}" "${SQLQ_TEST_ENV_DIR:?}"
sqlq=$SQLQ_BIN
export SQLQ_QUEUE_CONNECTION="$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")"
work=$(mktemp -d)
export SQLQ_STATE_DIR="$work/state"
q="chout-$$"
pid=
server=
cleanup() {
    [ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true
    [ -z "$server" ] || kill "$server" 2>/dev/null || true
    "$sqlq" queue delete "$q" >/dev/null 2>&1 || true
    "$sqlq" queue delete "$q-poison" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "consumer_handler_outage: $*" >&2; grep -v level=debug "$work/log" | tail -10 >&2 2>/dev/null || true; exit 1; }
source "$SQLQ_SOURCE_DIR/tests/support/wait_log.sh"

"$sqlq" queue create "$q" >/dev/null
mport=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
ready() { curl -s -o "$work/ready" -w '%{http_code}' "http://127.0.0.1:$mport/readyz"; }
metric() { curl -s "http://127.0.0.1:$mport/metrics" | sed -n "s/^$1{queue=\"$q\"} //p"; }
poisoned() { { "$sqlq" queue stats "$q-poison" 2>/dev/null || true; } | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }
no_poison() { local n; n=$(poisoned); [ "${n:-0}" = 0 ] || fail "$1: $n message(s) poisoned"; }
during_outage() { # WHAT WORDS: /readyz 503 naming WORDS, the gauge 1, nothing poisoned 3 s on
    local code=
    for _ in $(seq 1 100); do code=$(ready); [ "$code" = 503 ] && break; sleep 0.1; done
    [ "$code" = 503 ] || fail "$1: /readyz answered $code during the outage"
    grep -q "$2" "$work/ready" || fail "$1: /readyz does not say '$2': $(cat "$work/ready")"
    [ "$(metric sqlq_handler_unavailable)" = 1 ] || fail "$1: sqlq_handler_unavailable is '$(metric sqlq_handler_unavailable)'"
    sleep 3
    no_poison "$1"
    wait_log "$work/log" 'event=consumer.handler_outage ' 10 || fail "$1: no consumer.handler_outage line"
}
after_outage() { # WHAT
    local code=
    for _ in $(seq 1 300); do code=$(ready); [ "$code" = 200 ] && break; sleep 0.1; done
    [ "$code" = 200 ] || fail "$1: /readyz answered $code after the outage: $(cat "$work/ready")"
    [ "$(metric sqlq_handler_unavailable)" = 0 ] || fail "$1: sqlq_handler_unavailable stayed 1"
    [ "$(metric sqlq_messages_failed_total)" = 0 ] || fail "$1: $(metric sqlq_messages_failed_total) attempt(s) counted as failed"
    wait_log "$work/log" 'event=consumer.handler_outage_over' 50 || fail "$1: no consumer.handler_outage_over line"
    no_poison "$1"
}

# --http: connection refused (nothing listens yet), then 503 and 502, then 200.
hport=$("$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
cat > "$work/server.py" <<'PY'
import http.server, sys
answers = [503, 502]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        code = answers.pop(0) if answers else 200
        if code == 200:
            with open(sys.argv[2], "ab") as f:
                f.write(body + b"\n")
        self.send_response(code); self.end_headers(); self.wfile.write(b"busy" if code != 200 else b"ok")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
"$sqlq" consume "$q" --http "http://127.0.0.1:$hport/in" --listen "127.0.0.1:$mport" \
    --max-polling-interval-ms 300 2> "$work/log" &
pid=$!
for i in 1 2 3; do "$sqlq" queue put "$q" "{\"n\":$i}" >/dev/null; done
during_outage "connection refused" "cannot be reached"
python3 "$work/server.py" "$hport" "$work/got" & server=$!
got() { cat "$work/got" 2>/dev/null | wc -l; }
for _ in $(seq 1 400); do [ "$(got)" -ge 3 ] && break; sleep 0.1; done
[ "$(got)" = 3 ] || fail "http: $(got) of 3 messages handled"
grep -q 'answered 50[23]' "$work/log" || fail "http: the 503/502 answers were not logged"
after_outage "http"
kill -TERM "$pid"; wait "$pid" || fail "http consumer exit $?"; pid=
kill "$server"; wait "$server" 2>/dev/null || true; server=
echo "consumer_handler_outage: --http refused, 503, 502: held, none poisoned, all handled: ok"

# --exec: exit 75 while the flag file is missing.
cmd="if [ -e '$work/up' ]; then cat >> '$work/exec'; exit 0; fi; echo 'db is down' >&2; exit 75"
handled() { grep -o '"e":' "$work/exec" 2>/dev/null | wc -l; }
"$sqlq" consume "$q" --exec "$cmd" --listen "127.0.0.1:$mport" --max-polling-interval-ms 300 2> "$work/log" &
pid=$!
for i in 1 2 3; do "$sqlq" queue put "$q" "{\"e\":$i}" >/dev/null; done
during_outage "exit 75" "db is down"
touch "$work/up"
for _ in $(seq 1 400); do [ "$(handled)" -ge 3 ] && break; sleep 0.1; done
[ "$(handled)" = 3 ] || fail "exec: $(handled) of 3 messages handled"
after_outage "exec"
kill -TERM "$pid"; wait "$pid" || fail "exec consumer exit $?"; pid=
echo "consumer_handler_outage: --exec exit 75: held, none poisoned, all handled: ok"

# A drain in such an outage stops with exit 1 and says why; the message stays, not counted.
rm -f "$work/up"
"$sqlq" queue put "$q" '{"drain":1}' >/dev/null
code=0
timeout 60 "$sqlq" consume "$q" --exec "$cmd" --exit-when-empty --max-polling-interval-ms 300 2> "$work/log" || code=$?
[ "$code" = 1 ] || fail "drain in an outage: exit $code"
grep 'sqlq consume:' "$work/log" | grep -q "the handler's target is unavailable" || fail "drain: $(grep 'sqlq consume:' "$work/log")"
grep -q 'the queue could not be read' "$work/log" && fail "the drain blames the queue"
no_poison "drain"
touch "$work/up"
timeout 60 "$sqlq" consume "$q" --exec "$cmd" --exit-when-empty --max-polling-interval-ms 300 \
    --log-level debug 2> "$work/log" || fail "drain after the outage: exit $?"
grep -q 'event=consumer.done .*dequeue_count=2 attempt=1' "$work/log" || fail "the drain's dequeue was counted"
echo "consumer_handler_outage: a drain in an outage exits 1 saying so, message kept: ok"
