// Azurite's queue service (node_modules/.bin/azurite-queue, same arguments) with one fix: in
// memory, its extent garbage collector deletes unreferenced extents in one batch, not one by one.
//
// Why: every queue message is an extent. Once a minute Azurite's QueueGCManager sweeps the
// extents whose messages were deleted, calling LokiJS findAndRemove({id}) once per extent.
// In LokiJS 1.5.12 each call costs milliseconds (5,000 extents took 51 s on the test machine),
// and the sweep never yields to the event loop (its awaits resolve at once), so the service
// answers nothing until it ends: the 15-30 s pauses the test suite saw under load (a probe:
// tests/support/azurite_probe.js). One removeWhere over the collection removes the same
// 4,500 extents in 32 ms. Everything else is Azurite's own code, unchanged. On disk (--disk)
// many messages share one extent file, so extents stay few and Azurite's own sweep is kept.
"use strict";
const path = require("path");

const dist = path.resolve(__dirname, "../../node_modules/azurite/dist/src");
const persistence = path.join(dist, "common/persistence");
const MemoryExtentStore = require(path.join(persistence, "MemoryExtentStore")).default;
const LokiExtentMetadata = require(path.join(persistence, "LokiExtentMetadataStore")).default;

// Refuse to start when Azurite's internals are not what this patch replaces (another version).
const probe = new LokiExtentMetadata(path.join(__dirname, "azurite-shape-check"), true);
for (const [what, ok] of [
  ["MemoryExtentStore.deleteExtents", typeof MemoryExtentStore.prototype.deleteExtents === "function"],
  ["LokiExtentMetadata.db", probe.db && typeof probe.EXTENTS_COLLECTION === "string"],
]) {
  if (!ok) {
    console.error(`azurite_queue.js: ${what} is not as in Azurite 3.37.0: update this patch`);
    process.exit(1);
  }
}

// Remove the metadata of every extent in ids with one pass over the collection.
function removeMetadata(store, ids) {
  const coll = store.db && store.db.getCollection(store.EXTENTS_COLLECTION);
  if (!coll) throw new Error("azurite_queue.js: Azurite's extent metadata store changed shape");
  coll.removeWhere((doc) => ids.has(doc.id));
}

MemoryExtentStore.prototype.deleteExtents = async function (extents) {
  const ids = new Set(extents);
  for (const id of ids) this.chunks.delete(this.categoryName, id);
  removeMetadata(this.metadataStore, ids);
  return ids.size;
};

// SQLQ_TEST_MESSAGE_DUMP=FILE: every message the service accepts is appended to FILE as one
// JSON line {"queue", "text"} (tests/support/message_dump.py compares two such dumps).
if (process.env.SQLQ_TEST_MESSAGE_DUMP) {
  const fs = require("fs");
  const MessagesHandler = require(path.join(dist, "queue/handlers/MessagesHandler")).default;
  const QueueContext = require(path.join(dist, "queue/context/QueueStorageContext")).default;
  const enqueue = MessagesHandler.prototype.enqueue;
  MessagesHandler.prototype.enqueue = async function (queueMessage, options, context) {
    const response = await enqueue.call(this, queueMessage, options, context);
    const queue = new QueueContext(context).queue;
    fs.appendFileSync(process.env.SQLQ_TEST_MESSAGE_DUMP,
      JSON.stringify({ queue: queue || "?", text: queueMessage.messageText }) + "\n");
    return response;
  };
}

require(path.join(dist, "queue/main.js"));
