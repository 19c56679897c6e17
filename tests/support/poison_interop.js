// Interop peer for tests/integration/test_poison_truth.sh: the official SDK (@azure/storage-queue).
//   node poison_interop.js sas CONN QUEUE PERMS   print a connection string whose SAS is scoped to
//                                                 QUEUE only (a queue service SAS, e.g. "raup")
//   node poison_interop.js send CONN QUEUE FILE   put FILE's exact bytes, base64-encoded, never expiring
//   node poison_interop.js receive CONN QUEUE DIR receive every message (until the queue answers
//                                                 empty twice), write each decoded body to DIR/N,
//                                                 delete it; print how many
"use strict";
const fs = require("fs");
const path = require("path");
const root = path.resolve(__dirname, "../..");
const sdk = require(path.join(root, "node_modules/@azure/storage-queue"));

function fail(msg) { console.error("poison_interop: " + msg); process.exit(1); }

function parse(conn) {
  const kv = {};
  for (const part of conn.split(";")) {
    const i = part.indexOf("=");
    if (i > 0) kv[part.slice(0, i)] = part.slice(i + 1);
  }
  return kv;
}

async function main() {
  const [cmd, conn, queue, arg] = process.argv.slice(2);
  if (!cmd || !conn || !queue || !arg) fail("usage: sas|send|receive CONN QUEUE ARG");
  if (cmd === "sas") {
    const kv = parse(conn);
    const cred = new sdk.StorageSharedKeyCredential(kv.AccountName, kv.AccountKey);
    const sas = sdk.generateQueueSASQueryParameters({
      queueName: queue,
      permissions: sdk.QueueSASPermissions.parse(arg),
      startsOn: new Date(Date.now() - 5 * 60 * 1000),
      expiresOn: new Date(Date.now() + 60 * 60 * 1000),
    }, cred).toString();
    console.log(`QueueEndpoint=${kv.QueueEndpoint};SharedAccessSignature=${sas}`);
    return;
  }
  const q = new sdk.QueueClient(conn, queue);
  if (cmd === "send") {
    await q.createIfNotExists();
    await q.sendMessage(fs.readFileSync(arg).toString("base64"), { messageTimeToLive: -1 });
    return;
  }
  if (cmd !== "receive") fail("unknown command " + cmd);
  let n = 0;
  for (let empty = 0; empty < 2;) {
    const r = await q.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 60 });
    if (r.receivedMessageItems.length === 0) { empty++; continue; }
    for (const m of r.receivedMessageItems) {
      fs.writeFileSync(path.join(arg, String(n++)), Buffer.from(m.messageText, "base64"));
      await q.deleteMessage(m.messageId, m.popReceipt);
    }
  }
  console.log(n);
}

main().catch((e) => fail(e.stack || String(e)));
