// Drains a shard set with the official SDK (@azure/storage-queue) and checks what sqlq bridge
// promised of it (docs/scaling.md): every message is on the shard its key hashes to (SHA-256
// of the canonical key JSON, first 8 bytes big-endian, mod the number of shards; computed here
// independently of sqlq), and on that shard the versions of each key never go down.
//   node shard_drain.js [--max-duplicates N] CONN TABLE_FILE QUEUE...
// receives and deletes every message of each QUEUE (shard i is the i-th QUEUE; base64 bodies,
// row or batch format) until all are empty for 2 s, then checks the newest version of every
// key against TABLE_FILE, the table's rows as lines "id v": each row's key ends in an insert
// or update carrying that v, every other key in a delete. Nothing lost. A change (message id)
// that arrived more than once counts as a duplicate: more than N (default 0) fail. Prints a
// summary.
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const root = path.resolve(__dirname, "../..");
const { QueueClient } = require(path.join(root, "node_modules/@azure/storage-queue"));

function fail(msg) { console.error("shard_drain: FAIL: " + msg); process.exit(1); }

// Sorted keys, no whitespace, UTF-8 as is (Python's json.dumps(sort_keys=True,
// separators=(",", ":"), ensure_ascii=False) for the integers and strings keys hold here).
function canonical(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
}

function shardOf(key, n) {
  const d = crypto.createHash("sha256").update(Buffer.from(canonical(key), "utf8")).digest();
  return Number(d.readBigUInt64BE(0) % BigInt(n));
}

async function drainOne(q) {
  const got = [];
  for (;;) {
    const r = await q.receiveMessages({ numberOfMessages: 32, visibilityTimeout: 60 });
    if (r.receivedMessageItems.length === 0) return got;
    for (const m of r.receivedMessageItems) {
      const body = JSON.parse(Buffer.from(m.messageText, "base64").toString("utf8"));
      got.push(...(Array.isArray(body.changes) ? body.changes : [body]));
      await q.deleteMessage(m.messageId, m.popReceipt);
    }
  }
}

async function main() {
  let argv = process.argv.slice(2), maxDup = 0;
  if (argv[0] === "--max-duplicates") { maxDup = Number(argv[1]); argv = argv.slice(2); }
  const [conn, out, ...queues] = argv;
  if (!conn || !out || queues.length === 0) fail("usage: CONN TABLE_FILE QUEUE...");
  const clients = queues.map((name) => new QueueClient(conn, name));
  const newest = {}, lastOnShard = {}, ids = new Set();
  let duplicates = 0;
  let total = 0, quietSince = Date.now();
  const perShard = queues.map(() => 0);
  while (Date.now() - quietSince < 2000) {
    let any = false;
    for (let i = 0; i < clients.length; i++) {
      for (const c of await drainOne(clients[i])) {
        any = true;
        total++;
        perShard[i]++;
        if (ids.has(c.id)) duplicates++;
        ids.add(c.id);
        const k = canonical(c.key);
        const want = shardOf(c.key, queues.length);
        if (want !== i) fail(`key ${k} version ${c.version} arrived on shard ${i} (${queues[i]}), its hash says ${want}`);
        const prev = lastOnShard[k];
        if (prev !== undefined && c.version < prev.version)
          fail(`key ${k} on shard ${i}: version ${c.version} (${c.op}, published ${c.ts}) after ` +
               `${prev.version} (${prev.op}, published ${prev.ts})`);
        lastOnShard[k] = c;
        if (!newest[k] || c.version > newest[k].version)
          newest[k] = { op: c.op, version: c.version, v: c.row ? c.row.v : null };
      }
    }
    if (any) quietSince = Date.now();
    else await new Promise((res) => setTimeout(res, 200));
  }
  const rows = fs.readFileSync(out, "utf8").split("\n").filter((l) => l.trim() !== "");
  const inTable = {};
  for (const line of rows) {
    const [id, v] = line.trim().split(/\s+/).map(Number);
    const k = canonical({ id });
    inTable[k] = true;
    const n = newest[k];
    if (!n) fail(`row ${k} (v ${v}) was never published: lost`);
    if (n.op === "delete" || n.v !== v) fail(`row ${k} is v ${v}, its newest message (version ${n.version}) says ${n.op} v ${n.v}: lost`);
  }
  for (const k of Object.keys(newest))
    if (!inTable[k] && newest[k].op !== "delete")
      fail(`key ${k} is not in the table, its newest message (version ${newest[k].version}) says ${newest[k].op}: a delete was lost`);
  if (duplicates > maxDup) fail(`${duplicates} change(s) arrived twice, at most ${maxDup} allowed`);
  console.log(`shard_drain: ${total} changes, per shard ${perShard.join(" ")}, ${Object.keys(newest).length} keys, ` +
              `${duplicates} duplicate(s), every one on its hashed shard, versions increasing per key`);
}
main().catch((e) => fail(e.stack || String(e)));
