// A liveness probe for a test Azurite (not a test): one request per second, each answered or
// not, and a report of every pause, i.e. a run of requests slower than the threshold.
//   node azurite_probe.js PORT_OR_URL [SECONDS] [THRESHOLD_MS]
//     PORT_OR_URL  a port on 127.0.0.1, a URL, or a file holding the port (testenv/azurite/port,
//                  read again each second, so it follows a fixture that restarts)
//     SECONDS      how long to probe (default 600; SIGINT/SIGTERM stop it early, with the report)
//     THRESHOLD_MS a request slower than this is part of a pause (default 2000)
// Output: one line per pause as it ends, then "probe: N requests, P pauses, longest L ms,
// slowest request S ms". Any answer counts (the probe sends no credentials: Azurite answers
// 403 at once when its event loop is free).
"use strict";
const fs = require("fs");
const http = require("http");

const target = process.argv[2];
const seconds = Number(process.argv[3] || 600);
const threshold = Number(process.argv[4] || 2000);
if (!target || !(seconds > 0) || !(threshold > 0)) {
  console.error("usage: node azurite_probe.js PORT_OR_URL [SECONDS] [THRESHOLD_MS]");
  process.exit(2);
}

function url() {
  if (/^https?:/.test(target)) return target;
  let port = target;
  if (!/^\d+$/.test(target)) {
    try { port = fs.readFileSync(target, "utf8").trim(); } catch { return null; }
  }
  return `http://127.0.0.1:${port}/devstoreaccount1?comp=list`;
}

let sent = 0, slowest = 0, longest = 0;
const pauses = [];
let open = null; // the pause under way: { start, end }

function record(startMs, ms) {
  slowest = Math.max(slowest, ms);
  if (ms < threshold) {
    if (open) {
      const len = open.end - open.start;
      longest = Math.max(longest, len);
      pauses.push(len);
      console.log(`pause: ${new Date(open.start).toISOString()} for ${len} ms`);
      open = null;
    }
    return;
  }
  const end = startMs + ms;
  if (!open) open = { start: startMs, end };
  else open.end = Math.max(open.end, end);
}

function probe() {
  const u = url();
  if (!u) return;
  sent++;
  const start = Date.now();
  const req = http.get(u, { timeout: 120000, agent: false }, (res) => {
    res.resume();
    res.on("end", () => record(start, Date.now() - start));
  });
  req.on("timeout", () => req.destroy(new Error("timeout")));
  req.on("error", () => record(start, Date.now() - start));
}

function report() {
  if (open) record(open.end, 0);
  console.log(`probe: ${sent} requests, ${pauses.length} pauses, longest ${longest} ms, ` +
              `slowest request ${slowest} ms`);
  process.exit(0);
}

const timer = setInterval(probe, 1000);
setTimeout(() => { clearInterval(timer); setTimeout(report, 2000); }, seconds * 1000);
process.on("SIGINT", report);
process.on("SIGTERM", report);
