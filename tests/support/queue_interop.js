// Interop peer for tests/integration/test_queue_interop.sh: the official SDK
// (@azure/storage-queue) on the other side of sqlq, with message bodies that stress encoding
// (non-ASCII, XML specials, CR/LF, CDATA terminators, a long body).
//   node queue_interop.js bodies DIR            write DIR/body-N.bin, the bodies sqlq will send
//   node queue_interop.js send CONN QUEUE DIR   SDK puts each body base64-encoded (as Azure
//                                                Functions producers do)
//   node queue_interop.js receive CONN QUEUE DIR  SDK receives; base64-decoded texts must equal
//                                                the bodies (any order); deletes them
//   node queue_interop.js check-json DIR FILE   sqlq's `queue get` JSON lines: bodies must match
//   node queue_interop.js sas-url CONN          an account SAS URL for the queue service
"use strict";
const fs = require("fs");
const path = require("path");
const root = path.resolve(__dirname, "../..");
const { QueueServiceClient, AccountSASPermissions, AccountSASResourceTypes, AccountSASServices } =
  require(path.join(root, "node_modules/@azure/storage-queue"));

const BODIES = [
  '{"name":"Žluťoučký kůň","emoji":"🐎","xml":"<a href=\\"x\\">&amp; &lt;</a>"}',
  "plain ascii",
  "line1\r\nline2\ttab\rlone CR",
  "]]> CDATA end & <![CDATA[ x ]]> &#x41; &bogus;",
  "日本語のテキスト — “quotes” ‘single’ €",
  "x".repeat(3000) + "é",
];

function fail(msg) { console.error("interop: " + msg); process.exit(1); }
function expected() { return BODIES.map((b) => Buffer.from(b, "utf8")); }

function compare(got, what) {
  const want = expected().map((b) => b.toString("hex")).sort();
  const have = got.map((b) => b.toString("hex")).sort();
  if (want.length !== have.length) fail(`${what}: ${have.length} messages, expected ${want.length}`);
  for (let i = 0; i < want.length; i++)
    if (want[i] !== have[i]) fail(`${what}: bodies differ:\n  got  ${Buffer.from(have[i], "hex")}\n  want ${Buffer.from(want[i], "hex")}`);
  console.log(`interop: ${what}: ${have.length} bodies identical`);
}

function strictBase64(text) {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) fail(`not base64: ${text}`);
  return Buffer.from(text, "base64");
}

async function main() {
  const [cmd, a, b, c] = process.argv.slice(2);
  if (cmd === "bodies") {
    expected().forEach((body, i) => fs.writeFileSync(path.join(a, `body-${i}.bin`), body));
    console.log(BODIES.length);
  } else if (cmd === "send") {
    const q = QueueServiceClient.fromConnectionString(a).getQueueClient(b);
    for (const body of expected()) await q.sendMessage(body.toString("base64"));
  } else if (cmd === "receive") {
    const q = QueueServiceClient.fromConnectionString(a).getQueueClient(b);
    const got = [];
    for (;;) {
      const r = await q.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 60 });
      if (r.receivedMessageItems.length === 0) break;
      for (const m of r.receivedMessageItems) {
        got.push(strictBase64(m.messageText));
        await q.deleteMessage(m.messageId, m.popReceipt);
      }
    }
    compare(got, "sqlq -> SDK");
  } else if (cmd === "check-json") {
    const lines = fs.readFileSync(b, "utf8").split("\n").filter((l) => l.trim());
    const got = lines.map((l) => {
      const o = JSON.parse(l);
      if (typeof o.body !== "string") fail(`no decoded body in ${l}`);
      if (!o.id || !o.pop_receipt || o.dequeue_count !== 1) fail(`incomplete line ${l}`);
      return Buffer.from(o.body, "utf8");
    });
    compare(got, "SDK -> sqlq");
  } else if (cmd === "sas-url") {
    const svc = QueueServiceClient.fromConnectionString(a);
    const url = svc.generateAccountSasUrl(new Date(Date.now() + 3600 * 1000),
      AccountSASPermissions.parse("rwdlacup"), AccountSASResourceTypes.parse("sco").toString());
    console.log(url);
  } else {
    fail(`unknown command ${cmd}`);
  }
}
main().catch((e) => fail(e.stack || String(e)));
