// The official Node SDK (@azure/storage-queue) consuming N messages the way the Azure Functions
// queue trigger does: Get Messages in batches of B (10 min visibility), a no-op handler, Delete
// Message for each, and the next batch as soon as fewer than T are still running (at most
// B + T - 1 in flight). The baseline for bench/consume.sh.
//   node bench/node/consume.js CONNECTION QUEUE N [B=16] [T=8]
// Prints one JSON line: messages, seconds, per_second, and cpu_s (user+system CPU of the
// consume loop only, module loading excluded; the process as a whole is measured by the caller).
"use strict";
const path = require("path");
const root = path.resolve(__dirname, "../..");
const { QueueServiceClient } = require(path.join(root, "node_modules/@azure/storage-queue"));

async function main() {
  const [conn, queue, nText, bText, tText] = process.argv.slice(2);
  const n = parseInt(nText, 10);
  const batch = parseInt(bText || "16", 10), threshold = parseInt(tText || "8", 10);
  const q = QueueServiceClient.fromConnectionString(conn).getQueueClient(queue);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let received = 0, done = 0, failed = 0, running = 0;
  let wake = null;
  const finished = () => { running--; done++; if (wake) { const w = wake; wake = null; w(); } };
  const handle = async (m) => {
    Buffer.from(m.messageText, "base64"); // what a Functions host decodes for the handler
    try { await q.deleteMessage(m.messageId, m.popReceipt); } catch (e) { failed++; }
    finished();
  };
  while (received < n) {
    while (running >= threshold) await new Promise((res) => { wake = res; });
    const r = await q.receiveMessages({ numberOfMessages: Math.min(batch, n - received),
                                        visibilityTimeout: 600 });
    const items = r.receivedMessageItems;
    if (items.length === 0) { await new Promise((res) => setTimeout(res, 100)); continue; }
    received += items.length;
    running += items.length;
    for (const m of items) handle(m);
  }
  while (running > 0) await new Promise((res) => { wake = res; });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({ messages: done - failed, failed, seconds: secs,
    per_second: (done - failed) / secs, cpu_s: (cpu.user + cpu.system) / 1e6 }));
}
main().catch((e) => { console.error(e); process.exit(1); });
