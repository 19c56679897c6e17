// The console in a real browser (system Chromium through playwright-core) against a real
// PostgreSQL, SQLite and Azurite (tests/integration/test_console_browser.sh runs it):
//  1. SQLite: a route with pending changes shows them; `sqlq bridge --once` delivers them (the
//     SDK counts the messages) and the page shows none pending;
//  2. PostgreSQL: an open transaction that wrote the change log holds a committed change back:
//     the page says so, naming the transaction; once it commits, the route clears;
//  3. poison triage: a failing consumer fills QUEUE-poison; the page filters it by text and by
//     JSON field, shows one message, requeues a selection (a dry run first), exports and purges
//     the rest after a typed confirmation, and the SDK checks both queues after each step;
//  4. hostile bodies render as text: no script runs, no dialog, no console error;
//  5. screenshots of each page into $SQLQ_CONSOLE_SHOTS (docs/console.md shows them).
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync, spawn } = require("child_process");
const E = require("../support/console_env.js");
const { check, until } = E;

const tag = process.pid + "-" + Math.floor(Math.random() * 1e6);
const shots = process.env.SQLQ_CONSOLE_SHOTS || E.tmpdir("sqlq-console-shots-");
fs.mkdirSync(shots, { recursive: true });
const pgPort = fs.readFileSync(path.join(E.envDir, "postgres/port"), "utf8").trim();
const pgOdbc = fs.readFileSync(path.join(E.envDir, "postgres/odbc"), "utf8").trim();
const psql = (db, sql) => execFileSync("psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
  "-p", pgPort, "-U", "sqlq", "-d", db, "-c", sql], { encoding: "utf8" });

async function shot(page, name) {
  await page.screenshot({ path: path.join(shots, name + ".png"), fullPage: false });
}

function configFile(dir, doc) {
  const f = path.join(dir, "sqlq.json");
  fs.writeFileSync(f, JSON.stringify(doc));
  return f;
}

// The Routes page's row of a queue, once it says what want() accepts.
async function routeRow(page, queue, want, what) {
  return until(async () => {
    await page.goto(page.consoleUrl + "/#routes");
    const row = page.locator(`tr[data-queue="${queue}"]`);
    await row.waitFor();
    const r = {
      pending: (await row.locator('[data-testid="pending"]').textContent()).trim(),
      held: (await row.locator('[data-testid="held"]').textContent()).trim(),
      owners: (await row.locator('[data-testid="owners"]').textContent()).trim(),
    };
    return want(r) ? r : null;
  }, 20000, what);
}

async function sqliteRoutes(ctx, dir) {
  const db = path.join(dir, "shop.db");
  const qlite = "cl-lite-" + tag, qhostile = "cl-hostile-" + tag;
  execFileSync("sqlite3", [db, "CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT); CREATE TABLE audit (id INTEGER PRIMARY KEY);"]);
  const conn = `Driver={SQLite3};Database=${db};Timeout=5000;`;
  E.run(["setup", "--db", conn, "--table", "orders"]);
  E.run(["setup", "--db", conn, "--table", "audit"]);
  for (const q of [qlite, qhostile]) E.cleanups.push(() => E.queue(q).delete().catch(() => {}),
    () => E.queue(q + "-poison").delete().catch(() => {}));
  execFileSync("sqlite3", [db, "INSERT INTO orders VALUES (1,'a'),(2,'b'),(3,'c');"]);
  const cfg = configFile(dir, { db: conn, routes: [{ table: "orders", queue: qlite }, { table: "audit", queue: qhostile }] });
  const c = await E.startConsole(["--config", cfg]);
  const page = await E.strictPage(ctx);
  page.consoleUrl = c.url;
  // 1. before any bridge ran, the route says so; then pending shown, and cleared by a bridge
  const first = await routeRow(page, qlite, (r) => /no bridge named default/.test(r.held), "a route no bridge has started says so");
  check(first.pending === "-", "no pending count without a bridge's state: " + first.pending);
  E.run(["bridge", "--db", conn, "--table", "orders", "--queue", qlite, "--once"]);
  execFileSync("sqlite3", [db, "INSERT INTO orders VALUES (4,'d'),(5,'e'),(6,'f');"]);
  await routeRow(page, qlite, (r) => r.pending === "3", "SQLite route shows 3 pending");
  await shot(page, "routes-pending");
  E.run(["bridge", "--db", conn, "--table", "orders", "--queue", qlite, "--once"]);
  check(await E.count(qlite) === 6, "the bridge delivered 6 messages to " + qlite);
  await routeRow(page, qlite, (r) => r.pending === "0" && r.held === "no", "SQLite route clears");
  return { page, c, conn, qlite, qhostile };
}

// A session that wrote the change log and stays open (its application_name names it).
function openWriter(db, sql) {
  const p = spawn("psql", ["-X", "-q", "-h", "127.0.0.1", "-p", pgPort, "-U", "sqlq", "-d", db],
    { env: Object.assign({}, process.env, { PGAPPNAME: "console_test_writer" }), stdio: ["pipe", "ignore", "inherit"] });
  p.stdin.write("BEGIN;\n" + sql + ";\n");
  E.cleanups.push(() => p.kill("SIGKILL"));
  return p;
}

async function postgresHeldBack(ctx, dir) {
  const db = "cl_pg_" + process.pid;
  const qpg = "cl-pg-" + tag;
  psql("postgres", `CREATE DATABASE ${db}`);
  E.cleanups.push(() => psql("postgres", `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`),
    () => E.queue(qpg).delete().catch(() => {}));
  psql(db, "CREATE TABLE kv (id int PRIMARY KEY, v text)");
  const conn = `${pgOdbc}Database=${db};`;
  E.run(["setup", "--db", conn, "--table", "kv"]);
  E.run(["bridge", "--db", conn, "--table", "kv", "--queue", qpg, "--once"]); // the bridge's state row
  const cfg = configFile(dir, { db: conn, routes: [{ table: "kv", queue: qpg }] });
  const c = await E.startConsole(["--config", cfg]);
  const page = await E.strictPage(ctx);
  page.consoleUrl = c.url;
  const writer = openWriter(db, "INSERT INTO kv VALUES (1, 'held by an open transaction')");
  await until(() => psql("postgres", "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'console_test_writer' AND state = 'idle in transaction'").trim() === "1", 10000, "writer open");
  psql(db, "INSERT INTO kv VALUES (2, 'committed after it')");
  const held = await routeRow(page, qpg, (r) => /open transaction/.test(r.held), "PostgreSQL route shows why it is held back");
  check(/console_test_writer/.test(held.held), "the reason names the transaction: " + held.held);
  check(held.pending === "1", "the committed change counts as pending (the open one is not committed yet): " + held.pending);
  await shot(page, "routes-held-back");
  writer.stdin.end("COMMIT;\n");
  await new Promise((r) => writer.once("exit", r));
  E.run(["bridge", "--db", conn, "--table", "kv", "--queue", qpg, "--once"]);
  check(await E.count(qpg) === 2, "both changes delivered once the transaction committed");
  await routeRow(page, qpg, (r) => r.pending === "0" && r.held === "no", "PostgreSQL route clears");
  await c.stop();
}

async function selectRows(page, ids) {
  for (const id of ids) await page.locator(`#poison-body tr[data-id="${id}"] input[type=checkbox]`).check();
}

async function outcomes(page) {
  await page.locator('[data-testid="report-summary"]').waitFor();
  return page.$$eval('[data-testid="report-outcomes"] tbody tr', (rows) => rows.map((r) => [r.dataset.id, r.dataset.outcome]));
}

async function listedIds(page) {
  await page.waitForFunction(() => document.querySelector('[data-testid="poison-count"]').textContent !== "");
  return page.$$eval("#poison-body tr", (rows) => rows.map((r) => r.dataset.id));
}

async function applyFilter(page, text, field, value) {
  await page.fill('[data-testid="filter-text"]', text);
  await page.fill('[data-testid="filter-field"]', field);
  await page.fill('[data-testid="filter-value"]', value);
  await page.evaluate(() => { document.querySelector('[data-testid="poison-count"]').textContent = ""; });
  await page.click('[data-testid="filter-apply"]');
  return listedIds(page);
}

async function poisonTriage(s) {
  const { page, qlite } = s;
  const poison = qlite + "-poison";
  // A failing consumer: exit 65 rejects each message, which goes to QUEUE-poison at once.
  const sent = [];
  for (let i = 0; i < 6; i++) {
    const body = JSON.stringify({ order: 100 + i, kind: i < 3 ? "retry" : "junk", note: "n" + i });
    sent.push(body);
    await E.putBody(qlite, body);
  }
  E.run(["consume", qlite, "--exec", "exit 65", "--poison-envelope", "--exit-when-empty", "--max-polling-interval-ms", "200"]);
  check(await E.count(qlite) === 0, "the failing consumer emptied " + qlite);
  check((await E.bodies(poison)).length === 12, "12 messages in " + poison);
  await page.goto(page.consoleUrl + "/#poison/" + qlite);
  let ids = await listedIds(page);
  check(ids.length === 12, "the page lists 12: " + ids.length);
  await shot(page, "poison-list");
  // filters: by text, by JSON field
  ids = await applyFilter(page, '"junk"', "", "");
  check(ids.length === 3, "text filter finds the 3 junk messages: " + ids.length);
  ids = await applyFilter(page, "", "kind", "retry");
  check(ids.length === 3, "field filter kind=retry finds 3: " + ids.length);
  // one message read
  await page.locator(`#poison-body tr[data-id="${ids[0]}"] [data-testid="message-link"]`).click();
  const reason = await page.textContent('[data-testid="message-reason"]');
  check(/exit|65|reject/i.test(reason), "the message view shows the consumer's reason: " + reason);
  const body = await page.textContent('[data-testid="message-body"]');
  check(/"kind": "retry"/.test(body), "the body is shown pretty-printed: " + body);
  await shot(page, "poison-message");
  // a dry run of "all that match" (kind=retry) changes nothing
  await page.check('[data-testid="dry-run"]');
  await page.click('[data-testid="requeue-matching"]');
  let out = await outcomes(page);
  check(out.length === 3 && out.every((o) => o[1] === "would_move"), "dry run: 3 would move: " + JSON.stringify(out));
  check((await E.bodies(poison)).length === 12 && await E.count(qlite) === 0, "the dry run changed nothing");
  // requeue a selection: the original bytes go back to the queue, byte for byte
  await page.uncheck('[data-testid="dry-run"]');
  ids = await applyFilter(page, "", "kind", "retry");
  await selectRows(page, ids.slice(0, 2));
  await page.click('[data-testid="requeue-selected"]');
  out = await outcomes(page);
  check(out.length === 2 && out.every((o) => o[1] === "moved"), "2 moved: " + JSON.stringify(out));
  const back = await E.bodies(qlite);
  check(back.length === 2 && back.every((b) => sent.slice(0, 3).includes(b)), "the queue holds 2 original retry bodies: " + JSON.stringify(back));
  check((await E.bodies(poison)).length === 10, "10 left in " + poison);
  await shot(page, "poison-requeued");
  // export the rest as JSON lines
  await applyFilter(page, "", "", "");
  const [download] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export-all"]')]);
  const lines = fs.readFileSync(await download.path(), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  check(lines.length === 10 && lines.every((l) => l.id && l.text && "body" in l && "dequeue_count" in l), "export: 10 lines as poison export writes them");
  // purge the rest: a wrong name is refused, the right one purges
  await page.click('[data-testid="purge-matching"]');
  await page.fill('[data-testid="confirm-input"]', "wrong-name");
  await page.click('[data-testid="confirm-go"]');
  await page.locator('[data-testid="report"] .error').waitFor();
  check((await E.bodies(poison)).length === 10, "a wrong confirmation purges nothing");
  // the refusal is a 400, which Chromium logs as a failed load: that one is expected
  check(page.problems.length === 1 && /status of 400/.test(page.problems[0]), "only the refusal's 400: " + page.problems.join("; "));
  page.problems.length = 0;
  // purge what a text filter matches: the 3 junk messages, deleted one by one
  await applyFilter(page, '"junk"', "", "");
  await page.click('[data-testid="purge-matching"]');
  await page.fill('[data-testid="confirm-input"]', poison);
  await page.click('[data-testid="confirm-go"]');
  out = await outcomes(page);
  check(out.length === 3 && out.every((o) => o[1] === "deleted"), "3 junk deleted: " + JSON.stringify(out));
  const left = await E.bodies(poison);
  check(left.length === 7 && !left.some((b) => b.includes('"junk"')), "7 left in " + poison + ", no junk");
  // and the rest: all, with no filter
  await applyFilter(page, "", "", "");
  await page.click('[data-testid="purge-matching"]');
  await page.fill('[data-testid="confirm-input"]', poison);
  await shot(page, "poison-purge-confirm");
  await page.click('[data-testid="confirm-go"]');
  await page.locator('[data-testid="report-summary"]').waitFor();
  await until(async () => (await E.count(poison)) === 0, 10000, poison + " empty after the purge");
  check((await E.bodies(qlite)).length === 2, "the requeued 2 are untouched by the purge");
  check(page.problems.length === 0, "no console error: " + page.problems.join("; "));
}

async function hostile(s) {
  const { page, qhostile } = s;
  const poison = qhostile + "-poison";
  const bodies = [
    Buffer.from("<script>window.__pwned = 1; alert(1)</script>"),
    Buffer.from('<img src=x onerror="window.__pwned = 2; alert(2)">'),
    Buffer.from("\x1b[31mred\x1b]0;title\x07\x1b[2J after escapes"),
    Buffer.from([0xff, 0xfe, 0x41, 0xc3, 0x28, 0x3c, 0x73, 0x3e]),
    Buffer.from("<b>long</b>" + "x".repeat(48 * 1024 - 11)), // 64 KiB as sent, base64
    Buffer.from(JSON.stringify({ sqlq_poison: 1, reason: "<script>alert(3)</script><img src=x onerror=alert(4)>", message: { "<i>k</i>": "</pre><script>alert(5)</script>" } })),
  ];
  for (const b of bodies) await E.putBody(poison, b);
  await page.goto("about:blank");
  await page.goto(page.consoleUrl + "/#poison/" + qhostile);
  const ids = await listedIds(page);
  check(ids.length === bodies.length, "all hostile messages listed: " + ids.length);
  for (const id of ids) {
    await page.locator(`#poison-body tr[data-id="${id}"] [data-testid="message-link"]`).click();
    await page.locator('[data-testid="message"]').waitFor();
  }
  await page.waitForTimeout(300);
  const state = await page.evaluate(() => ({
    pwned: window.__pwned,
    scripts: document.querySelectorAll("main script, main img, main b, main i").length,
    text: document.querySelector("#poison-body").textContent,
  }));
  check(state.pwned === undefined, "no script from a body ran");
  check(state.scripts === 0, "no element was made from a body");
  check(state.text.includes("<script>window.__pwned") && state.text.includes("<img src=x onerror"), "bodies shown as text");
  check(state.text.includes("\\x1b[31m"), "terminal escapes shown escaped");
  check(page.problems.length === 0, "no dialog, page or console error: " + page.problems.join("; "));
  await shot(page, "poison-hostile");
}

E.main("console_browser", async () => {
  const dir = E.tmpdir("sqlq-console-test-");
  const ctx = await E.launchBrowser();
  const s = await sqliteRoutes(ctx, dir);
  await postgresHeldBack(ctx, E.tmpdir("sqlq-console-pg-"));
  await s.page.goto(s.c.url + "/#queues");
  await s.page.locator(`tr[data-queue="${s.qlite}"] [data-testid="count"]`).first().waitFor();
  await shot(s.page, "queues");
  await poisonTriage(s);
  await hostile(s);
});
