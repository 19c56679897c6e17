// Who may use the console and what it refuses (tests/integration/test_console_access.sh runs
// it), against the fixtures' Azurite, every server on 127.0.0.1:
//  1. an address that is not loopback without a token: the console refuses to start (exit 2,
//     before it binds anything);
//  2. with a token: requests without it, or with a wrong one, are refused (401); the browser
//     is sent to the login page, a wrong token is refused, the right one lets it in; the token
//     never appears in what the console serves;
//  3. a state change from another origin is refused (403): a page served from another port
//     submits a purge in the browser, and a request with the right anti-CSRF token but a
//     foreign Origin; one without the anti-CSRF token too; the SDK confirms nothing changed;
//  4. a Host header that does not name the console is refused (421, against DNS rebinding);
//  5. --read-only: the page shows no action and every action is refused (403).
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");
const { spawnSync } = require("child_process");
const E = require("../support/console_env.js");
const { check } = E;

const tag = process.pid + "-" + Math.floor(Math.random() * 1e6);
const q = "ca-" + tag, poison = q + "-poison";
const token = "console-test-token-" + tag + "-0123456789abcdef";

function refusedWithoutToken() {
  const r = spawnSync(process.env.SQLQ_BIN, ["console", "--console-listen", "0.0.0.0:0", "--table", "t", "--queue", q],
    { env: Object.assign({}, process.env, { SQLQ_QUEUE_CONNECTION: E.conn }), encoding: "utf8", timeout: 10000 });
  check(r.status === 2, "no token on 0.0.0.0: exit 2, got " + r.status + ": " + r.stderr);
  check(/not a loopback address/.test(r.stderr) && /console_token/.test(r.stderr), "the refusal says why: " + r.stderr);
}

async function req(url, options) {
  const res = await fetch(url, options);
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function session(c, headers) {
  const s = await req(c.url + "/api/session", { headers });
  check(s.status === 200, "session: " + s.status);
  return JSON.parse(s.text);
}

async function tokenRequired(ctx, c) {
  check((await req(c.url + "/api/routes")).status === 401, "no token: 401");
  check((await req(c.url + "/api/routes", { headers: { Authorization: "Bearer wrong" } })).status === 401, "wrong token: 401");
  const ok = await req(c.url + "/api/session", { headers: { Authorization: "Bearer " + token } });
  check(ok.status === 200 && !ok.text.includes(token), "the right token: 200, and the token is not in the page");
  const page = await E.strictPage(ctx);
  await page.goto(c.url + "/");
  check(page.url().endsWith("/login.html"), "the browser is sent to the login page: " + page.url());
  await page.fill('[data-testid="token"]', "not-the-token");
  await Promise.all([page.waitForURL(/login\.html#refused/), page.click('[data-testid="login"]')]);
  check(await page.isVisible("#refused"), "a wrong token is refused");
  await page.fill('[data-testid="token"]', token);
  await Promise.all([page.waitForURL(c.url + "/"), page.click('[data-testid="login"]')]);
  await page.locator(`tr[data-queue="${q}"]`).waitFor();
  const html = await page.content();
  check(!html.includes(token), "the token never reaches the page");
  const csp = (await req(c.url + "/login.html")).headers.get("content-security-policy");
  check(/script-src 'self'/.test(csp) && /frame-ancestors 'none'/.test(csp), "strict CSP: " + csp);
  check(page.problems.length === 0, "no console error: " + page.problems.join("; "));
  return page;
}

// A page on another port (another origin) that submits a purge to the console.
function hostileSite(target) {
  const html = `<!DOCTYPE html><form id=f method=post action="${target}/api/poison/purge" enctype="text/plain">
<input name='{"queue":"${q}","all":true,"confirm":"${poison}","x":"' value='"}'></form>
<script>document.getElementById("f").submit()</script>`;
  const server = http.createServer((rq, rs) => { rs.setHeader("Content-Type", "text/html"); rs.end(html); });
  E.cleanups.push(() => new Promise((r) => { server.closeAllConnections(); server.close(r); }));
  return new Promise((r) => server.listen(0, "127.0.0.1", () => r("http://127.0.0.1:" + server.address().port + "/")));
}

async function crossOrigin(ctx, c) {
  const auth = { Authorization: "Bearer " + token };
  const s = await session(c, auth);
  const body = JSON.stringify({ queue: q, all: true, confirm: poison });
  const base = Object.assign({ "Content-Type": "application/json", "X-Sqlq-Csrf": s.csrf }, auth);
  let r = await req(c.url + "/api/poison/purge", { method: "POST", body, headers: Object.assign({ Origin: "http://evil.example" }, base) });
  check(r.status === 403 && /cross-origin/.test(r.text), "a foreign Origin: 403, " + r.status + " " + r.text);
  r = await req(c.url + "/api/poison/purge", { method: "POST", body, headers: Object.assign({}, base, { Origin: c.url, "X-Sqlq-Csrf": "guess" }) });
  check(r.status === 403 && /CSRF/.test(r.text), "a wrong anti-CSRF token: 403, " + r.status + " " + r.text);
  const page = await ctx.newPage();
  const site = await hostileSite(c.url);
  const answered = page.waitForResponse((res) => res.url().endsWith("/api/poison/purge"));
  await page.goto(site);
  const res = await answered;
  check(res.status() === 403, "the browser's cross-origin purge: 403, got " + res.status());
  check((await E.count(poison)) === 3, "nothing was purged");
  // the same request from the console's own origin works: the refusals were the origin's
  r = await req(c.url + "/api/poison/purge", { method: "POST", body: JSON.stringify({ queue: q, all: true, dry_run: true }), headers: Object.assign({ Origin: c.url }, base) });
  check(r.status === 200 && JSON.parse(r.text).counts.matched === 3, "own origin, dry run: 200, " + r.text);
  const status = await new Promise((resolve, reject) => {
    const u = new URL(c.url);
    http.get({ host: u.hostname, port: u.port, path: "/api/session", headers: Object.assign({ Host: "evil.example:" + u.port }, auth) },
      (res) => { res.resume(); resolve(res.statusCode); }).on("error", reject);
  });
  check(status === 421, "a foreign Host: 421, got " + status);
  await page.close();
}

async function readOnly(ctx) {
  const c = await E.startConsole(["--table", "t", "--queue", q, "--read-only"]);
  const s = await session(c, {});
  check(s.read_only === true, "the session says read-only");
  const base = { "Content-Type": "application/json", "X-Sqlq-Csrf": s.csrf, Origin: c.url };
  for (const action of ["requeue", "purge", "export"]) {
    const r = await req(c.url + "/api/poison/" + action, { method: "POST", headers: base,
      body: JSON.stringify({ queue: q, all: true, confirm: poison }) });
    check(r.status === 403 && /read-only/.test(r.text), action + " refused: " + r.status + " " + r.text);
  }
  const page = await E.strictPage(ctx);
  await page.goto(c.url + "/#poison/" + q);
  await page.locator('#poison-body tr').first().waitFor();
  check(!(await page.isVisible('[data-testid="actions"]')), "no action shown");
  check((await page.textContent('[data-testid="mode"]')) === "read-only", "the page says read-only");
  check((await E.count(poison)) === 3 && (await E.count(q)) === 0, "nothing moved");
  await c.stop();
}

E.main("console_access", async () => {
  for (let i = 0; i < 3; i++) await E.putBody(poison, JSON.stringify({ n: i }));
  E.cleanups.push(() => E.queue(poison).delete().catch(() => {}), () => E.queue(q).delete().catch(() => {}));
  refusedWithoutToken();
  const dir = E.tmpdir("sqlq-console-access-");
  fs.writeFileSync(path.join(dir, "token"), token + "\n");
  const c = await E.startConsole(["--table", "t", "--queue", q], { SQLQ_CONSOLE_TOKEN_FILE: path.join(dir, "token") });
  const ctx = await E.launchBrowser();
  await tokenRequired(ctx, c);
  await crossOrigin(ctx, c);
  await c.stop();
  await readOnly(ctx);
});
