#!/usr/bin/env python3
"""A fault-injecting HTTP proxy in front of Azurite, for operator-tool tests (127.0.0.1 only).

    fault_proxy.py UPSTREAM_PORT DIR

Listens on a free 127.0.0.1 port, written to DIR/port. Every request is counted in DIR/count
(one line per request). The mode is read from DIR/mode before each request:
    pass          forward to 127.0.0.1:UPSTREAM_PORT
    delay MS      wait MS milliseconds, then forward
    status CODE   answer CODE with an Azure-style error body (OperationTimedOut for 500)
    drop          close the connection without an answer
    hang          keep the connection open without an answer while the mode stays hang (each
                  such request's arrival, as Unix time, is appended to DIR/hung), then go on
                  with the new mode
"""
import http.client
import http.server
import os
import socketserver
import sys
import threading
import time

upstream = int(sys.argv[1])
state = sys.argv[2]
lock = threading.Lock()


def mode():
    try:
        with open(os.path.join(state, "mode")) as f:
            return f.read().split()
    except OSError:
        return ["pass"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        with lock, open(os.path.join(state, "count"), "a") as f:
            f.write(self.command + " " + self.path.split("?")[0] + "\n")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        m = mode()
        if m[0] == "hang":
            with lock, open(os.path.join(state, "hung"), "a") as f:
                f.write("%.3f\n" % time.time())
            while m[0] == "hang":
                time.sleep(0.05)
                m = mode()
        if m[0] == "drop":
            self.close_connection = True
            self.connection.close()
            return
        if m[0] == "status":
            code = int(m[1])
            reason = "OperationTimedOut" if code == 500 else "ServerBusy"
            text = ('<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code>'
                    '<Message>injected by fault_proxy</Message></Error>' % reason).encode()
            self.send_response(code)
            self.send_header("x-ms-error-code", reason)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)
            return
        if m[0] == "delay":
            time.sleep(int(m[1]) / 1000.0)
        conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        headers["Host"] = "127.0.0.1:%d" % upstream
        conn.request(self.command, self.path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        self.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        conn.close()

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client was stopped on purpose

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(os.path.join(state, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(state, "port.tmp"), os.path.join(state, "port"))
srv.serve_forever()
