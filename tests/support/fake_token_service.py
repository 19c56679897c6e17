#!/usr/bin/env python3
"""A Microsoft Entra ID token service on 127.0.0.1 for the identity tests: the App Service /
Container Apps managed-identity endpoint, IMDS, and the Entra v2.0 token endpoint, each minting
unsigned JWTs that Azurite's `--oauth basic` accepts (aud, iss, iat, nbf, exp; REFERENCE.md §9).

    fake_token_service.py DIR [--cert C --key K] [--lifetime S] [--claimed-lifetime S]

Listens on two free ports: DIR/http_port (plain http: the managed-identity endpoints, as on
Azure) and, with --cert/--key, DIR/https_port (the Entra endpoint). Appends one JSON line per
request to DIR/requests: {"kind", "status", "client_id", "resource"} (never a secret).
Expected credentials: identity header "fake-identity-header-0123456789", client secret
"fake-client-secret-0123456789", federated token "fake-federated-token-0123456789". While
DIR/fail exists every request gets 500 (an outage of the token service). --claimed-lifetime
makes replies claim a longer life than the token's exp: the storage service then refuses a
token the client still believes valid (the 401/403 refresh path).
"""
import base64
import http.server
import json
import os
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

IDENTITY_HEADER = "fake-identity-header-0123456789"
CLIENT_SECRET = "fake-client-secret-0123456789"
FEDERATED_TOKEN = "fake-federated-token-0123456789"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"

DIR = sys.argv[1]
ARGS = dict(zip(sys.argv[2::2], sys.argv[3::2]))
LIFETIME = int(ARGS.get("--lifetime", "3600"))
CLAIMED = int(ARGS.get("--claimed-lifetime", str(LIFETIME)))
LOCK = threading.Lock()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(resource, tenant, client_id):
    now = int(time.time())
    head = {"alg": "none", "typ": "JWT"}
    body = {"aud": resource.rstrip("/"), "iss": "https://sts.windows.net/%s/" % tenant,
            "iat": now, "nbf": now - 60, "exp": now + LIFETIME, "appid": client_id or "system",
            "oid": client_id or "system-assigned", "tid": tenant}
    token = "%s.%s.%s" % (b64url(json.dumps(head).encode()), b64url(json.dumps(body).encode()),
                          b64url(b"unsigned"))
    return token, now + CLAIMED


def record(entry):
    with LOCK, open(os.path.join(DIR, "requests"), "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, kind, client_id=None, resource=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        record({"kind": kind, "status": status, "client_id": client_id, "resource": resource})

    def outage(self, kind):
        if os.path.exists(os.path.join(DIR, "fail")):
            self.reply(500, {"error": "temporarily_unavailable",
                             "error_description": "the token service is down (test)"}, kind)
            return True
        return False

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(url.query)
        resource = q.get("resource", [""])[0]
        client_id = q.get("client_id", [None])[0]
        if url.path == "/msi/token":
            kind = "app_service"
            if self.outage(kind):
                return
            if q.get("api-version") != ["2019-08-01"] or not resource:
                return self.reply(400, {"statusCode": 400, "message": "bad api-version"}, kind)
            if self.headers.get("X-IDENTITY-HEADER") != IDENTITY_HEADER:
                return self.reply(400, {"statusCode": 400,
                                        "message": "X-IDENTITY-HEADER is wrong"}, kind)
            token, exp = jwt(resource, TENANT, client_id)
            return self.reply(200, {"access_token": token, "expires_on": str(exp),
                                    "resource": resource, "token_type": "Bearer",
                                    "client_id": client_id or "system"}, kind, client_id, resource)
        if url.path == "/metadata/identity/oauth2/token":
            kind = "imds"
            if self.outage(kind):
                return
            if self.headers.get("Metadata") != "true" or q.get("api-version") != ["2018-02-01"]:
                return self.reply(400, {"error": "invalid_request",
                                        "error_description": "Required metadata header not specified"},
                                  kind)
            token, exp = jwt(resource, TENANT, client_id)
            return self.reply(200, {"access_token": token, "expires_on": str(exp),
                                    "expires_in": str(CLAIMED), "resource": resource,
                                    "token_type": "Bearer"}, kind, client_id, resource)
        self.reply(404, {"error": "not_found"}, "unknown")

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        kind = "entra"
        parts = url.path.strip("/").split("/")
        if len(parts) != 4 or parts[1:] != ["oauth2", "v2.0", "token"]:
            return self.reply(404, {"error": "not_found"}, kind)
        if self.outage(kind):
            return
        tenant = parts[0]
        client_id = form.get("client_id", [None])[0]
        scope = form.get("scope", [""])[0]
        if form.get("grant_type") != ["client_credentials"] or not scope.endswith("/.default"):
            return self.reply(400, {"error": "invalid_request",
                                    "error_description": "AADSTS900144: bad grant or scope"}, kind)
        if "client_assertion" in form:
            kind = "entra_workload"
            ok = (form.get("client_assertion_type") ==
                  ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"] and
                  form["client_assertion"] == [FEDERATED_TOKEN])
        else:
            kind = "entra_secret"
            ok = form.get("client_secret") == [CLIENT_SECRET]
        if not ok:
            return self.reply(401, {"error": "invalid_client",
                                    "error_description": "AADSTS7000215: Invalid client secret "
                                    "or assertion provided."}, kind, client_id)
        resource = scope[:-len("/.default")]
        token, exp = jwt(resource, tenant, client_id)
        self.reply(200, {"token_type": "Bearer", "expires_in": CLAIMED, "ext_expires_in": CLAIMED,
                         "access_token": token}, kind, client_id, resource)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def serve(server, name):
    with open(os.path.join(DIR, name + ".tmp"), "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(os.path.join(DIR, name + ".tmp"), os.path.join(DIR, name))
    server.serve_forever()


def main():
    plain = Server(("127.0.0.1", 0), Handler)
    threads = [threading.Thread(target=serve, args=(plain, "http_port"), daemon=True)]
    if "--cert" in ARGS:
        secure = Server(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS["--cert"], ARGS["--key"])
        secure.socket = ctx.wrap_socket(secure.socket, server_side=True)
        threads.append(threading.Thread(target=serve, args=(secure, "https_port"), daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
