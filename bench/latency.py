#!/usr/bin/env python3
"""Scenario 4: commit-to-visible latency and idle cost, today's polling and wake-ups side by side.

`sqlq bridge` at the default polling interval (1000 ms), once with `--no-wakeup` (today: an
idle route sleeps one interval) and once with wake-ups (PostgreSQL: the capture trigger's
NOTIFY, the bridge LISTENs; SQLite: PRAGMA data_version every 10 ms). Writers commit
single-row transactions at 1, 100 and 1,000 transactions/s (Poisson arrivals), on 1 table
with 1 bridge instance and on 4 tables with 2 instances sharing them (same bridge name). Each
row carries the time of its insert (PostgreSQL: clock_timestamp() of the server, this
machine's clock); a reader in this process polls the queue (Get Messages over a SAS URL, 32
at a time, 5 ms apart when it got fewer) and takes the time each row's message became visible. Then, with no
writes, the statements and transactions per minute the bridges cost the database
(PostgreSQL: log_statement=all on the benchmark database, pg_stat_database).

  bench/latency.py [--quick] [--write-docs] [--db postgres,sqlite]
  bench/latency.py --quick --no-idle --no-today --db postgres --rates 1000 --baseline OLD/sqlq --rounds 3
    (another build's wake-ups interleaved with this build's, with the CPU of each process)
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

TITLE = "Latency"
RATES = (1, 100, 1000)
LAYOUTS = ((1, 1), (4, 2))  # (tables, instances)
MODES = (("today", ["--no-wakeup"]), ("wake-ups", []))
TARGET_P50, TARGET_P99 = 25.0, 100.0  # issue 22, PostgreSQL
DRAIN_S = 45  # after the last commit, how long the reader waits for the rest
READER_GAP_MS = 5.0  # --reader-gap-ms
BASELINE = "baseline"  # the mode of --baseline BIN: wake-ups with another build of sqlq


class Reader(threading.Thread):
    """Polls the queue and records when each (table, id) first became visible (wall clock).

    Get Messages again at once after a full answer (32: more is waiting), else after `gap_ms`.
    In-memory Azurite scans every message of the queue per request, read ones included (they
    stay, invisible), so a reader polling 1 ms apart cost Azurite 36-41% of a core on an empty
    queue and 87% with 3,400 read messages (13 ms of Azurite per empty Get Messages): it
    measured its own load (docs/benchmarks.md, Latency, Finding L1). Deleting what was read
    keeps the scans short but costs a request per message, as much as the bridge's puts. The
    time recorded is when the answer came: an upper bound, late by up to `gap_ms` plus one
    request."""

    def __init__(self, sas_url, gap_ms=5.0):
        super().__init__(daemon=True)
        u = urllib.parse.urlsplit(sas_url)
        self.host, self.port = u.hostname, u.port
        self.path = f"{u.path}/messages?numofmessages=32&visibilitytimeout=3600&{u.query}"
        self.arrived = {}
        self.lock = threading.Lock()
        self.stop = False
        self.gap_s = gap_ms / 1000.0
        self.requests = 0

    def run(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        while not self.stop:
            conn.request("GET", self.path)
            resp = conn.getresponse()
            body = resp.read()
            now = time.time()
            self.requests += 1
            if resp.status != 200:
                raise RuntimeError(f"Get Messages: HTTP {resp.status} {body[:200]!r}")
            msgs = [json.loads(base64.b64decode(m.findtext("MessageText")))
                    for m in ET.fromstring(body).iter("QueueMessage")]
            with self.lock:
                for m in msgs:
                    self.arrived.setdefault((m["table"], int(m["key"]["id"])),
                                            (now, float(m["row"]["ts"])))
            if len(msgs) < 32:
                time.sleep(self.gap_s)

    def count(self, lo, hi):
        with self.lock:
            return sum(1 for _, i in self.arrived if lo <= i < hi)

    def take(self, lo, hi):
        """What arrived of ids lo..hi-1 (later arrivals of other ids are dropped)."""
        with self.lock:
            got, self.arrived = self.arrived, {}
        return {k: v for k, v in got.items() if lo <= k[1] < hi}


class PgWriters:
    """One psql session per table, fed INSERTs; each row stores the server's clock."""

    def __init__(self, pg, db, tables):
        self.pg, self.db, self.tables = pg, db, tables
        self.procs = [subprocess.Popen(
            ["psql", "-X", "-q", "-At", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "sqlq",
             "-d", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
            for _ in tables]

    def insert(self, k, i):
        self.procs[k].stdin.write(f"INSERT INTO {self.tables[k]} VALUES ({i}, "
                                  f"extract(epoch FROM clock_timestamp()));\n")
        self.procs[k].stdin.flush()

    def sync(self):
        for k, p in enumerate(self.procs):
            p.stdin.write(f"\\echo sync-{k}\n")
            p.stdin.flush()
        for k, p in enumerate(self.procs):
            while p.stdout.readline().strip() != f"sync-{k}":
                pass

    def close(self):
        for p in self.procs:
            p.stdin.close()
            p.wait()


class SqliteWriters:
    """One connection per table on the same file; each row stores the time of its insert."""

    def __init__(self, path, tables):
        self.tables = tables
        self.conns = [sqlite3.connect(path, timeout=10, isolation_level=None) for _ in tables]

    def insert(self, k, i):
        self.conns[k].execute(f"INSERT INTO {self.tables[k]} VALUES (?, ?)", (i, time.time()))

    def sync(self):
        pass

    def close(self):
        for c in self.conns:
            c.close()


def setup_db(dbname, pg, work, tag, tables, log_statements=False, binary=None):
    """A fresh database with the watched tables set up (by `binary`'s sqlq setup: a baseline
    build runs with its own trigger); its ODBC string and a writer factory."""
    if dbname == "postgres":
        pg.create_db(tag)
        # The benchmark server allows prepared transactions, where the trigger stays silent
        # unless told that no writer prepares (docs/capture.md).
        pg.psql("postgres", f"ALTER DATABASE {tag} SET sqlq.notify = on")
        if log_statements:
            pg.psql("postgres", f"ALTER DATABASE {tag} SET log_statement = 'all'")
        for t in tables:
            pg.psql(tag, f"CREATE TABLE {t} (id bigint PRIMARY KEY, ts double precision)")
        conn = pg.odbc(tag)
        writers = lambda: PgWriters(pg, tag, tables)  # noqa: E731
    else:
        path = work / f"{tag}.db"
        for t in tables:
            B.sh(["sqlite3", path, f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, ts REAL)"])
        conn = B.sqlite_odbc(path)
        writers = lambda: SqliteWriters(path, tables)  # noqa: E731
    B.sh([binary or B.SQLQ, "setup", "--db", conn, *sum((["--table", t] for t in tables), [])])
    return conn, writers


def start_bridges(az, conn, tables, queue, instances, flags, work, tag, binary=None):
    cfg = work / f"{tag}.json"
    cfg.write_text(json.dumps({"db": conn, "routes": [{"table": t, "queue": queue}
                                                      for t in tables]}))
    procs = []
    for n in range(instances):
        log = open(work / f"{tag}-bridge{n}.log", "wb")
        procs.append(subprocess.Popen(
            [str(binary or B.SQLQ), "bridge", "--config", str(cfg), "--log-level", "warn", *flags],
            env={**os.environ, **az.env()}, stdout=log, stderr=log))
    return procs


def stop_bridges(procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def drive(writers, reader, ntables, rate, n, first_id):
    """n single-row commits at `rate`/s (Poisson arrivals, tables in turn); wait for them all."""
    rng = random.Random(rate)
    t_next = time.monotonic()
    t0 = t_next
    for j in range(n):
        t_next += rng.expovariate(rate)
        delay = t_next - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        writers.insert(j % ntables, first_id + j)
    writers.sync()
    offered_s = time.monotonic() - t0
    deadline = time.monotonic() + DRAIN_S
    while reader.count(first_id, first_id + n) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    got = reader.take(first_id, first_id + n)
    lat = [(arr - ts) * 1000 for arr, ts in got.values()]
    if len(got) < n:  # the bridge could not keep up: the rest counts as DRAIN_S late (at least)
        B.log(f"{len(got)} of {n} changes arrived within {DRAIN_S} s of the last commit")
        lat += [DRAIN_S * 1000.0] * (n - len(got))
    return lat, n / offered_s, n - len(got)


class CpuShare:
    """CPU used during a span, in % of one core, per process group of the benchmark: Azurite,
    PostgreSQL (every server process), the bridges, the writers, this script (the reader and
    the driver), and the whole machine (of 2 cores: 200%)."""

    def __init__(self, az, pg, bridges, writers):
        self.groups = {"azurite": [az.pid], "bridges": [p.pid for p in bridges],
                       "writers": [p.pid for p in getattr(writers, "procs", [])],
                       "bench": [os.getpid()]}
        self.pg = pg
        self.load = os.getloadavg()[0]
        self.t0, self.c0 = time.monotonic(), self.sample()

    def sample(self):
        c = {k: sum(_cpu(p) for p in v) for k, v in self.groups.items()}
        c["postgres"] = B.tree_cpu_s(self.pg.postmaster_pid) if self.pg else 0.0
        c["machine"] = B.system_busy_s()
        return c

    def result(self):
        c1, dt = self.sample(), time.monotonic() - self.t0
        out = {k: round(100 * (c1[k] - self.c0[k]) / dt) for k in c1}
        out["load1"] = round(self.load, 1)
        return out


def _cpu(pid):
    try:
        return B.proc_cpu_s(pid)
    except OSError:
        return 0.0


def latency_runs(az, dbname, pg, work, mode, flags, tables_n, instances, quick, rates,
                 binary=None, rnd=0):
    tables = [f"t{k}" for k in range(tables_n)]
    tag = f"lat{dbname[:2]}{mode[:3]}{tables_n}x{instances}r{rnd}"
    conn, make_writers = setup_db(dbname, pg, work, tag, tables, binary=binary)
    queue = f"lat-{tag}"
    az.restart()  # in-memory Azurite slows down with the messages of its lifetime
    reader = Reader(az.sas_url(queue), READER_GAP_MS)
    reader.start()
    procs = start_bridges(az, conn, tables, queue, instances, flags, work, tag, binary)
    writers = make_writers()
    runs = []
    try:
        time.sleep(2)
        drive(writers, reader, tables_n, 10, 10, 1)  # warm-up: connections, first polls
        for k, rate in enumerate(rates):
            if dbname == "sqlite" and rate > 100:
                continue  # one writer at a time: the file lock, not sqlq, would be measured
            n = (20 if quick else 60) if rate == 1 else rate * ((4 if rate < 1000 else 3) if quick else 12)
            cpu = CpuShare(az, pg if dbname == "postgres" else None, procs, writers)
            requests0 = reader.requests
            lat, achieved, late = drive(writers, reader, tables_n, rate, n, (k + 1) * 10_000_000)
            r = {"db": dbname, "mode": mode, "tables": tables_n, "instances": instances,
                 "rate": rate, "achieved": achieved, "samples": len(lat), "not_arrived": late,
                 "p50_ms": B.pctl(lat, 50), "p95_ms": B.pctl(lat, 95), "p99_ms": B.pctl(lat, 99),
                 "max_ms": max(lat), "round": rnd, "cpu": cpu.result(),
                 "reader_requests": reader.requests - requests0}
            runs.append(r)
            B.log(f"{dbname} {mode} {tables_n}x{instances} {rate}/s: p50 {r['p50_ms']:.0f} "
                  f"p95 {r['p95_ms']:.0f} p99 {r['p99_ms']:.0f} ms ({len(lat)} samples); "
                  f"CPU % of a core {r['cpu']}")
    finally:
        reader.stop = True
        stop_bridges(procs)
        writers.close()
    return runs


def pg_counts(pg, db):
    """(statements logged so far for db's sessions, transactions of db)."""
    text = pg.log_file.read_text(errors="replace")
    stmts = sum(1 for line in text.splitlines()
                if " LOG:  statement: " in line or " LOG:  execute " in line)
    xacts = int(pg.psql(db, "SELECT xact_commit + xact_rollback FROM pg_stat_database "
                            "WHERE datname = current_database()").strip())
    return stmts, xacts


def idle_run(az, pg, work, mode, flags, tables_n, instances, seconds):
    """Statements and transactions per minute against an idle PostgreSQL database."""
    tables = [f"t{k}" for k in range(tables_n)]
    tag = f"idle{mode[:3]}{tables_n}x{instances}"
    conn, _ = setup_db("postgres", pg, work, tag, tables, log_statements=True)
    procs = start_bridges(az, conn, tables, f"lat-{tag}", instances, flags, work, tag)
    try:
        time.sleep(5)  # started, first polls, queue probes
        s0, x0 = pg_counts(pg, tag)
        time.sleep(seconds)
        s1, x1 = pg_counts(pg, tag)
    finally:
        stop_bridges(procs)
    # Only this database logs statements; the first count query adds one statement and one
    # transaction to the second count.
    return {"mode": mode, "tables": tables_n, "instances": instances, "seconds": seconds,
            "statements_per_min": (s1 - s0 - 1) * 60 / seconds,
            "transactions_per_min": (x1 - x0 - 1) * 60 / seconds}


def pgbench_tps(pg, work, db, table_name, seconds):
    script = work / f"ins_{table_name}.sql"
    script.write_text(f"INSERT INTO {table_name} (ts) VALUES (1);\n")
    out = B.sh(["pgbench", "-n", "-h", "127.0.0.1", "-p", pg.port, "-U", "sqlq", "-f", script,
                "-c", 1, "-T", seconds, db])
    return float(re.search(r"tps = ([\d.]+) \(without initial connection time\)", out).group(1))


def notify_overhead(pg, work, seconds, rounds):
    """Single-row inserts per second (pgbench, 1 client): no capture, capture with the trigger's
    NOTIFY off (sqlq.notify = off) and on, alternating."""
    db = "latwo"
    pg.create_db(db)
    for t in ("plain", "captured"):
        pg.psql(db, f"CREATE TABLE {t} (id bigserial PRIMARY KEY, ts double precision)")
    B.sh([B.SQLQ, "setup", "--db", pg.odbc(db), "--table", "captured"])
    rates = {"none": [], "off": [], "on": []}
    for _ in range(rounds):
        rates["none"].append(pgbench_tps(pg, work, db, "plain", seconds))
        for mode in ("off", "on"):
            pg.psql("postgres", f"ALTER DATABASE {db} SET sqlq.notify = {mode}")
            rates[mode].append(pgbench_tps(pg, work, db, "captured", seconds))
    return {k: B.median(v) for k, v in rates.items()} | {"rounds": rounds, "seconds": seconds}


def late_note(*runs):
    late = [f"{r['mode']}: {r['not_arrived']} not arrived {DRAIN_S} s after the last commit"
            for r in runs if r.get("not_arrived")]
    return f" ({'; '.join(late)}, counted as that late)" if late else ""


def table(res):
    lines = ["| database | tables × instances | tx/s offered (achieved) | today p50 / p95 / p99 ms | "
             "wake-ups p50 / p95 / p99 ms | samples |", "|---|---|---:|---:|---:|---:|"]
    by = {(r["db"], r["tables"], r["instances"], r["rate"], r["mode"]): r for r in res["runs"]}
    for (db, t, i, rate, mode), r in by.items():
        if mode != "today":
            continue
        w = by.get((db, t, i, rate, "wake-ups"))
        if not w:
            continue
        lines.append(f"| {'PostgreSQL' if db == 'postgres' else 'SQLite'} | {t} × {i} | {rate} "
                     f"({w['achieved']:.0f}) | {r['p50_ms']:.0f} / {r['p95_ms']:.0f} / "
                     f"{r['p99_ms']:.0f} | **{w['p50_ms']:.0f} / {w['p95_ms']:.0f} / "
                     f"{w['p99_ms']:.0f}** | {w['samples']}{late_note(r, w)} |")
    lines += ["", "| PostgreSQL idle, tables × instances | today: statements / transactions "
              "per minute | wake-ups: statements / transactions per minute |",
              "|---|---:|---:|"]
    idle = {(r["tables"], r["instances"], r["mode"]): r for r in res["idle"]}
    for t, i in sorted({(r["tables"], r["instances"]) for r in res["idle"]}):
        a, b = idle.get((t, i, "today")), idle.get((t, i, "wake-ups"))
        if a and b:
            lines.append(f"| {t} × {i} | {a['statements_per_min']:.0f} / "
                         f"{a['transactions_per_min']:.0f} | {b['statements_per_min']:.0f} / "
                         f"{b['transactions_per_min']:.0f} |")
    w = res.get("write")
    if w:
        lines += ["", "| PostgreSQL single-row inserts/s (pgbench, 1 client) | no capture | "
                  "capture, NOTIFY off | capture, NOTIFY on |", "|---|---:|---:|---:|",
                  f"| median of {w['rounds']} alternating rounds of {w['seconds']} s | "
                  f"{w['none']:,.0f} | {w['off']:,.0f} ({w['off'] / w['none']:.0%}) | "
                  f"{w['on']:,.0f} ({w['on'] / w['none']:.0%}) |"]
    return "\n".join(lines)


def compare_table(res, baseline):
    """--baseline: the other build's wake-ups beside this build's, round by round, with the
    CPU of each process group during the run (% of one core; the machine has 2)."""
    lines = [f"Baseline: `{baseline}`; this build: `{B.SQLQ}`", "",
             "| database | tables × instances | tx/s | round | baseline p50 / p95 / p99 ms | "
             "this build p50 / p95 / p99 ms | CPU % baseline: Azurite / PostgreSQL / bridges / "
             "writers / bench / machine | CPU % this build | load (1 min) |",
             "|---|---|---:|---:|---:|---:|---|---|---:|"]
    by = {(r["db"], r["tables"], r["instances"], r["rate"], r["round"], r["mode"]): r
          for r in res["runs"]}

    def cpu(r):
        c = r["cpu"]
        return " / ".join(str(c[k]) for k in ("azurite", "postgres", "bridges", "writers",
                                              "bench", "machine"))

    for (db, t, i, rate, rnd, mode), b in by.items():
        n = by.get((db, t, i, rate, rnd, "wake-ups"))
        if mode != BASELINE or not n:
            continue
        lines.append(f"| {'PostgreSQL' if db == 'postgres' else 'SQLite'} | {t} × {i} | {rate} | "
                     f"{rnd + 1} | {b['p50_ms']:.0f} / {b['p95_ms']:.0f} / {b['p99_ms']:.0f} | "
                     f"**{n['p50_ms']:.0f} / {n['p95_ms']:.0f} / {n['p99_ms']:.0f}** | {cpu(b)} | "
                     f"{cpu(n)} | {b['cpu']['load1']} / {n['cpu']['load1']} |")
    return "\n".join(lines)


def docs(res, cmd):
    return f"""Scenario 4. The time from a single-row transaction's commit to its message being
visible in the queue, with `sqlq bridge` at the default polling interval (1000 ms) and every
other setting at its default: today's behaviour (`--no-wakeup`: an idle route sleeps one
interval) beside wake-ups (the default: PostgreSQL's capture trigger NOTIFYs, the bridge
LISTENs on a libpq connection and polls at once, 5 ms coalescing window; SQLite: PRAGMA
data_version every 10 ms). Writers commit at 1, 100 and 1,000 transactions/s (Poisson
arrivals; PostgreSQL: one `psql` session per table; SQLite: Python's sqlite3 module, at most
100/s since SQLite has one writer), on 1 table with 1 bridge instance and on 4 tables with 2
instances sharing them (one bridge name, all routes to one queue). Each row stores the time
of its insert (PostgreSQL: the server's `clock_timestamp()`, the same machine clock); a reader
in the benchmark process polls the queue (Get Messages over a SAS URL, 32 at a time: again at
once after 32, else {READER_GAP_MS:g} ms later, so that the reader's own requests stay a small
part of Azurite's load) and takes the time of the answer that brought each message, so the
figures include the reader's resolution (up to {READER_GAP_MS:g} ms plus a request). p99 of a small
sample is its highest values. Idle cost: with no writes, the statements the bridges ran against
the benchmark database (`log_statement = all` on that database only) and its transactions
(`pg_stat_database`), per minute. Write cost of the notification: single-row inserts per
second with pgbench (1 client) into a table without capture and one with it, the trigger's
NOTIFY off and on (`sqlq.notify`), alternating rounds. **This is a shared, noisy 2-core machine (other builds and
tests ran at the same time): take the figures as an order of magnitude, compare the columns of
one run rather than runs.**

{B.facts_lines()}- Command: `{cmd}`

{table(res)}

What it means: today a change waits for the next poll, half an interval on average, a whole
one at worst, unless batches are full (high rates keep the route polling back to back). With
wake-ups the commit's notification ends the idle wait; what remains is the 5 ms coalescing
window, the poll (one transaction), the put and the reader. The LISTEN connection sends no
query while idle, so the idle cost is the polling interval's, as before. End to end, commit to
handler: add the consumer's wait, which is the queue service's polling rules (`sqlq consume`,
like the Azure Functions queue trigger, backs off up to 60 s when the queue stays empty,
`max_polling_interval_ms`), so a consumer that has been idle may see a message up to that
long after it became visible; a busy one sees it within its next poll.
"""


def main():
    global READER_GAP_MS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--db", default="postgres,sqlite")
    ap.add_argument("--rates", default=",".join(map(str, RATES)), help="e.g. 100,1000")
    ap.add_argument("--layouts", default="1x1,4x2", help="tables x instances, e.g. 4x2")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle cost and write runs")
    ap.add_argument("--baseline", metavar="BIN",
                    help="also run wake-ups with this sqlq binary (another build), interleaved "
                         "with this build's in each round, and print them side by side")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the modes (with --baseline)")
    ap.add_argument("--no-today", action="store_true", help="skip today's polling (--no-wakeup)")
    ap.add_argument("--reader-gap-ms", type=float, default=READER_GAP_MS,
                    help="the reader's pause after an answer of fewer than 32 messages")
    a = ap.parse_args()
    READER_GAP_MS = a.reader_gap_ms
    modes = [(m, f, None) for m, f in MODES if not (a.no_today and m == "today")]
    if a.baseline:
        modes.insert(len(modes) - 1, (BASELINE, [], a.baseline))
    rates = tuple(int(x) for x in a.rates.split(","))
    layouts = tuple(tuple(int(v) for v in x.split("x")) for x in a.layouts.split(","))
    if not os.access(B.SQLQ, os.X_OK):
        raise SystemExit(f"missing {B.SQLQ}: run bench/setup.sh first (or set SQLQ_BIN)")
    res = {"runs": [], "idle": []}
    with B.Workdir("latency") as w:
        az = w.add(B.Azurite(w.path / "azurite")).start()
        pg = w.add(B.Postgres(w.path / "pg")).start() if "postgres" in a.db else None
        for dbname in a.db.split(","):
            for tables_n, instances in (layouts if dbname == "postgres" else layouts[:1]):
                for rnd in range(a.rounds):
                    for mode, flags, binary in modes:
                        res["runs"] += latency_runs(az, dbname, pg, w.path, mode, flags,
                                                    tables_n, instances, a.quick, rates, binary,
                                                    rnd)
        if pg and not a.no_idle:
            for tables_n, instances in layouts:
                for mode, flags in MODES:
                    r = idle_run(az, pg, w.path, mode, flags, tables_n, instances,
                                 20 if a.quick else 60)
                    res["idle"].append(r)
                    B.log(f"idle {mode} {tables_n}x{instances}: {r['statements_per_min']:.0f} "
                          f"statements/min, {r['transactions_per_min']:.0f} transactions/min")
            res["write"] = notify_overhead(pg, w.path, 5 if a.quick else 15, 3 if a.quick else 5)
            B.log(f"write: {res['write']}")
    pg_wake = [r for r in res["runs"] if r["db"] == "postgres" and r["mode"] == "wake-ups"]
    res["targets"] = [{"target": f"PostgreSQL latency p50 <= {TARGET_P50:.0f} ms, p99 <= "
                                 f"{TARGET_P99:.0f} ms ({r['tables']} table(s), {r['instances']} "
                                 f"instance(s), {r['rate']} tx/s)",
                       "figure": f"p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms",
                       "reached": r["p50_ms"] <= TARGET_P50 and r["p99_ms"] <= TARGET_P99}
                      for r in pg_wake]
    by = {(r["db"], r["tables"], r["instances"], r["rate"], r["mode"]): r for r in res["runs"]}
    res["figures"] = [f"Latency, PostgreSQL {t}x{i} at {rate} tx/s: p50 {w['p50_ms']:.0f} ms with "
                      f"wake-ups, {o['p50_ms']:.0f} ms polling every second"
                      for (db, t, i, rate, mode), w in by.items()
                      if db == "postgres" and mode == "wake-ups" and rate == 1
                      and (o := by.get((db, t, i, rate, "today")))]
    if res.get("write"):
        wr = res["write"]
        res["figures"].append(f"NOTIFY write cost: {wr['on'] / wr['off']:.0%} of the captured "
                              f"single-row insert rate without it")
    B.save("latency", res)
    print(table(res))
    if a.baseline:
        print("\n" + compare_table(res, a.baseline))
    if a.write_docs:
        cmd = "bench/latency.py" + (" --quick" if a.quick else "") + \
            (f" --db {a.db}" if a.db != "postgres,sqlite" else "")
        B.write_docs(TITLE, docs(res, cmd))


if __name__ == "__main__":
    main()
