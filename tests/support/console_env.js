// console_env.js: what the console tests share: `sqlq console` started and stopped, the system
// Chromium driven by playwright-core (pinned in package-lock.json; it never downloads a
// browser), the official SDK (@azure/storage-queue) to put and read queue messages, and waits.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawn, execFileSync } = require("child_process");

const root = path.resolve(__dirname, "../..");
const sdk = require(path.join(root, "node_modules/@azure/storage-queue"));
const { chromium } = require(path.join(root, "node_modules/playwright-core"));

const bin = process.env.SQLQ_BIN;
const envDir = process.env.SQLQ_TEST_ENV_DIR;
if (!bin || !envDir) throw new Error("run through ctest (SQLQ_BIN, SQLQ_TEST_ENV_DIR)");
const conn = fs.readFileSync(path.join(envDir, "azurite/conn"), "utf8").trim();
const cleanups = [];

function fail(msg) {
  throw new Error(msg);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll fn until it returns a truthy value (returned) or ms pass (fail with what).
async function until(fn, ms, what) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await sleep(100);
  }
  fail("timed out after " + ms + " ms: " + what + (last !== undefined ? " (last: " + JSON.stringify(last) + ")" : ""));
}

function tmpdir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

// `sqlq console ARGS` with env; resolves once it prints the address it serves.
function startConsole(args, env) {
  const proc = spawn(bin, ["console", "--console-listen", "127.0.0.1:0", ...args], {
    env: Object.assign({}, process.env, { SQLQ_QUEUE_CONNECTION: conn }, env || {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "", err = "";
  proc.stderr.on("data", (d) => { err += d; });
  const stop = async () => {
    if (proc.exitCode === null) {
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
    }
  };
  cleanups.push(stop);
  return new Promise((resolve, reject) => {
    proc.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/serving on (http:\/\/[^/\s]+)\//);
      if (m) resolve({ proc, url: m[1], stop, stderr: () => err });
    });
    proc.once("exit", (code) => reject(new Error("sqlq console exited " + code + ": " + err)));
  });
}

// A fresh browser profile per run; nothing downloaded, nothing synced.
async function launchBrowser() {
  const profile = tmpdir("sqlq-console-chromium-");
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    acceptDownloads: true,
    viewport: { width: 1360, height: 860 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  cleanups.push(() => ctx.close());
  return ctx;
}

// A page that fails the test on any dialog, page error or console error.
async function strictPage(ctx) {
  const page = await ctx.newPage();
  const problems = [];
  page.on("dialog", (d) => { problems.push("dialog: " + d.message()); d.dismiss().catch(() => {}); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") problems.push("console error: " + m.text()); });
  page.problems = problems;
  return page;
}

function queue(name) {
  return new sdk.QueueClient(conn, name);
}

async function putBody(name, buf) {
  const q = queue(name);
  await q.createIfNotExists();
  await q.sendMessage(Buffer.from(buf).toString("base64"), { messageTimeToLive: -1 });
}

// The decoded bodies of a queue's visible messages (a peek: nothing changes), sorted.
async function bodies(name) {
  const q = queue(name);
  try {
    const r = await q.peekMessages({ numberOfMessages: 32 });
    return r.peekedMessageItems.map((m) => Buffer.from(m.messageText, "base64").toString("latin1")).sort();
  } catch (e) {
    if (e.statusCode === 404) return [];
    throw e;
  }
}

async function count(name) {
  try {
    return (await queue(name).getProperties()).approximateMessagesCount;
  } catch (e) {
    if (e.statusCode === 404) return 0;
    throw e;
  }
}

function run(args, env) {
  return execFileSync(bin, args, { env: Object.assign({}, process.env, { SQLQ_QUEUE_CONNECTION: conn }, env || {}), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

async function cleanup() {
  for (const f of cleanups.reverse()) {
    const t0 = Date.now();
    try { await f(); } catch (e) { /* best effort */ }
    if (process.env.SQLQ_CONSOLE_TRACE) console.log("cleanup " + (Date.now() - t0) + " ms: " + String(f).slice(0, 60));
  }
}

// Run main, clean up whatever happened, exit 1 on a failure.
function main(name, fn) {
  fn().then(cleanup, async (e) => {
    console.error(name + ": " + (e.stack || e));
    await cleanup();
    process.exit(1);
  }).then(() => console.log(name + ": ok"));
}

module.exports = { fail, check, sleep, until, tmpdir, startConsole, launchBrowser, strictPage, queue,
  putBody, bodies, count, run, cleanups, main, conn, root, envDir };
