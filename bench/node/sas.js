// Create a queue and print its URL with a queue SAS (add, read, update, process; 1 day), so a
// load generator can put messages without signing anything per request.
//   node bench/node/sas.js CONNECTION QUEUE
"use strict";
const path = require("path");
const root = path.resolve(__dirname, "../..");
const { QueueServiceClient, QueueSASPermissions } =
  require(path.join(root, "node_modules/@azure/storage-queue"));

async function main() {
  const [conn, queue] = process.argv.slice(2);
  const q = QueueServiceClient.fromConnectionString(conn).getQueueClient(queue);
  await q.createIfNotExists();
  const url = await q.generateSasUrl({
    permissions: QueueSASPermissions.parse("raup"),
    expiresOn: new Date(Date.now() + 24 * 3600 * 1000),
  });
  console.log(url);
}
main().catch((e) => { console.error(e.message); process.exit(1); });
