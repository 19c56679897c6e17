// Reference SharedKey signatures from the official SDK (@azure/storage-queue), for
// tests/unit/test_shared_key.c. Regenerate with:
//   node tests/support/sign_reference.js
// The SDK hands the signed request to the old-style httpClient option (core-http-compat).
// The clock and the random client request ids are pinned so the output never changes; no
// request leaves the process (a capturing HTTP client answers instead of the network).
"use strict";
const path = require("path");
const root = path.resolve(__dirname, "../..");
const crypto = require("crypto");

const FIXED = Date.parse("Mon, 01 Jan 2024 00:00:00 GMT");
const RealDate = Date;
global.Date = class extends RealDate {
  constructor(...a) { if (a.length === 0) super(FIXED); else super(...a); }
  static now() { return FIXED; }
};
let ids = 0;
const fixedId = () => `00000000-0000-4000-8000-${String(++ids).padStart(12, "0")}`;
crypto.randomUUID = fixedId;
if (globalThis.crypto) globalThis.crypto.randomUUID = fixedId;

const { QueueServiceClient, StorageSharedKeyCredential } =
  require(path.join(root, "node_modules/@azure/storage-queue"));

const account = "devstoreaccount1";
const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const captured = [];
const emptyList = '<?xml version="1.0" encoding="utf-8"?><QueueMessagesList></QueueMessagesList>';
const httpClient = {
  async sendRequest(req) {
    const h = {};
    for (const { name, value } of req.headers.headersArray()) h[name.toLowerCase()] = value;
    captured.push({ method: req.method, url: req.url, headers: h });
    const body = req.url.includes("comp=list")
      ? '<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Queues/></EnumerationResults>'
      : emptyList;
    return { status: req.method === "PUT" && !req.url.includes("/messages") ? 201 :
                     req.method === "POST" ? 201 : req.method === "DELETE" ? 204 : 200,
             headers: { toJson: () => ({ "content-type": "application/xml" }) },
             bodyAsText: body, request: req };
  },
};

async function main() {
  const cred = new StorageSharedKeyCredential(account, key);
  const svc = new QueueServiceClient(`http://127.0.0.1:10001/${account}`, cred,
                                     { httpClient, retryOptions: { maxTries: 1 } });
  const q = svc.getQueueClient("signtest");
  await q.create();
  await q.getProperties();
  await q.sendMessage("<a&b>", { visibilityTimeout: 5, messageTimeToLive: -1 });
  await q.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 600 });
  await q.deleteMessage("0f5d2c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6", "AQ+/=b==");
  for await (const _ of svc.listQueues({ prefix: "sign" }).byPage()) break;
  for (const c of captured) {
    const u = new URL(c.url);
    const ms = Object.keys(c.headers).filter((n) => n.startsWith("x-ms-")).sort();
    console.log(JSON.stringify({
      method: c.method, path: u.pathname,
      query: [...u.searchParams.entries()],
      ms_headers: ms.map((n) => [n, c.headers[n]]),
      content_length: c.headers["content-length"] || "",
      content_type: c.headers["content-type"] || "",
      authorization: c.headers["authorization"],
    }));
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
