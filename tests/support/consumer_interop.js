// Interop peer for tests/integration/test_consumer_interop.sh: the official SDK
// (@azure/storage-queue) as the producer an Azure Functions app would be, and as the reader of
// a poison queue that sqlq consume wrote.
//   node consumer_interop.js send CONN QUEUE FILE     put FILE's bytes base64-encoded (what
//                                                     Functions producers and output bindings send)
//   node consumer_interop.js receive CONN QUEUE FILE  receive one message (waiting up to 10 s),
//                                                     base64-decode it, compare with FILE, delete it
"use strict";
const fs = require("fs");
const path = require("path");
const root = path.resolve(__dirname, "../..");
const { QueueClient } = require(path.join(root, "node_modules/@azure/storage-queue"));

function fail(msg) { console.error("consumer_interop: " + msg); process.exit(1); }

async function main() {
  const [cmd, conn, queue, file] = process.argv.slice(2);
  if (!cmd || !conn || !queue || !file) fail("usage: send|receive CONN QUEUE FILE");
  const q = new QueueClient(conn, queue);
  const want = fs.readFileSync(file);
  if (cmd === "send") {
    await q.createIfNotExists();
    await q.sendMessage(want.toString("base64"));
    return;
  }
  if (cmd !== "receive") fail("unknown command " + cmd);
  const until = Date.now() + 10000;
  for (;;) {
    const r = await q.receiveMessages({ numberOfMessages: 1, visibilityTimeout: 30 });
    if (r.receivedMessageItems.length === 1) {
      const m = r.receivedMessageItems[0];
      const got = Buffer.from(m.messageText, "base64");
      if (Buffer.compare(got, want) !== 0)
        fail(`body differs:\n  got  ${got.toString()}\n  want ${want.toString()}`);
      await q.deleteMessage(m.messageId, m.popReceipt);
      console.log(`consumer_interop: SDK read ${queue}: body identical (${got.length} bytes)`);
      return;
    }
    if (Date.now() > until) fail(`no message in ${queue}`);
    await new Promise((res) => setTimeout(res, 200));
  }
}
main().catch((e) => fail(e.stack || String(e)));
