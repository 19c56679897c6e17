#!/usr/bin/env python3
"""A hostile (or hanging) Azure Queue service on 127.0.0.1, for the consumer's trust-boundary
and shutdown tests. It answers the REST calls the consumer makes and logs every request line.

    fake_queue_service.py MODE DIR      listens on a free port, writes DIR/port, logs to DIR/requests

MODE
  valid         one well-formed message, then an empty queue (the control case)
  crlf-id       a message whose MessageId holds CR LF and an injected header
  huge-count    a message whose DequeueCount is 99999999999999999999
  overfill      more messages than numofmessages asked for
  hang          accept every request and never answer
  hang-delete   like valid, but Delete Message never answers
"""
import http.server
import os
import socketserver
import sys
import threading
import time
import urllib.parse

MODE, DIR = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()
STATE = {"served": False}


def message_xml(msg_id, count, text="eyJuIjoxfQ=="):  # base64 of {"n":1}
    return ("<QueueMessage><MessageId>%s</MessageId>"
            "<InsertionTime>Mon, 01 Jan 2024 00:00:00 GMT</InsertionTime>"
            "<ExpirationTime>Mon, 08 Jan 2024 00:00:00 GMT</ExpirationTime>"
            "<PopReceipt>AgAAAAMAAAAAAAAAsGA3ZFE32gE=</PopReceipt>"
            "<TimeNextVisible>Mon, 01 Jan 2024 00:10:00 GMT</TimeNextVisible>"
            "<DequeueCount>%s</DequeueCount><MessageText>%s</MessageText></QueueMessage>"
            % (msg_id, count, text))


def messages(query):
    want = int(query.get("numofmessages", ["1"])[0])
    if MODE == "crlf-id":
        items = [message_xml("5974b586&#13;&#10;X-Injected: yes", "1")]
    elif MODE == "huge-count":
        items = [message_xml("5974b586-0df3-4e2d-ad0c-18e3892bfca2", "99999999999999999999")]
    elif MODE == "overfill":
        items = [message_xml("id-%d" % i, "1") for i in range(want + 40)]
    elif STATE["served"]:  # hidden once received, as the lease would
        items = []
    else:
        STATE["served"] = True
        items = [message_xml("5974b586-0df3-4e2d-ad0c-18e3892bfca2", "1")]
    return ('<?xml version="1.0" encoding="utf-8"?><QueueMessagesList>%s</QueueMessagesList>'
            % "".join(items))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def note(self):
        with LOCK, open(DIR + "/requests", "a") as f:
            f.write("%s %s\n" % (self.command, self.path))

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def hang(self):
        while True:
            time.sleep(60)

    def do_GET(self):
        self.note()
        if MODE == "hang":
            self.hang()
        url = urllib.parse.urlsplit(self.path)
        if url.path.endswith("/messages"):
            body = messages(urllib.parse.parse_qs(url.query)).encode()
            self.answer(200, body, [("Content-Type", "application/xml")])
        else:
            self.answer(200)

    def do_DELETE(self):
        self.body()
        self.note()
        if MODE in ("hang", "hang-delete"):
            self.hang()
        self.answer(204)

    def do_PUT(self):
        self.body()
        self.note()
        if MODE == "hang":
            self.hang()
        self.answer(204 if "popreceipt" in self.path else 201,
                    headers=[("x-ms-popreceipt", "AgAAAAMAAAAAAAAAsGA3ZFE32gF="),
                             ("x-ms-time-next-visible", "Mon, 01 Jan 2024 00:10:00 GMT")])

    def do_POST(self):
        self.body()
        self.note()
        if MODE == "hang":
            self.hang()
        self.answer(201, b"<QueueMessagesList/>", [("Content-Type", "application/xml")])


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
open(DIR + "/requests", "w").close()
with open(DIR + "/port.tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(DIR + "/port.tmp", DIR + "/port")
server.serve_forever()
