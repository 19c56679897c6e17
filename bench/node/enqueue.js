// The official Node SDK (@azure/storage-queue) putting N messages with K requests in flight:
// the baseline for bench/enqueue.sh.
//   node bench/node/enqueue.js CONNECTION QUEUE N K BODY_FILE
// Prints one JSON line: messages, seconds, per_second, and cpu_s (user+system CPU of the send
// loop only, module loading excluded; the process as a whole is measured by the caller).
"use strict";
const fs = require("fs");
const path = require("path");
const root = path.resolve(__dirname, "../..");
const { QueueServiceClient } = require(path.join(root, "node_modules/@azure/storage-queue"));

async function main() {
  const [conn, queue, nText, kText, bodyFile] = process.argv.slice(2);
  const n = parseInt(nText, 10), k = parseInt(kText, 10);
  // Azure Functions consumers expect base64: encode as such producers do.
  const text = fs.readFileSync(bodyFile).toString("base64");
  const q = QueueServiceClient.fromConnectionString(conn).getQueueClient(queue);
  await q.createIfNotExists();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let next = 0, failed = 0;
  async function worker() {
    while (next < n) {
      next++;
      try { await q.sendMessage(text); } catch (e) { failed++; }
    }
  }
  await Promise.all(Array.from({ length: k }, worker));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  console.log(JSON.stringify({ messages: n - failed, failed, seconds: secs,
    per_second: (n - failed) / secs, cpu_s: (cpu.user + cpu.system) / 1e6 }));
}
main().catch((e) => { console.error(e); process.exit(1); });
