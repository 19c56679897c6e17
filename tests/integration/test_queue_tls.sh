#!/usr/bin/env bash
# TLS is always verified, and ca_file trusts a private CA instead of the system's: against a
# local TLS server (openssl s_server on 127.0.0.1) with a self-signed certificate, a request
# fails on the certificate without ca_file and passes the handshake with it; an unreadable
# ca_file is a configuration error (exit 2).
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_SOURCE_DIR:?}"
work=$(mktemp -d)
server=""
unset SQLQ_QUEUE_CONNECTION SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage SQLQ_CA_FILE
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "queue_tls: $*" >&2; exit 1; }

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/ca.pem" -days 1 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
port=$(bash "$SQLQ_SOURCE_DIR/tests/support/free_port.sh")
openssl s_server -accept "127.0.0.1:$port" -cert "$work/ca.pem" -key "$work/key.pem" -www -quiet \
    >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

conn="https://127.0.0.1:$port/devstoreaccount1?sv=2019-12-12&ss=q&srt=sco&sp=r&sig=c2lnbmF0dXJl"
rc=0
"$SQLQ_BIN" queue peek orders --queue-connection "$conn" >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 1 ] || { cat "$work/err" >&2; fail "untrusted certificate: exit $rc, expected 1"; }
grep -qi "certificate" "$work/err" || { cat "$work/err" >&2; fail "the failure does not name the certificate"; }

rc=0
"$SQLQ_BIN" queue peek orders --queue-connection "$conn" --ca-file "$work/ca.pem" >"$work/out" 2>"$work/err" || rc=$?
grep -qi "certificate\|SSL\|TLS" "$work/err" && { cat "$work/err" >&2; fail "ca_file: still a TLS failure"; }
# s_server answers with an HTML status page: past TLS, the reply is not a queue service's.
[ "$rc" != 0 ] || fail "an HTML page was taken for a peek reply"

rc=0
SQLQ_CA_FILE=/nonexistent/ca.pem "$SQLQ_BIN" queue peek orders --queue-connection "$conn" >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" = 2 ] || { cat "$work/err" >&2; fail "unreadable ca_file: exit $rc, expected 2"; }
grep -q "ca_file: cannot read '/nonexistent/ca.pem'" "$work/err" || fail "unreadable ca_file not named"
echo "queue_tls: ok"
