// Test peer built on the official SDK (@azure/storage-queue), for the bridge's credential tests.
//   node queue_sas.js account CONN RESOURCE_TYPES PERMISSIONS SECONDS
//        a connection string with an account SAS (ss=q) signed with CONN's key, expiring in SECONDS
//   node queue_sas.js queue CONN QUEUE PERMISSIONS SECONDS
//        the same with a service SAS scoped to one queue
//   node queue_sas.js peek CONN QUEUE
//        one JSON line per visible message (up to 32): {"expiresOn": ISO date, "text": MessageText,
//        "body": the base64-decoded text}
"use strict";
const path = require("path");
const sdk = require(path.join(__dirname, "../../node_modules/@azure/storage-queue"));

const [, , cmd, conn, a1, a2, a3] = process.argv;
const fields = Object.fromEntries(conn.split(";").filter(Boolean).map((p) => {
  const i = p.indexOf("=");
  return [p.slice(0, i), p.slice(i + 1)];
}));

async function main() {
  if (cmd === "account" || cmd === "queue") {
    const cred = new sdk.StorageSharedKeyCredential(fields.AccountName, fields.AccountKey);
    const expiresOn = new Date(Date.now() + Number(a3) * 1000);
    const sas = cmd === "account"
      ? sdk.generateAccountSASQueryParameters({ services: "q", resourceTypes: a1,
          permissions: sdk.AccountSASPermissions.parse(a2), expiresOn, version: "2019-12-12" }, cred)
      : sdk.generateQueueSASQueryParameters({ queueName: a1,
          permissions: sdk.QueueSASPermissions.parse(a2), expiresOn, version: "2019-12-12" }, cred);
    console.log(`QueueEndpoint=${fields.QueueEndpoint};SharedAccessSignature=${sas.toString()}`);
  } else if (cmd === "peek") {
    const q = sdk.QueueServiceClient.fromConnectionString(conn).getQueueClient(a1);
    const r = await q.peekMessages({ numberOfMessages: 32 });
    for (const m of r.peekedMessageItems)
      console.log(JSON.stringify({ expiresOn: m.expiresOn.toISOString(), text: m.messageText,
        body: Buffer.from(m.messageText, "base64").toString("utf8") }));
  } else {
    throw new Error(`unknown command ${cmd}`);
  }
}
main().catch((e) => { console.error(`queue_sas.js: ${e.message}`); process.exit(1); });
