#!/usr/bin/env python3
"""Scenario 4: commit-to-visible latency and idle cost, today's polling and wake-ups side by side.

`sqlq bridge` at the default polling interval (1000 ms), once with `--no-wakeup` (today: an
idle route sleeps one interval) and once with wake-ups (PostgreSQL: the capture trigger's
NOTIFY, the bridge LISTENs; SQLite: PRAGMA data_version every 10 ms). Writers commit
single-row transactions at 1, 100 and 1,000 transactions/s (Poisson arrivals), on 1 table
with 1 bridge instance and on 4 tables with 2 instances sharing them (same bridge name). Each
row carries the time of its insert (PostgreSQL: clock_timestamp() of the server, this
machine's clock). Visible (--visible): by default the time of the 201 answering the bridge's
Put Message, from a passive capture of Azurite's port (tcpdump; bench/tap.py parses it after
the run), so nothing reads the queue during the writes; or a reader in this process polling
Get Messages (32 at a time, 5 ms apart when it got fewer), the earlier method, kept as a
cross-check; or both at once. After each rate the script waits until the queue holds a message
for every committed row, reads them all and clears the queue. Then, with no writes, the
statements and transactions per minute the bridges cost the database (PostgreSQL:
log_statement=all on the benchmark database, pg_stat_database).

  bench/latency.py [--quick] [--write-docs] [--db postgres,sqlite] [--visible tap|reader|both,...]
  bench/latency.py --quick --no-idle --no-today --db postgres --rates 1000 --baseline OLD/sqlq --rounds 3
    (another build's wake-ups interleaved with this build's, with the CPU of each process)
  bench/latency.py --quick --no-idle --no-today --db postgres --visible tap,both
    (the tap alone, then the tap and the reader on the same messages, per rate and layout)
  bench/latency.py ... --bridge-log-level debug   (the route's stages per batch, summarised)
  bench/latency.py --tap-cost 4   (what the tap costs: putload with and without it, alternating)
  bench/latency.py --logical --commit-flush --no-today --db postgres --queue fake   (the logical
    source beside the trigger source's wake-ups, on a server with wal_level = logical whose
    commits write their WAL out: a walsender decodes only WAL written out)
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
import tap as T  # noqa: E402

TITLE = "Latency"
RATES = (1, 100, 1000)
LAYOUTS = ((1, 1), (4, 2))  # (tables, instances)
MODES = (("today", ["--no-wakeup"]), ("wake-ups", []))
TARGET_P50, TARGET_P99 = 25.0, 100.0  # issue 22, PostgreSQL
DRAIN_S = 45  # after the last commit, how long the reader waits for the rest
READER_GAP_MS = 5.0  # --reader-gap-ms
BASELINE = "baseline"  # the mode of --baseline BIN: wake-ups with another build of sqlq
# How "visible" is taken (--visible): "tap": the 201 of each Put Message, from a passive
# capture of Azurite's port (bench/tap.py), nothing reads the queue during the writes; "reader":
# a Get Messages reader polls the queue (the earlier method: its load on single-threaded
# Azurite is part of what it measures); "both": the two at once, each giving its figure for the
# same messages (the tap's then includes the reader's load on Azurite).
VISIBLE = ("tap", "reader", "both")
BRIDGE_LOG_LEVEL = "warn"  # --bridge-log-level; debug: the route's `batch` lines, summarised


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


class FakeQueue(B.Azurite):
    """--queue fake: bench/fakequeue.c in Azurite's place, a queue service that answers in
    microseconds from one thread (stores the messages, answers Get Messages, counts and clears;
    no authentication, no visibility timeouts), so that what is left of the latency is the
    bridge's and the database's."""

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = B.free_port()
        self.out = open(self.dir / "fakequeue.log", "ab")
        self.proc = subprocess.Popen(B.beside([str(B.TOOLS / "fakequeue"), str(self.port)]),
                                     stdout=subprocess.PIPE, stderr=self.out,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening"):
            raise RuntimeError(f"fakequeue did not start: {line!r}")
        self.endpoint = f"http://127.0.0.1:{self.port}/devstoreaccount1"
        self.conn = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                     f"AccountKey={B.ACCOUNT_KEY};QueueEndpoint={self.endpoint};")
        return self

    def sas_url(self, queue):
        return f"{self.endpoint}/{queue}?sv=2019-12-12&sp=raup&sig=fake"


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


def setup_db(dbname, pg, work, tag, tables, log_statements=False, binary=None, logical=False):
    """A fresh database with the watched tables set up (by `binary`'s sqlq setup: a baseline
    build runs with its own trigger; logical: a publication and slot, no trigger); its ODBC
    string and a writer factory."""
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
    if logical:
        for t in tables:
            B.sh([binary or B.SQLQ, "setup", "--db", conn, "--table", t, "--source", "logical"])
    else:
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
            [str(binary or B.SQLQ), "bridge", "--config", str(cfg), "--log-level",
             BRIDGE_LOG_LEVEL, *flags],
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


def drive(writers, ntables, rate, n, first_id):
    """n single-row commits at `rate`/s (Poisson arrivals, tables in turn); the rate achieved
    (every commit acknowledged)."""
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
    return n / (time.monotonic() - t0)


class QueueCheck:
    """After the writes: wait until the queue holds a message for every row, read them all
    (one draining read, after the measured span) and empty the queue, so that no row is
    silently missing from a sample and each rate starts on an empty queue."""

    def __init__(self, az, queue, sas_url):
        u = urllib.parse.urlsplit(sas_url)
        self.az, self.queue = az, queue
        self.host, self.port, self.query = u.hostname, u.port, u.query
        self.meta = f"{u.path}?comp=metadata&{u.query}"
        self.get = f"{u.path}/messages?numofmessages=32&visibilitytimeout=3600&{u.query}"
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def _req(self, path):
        try:
            self.conn.request("GET", path)
            resp = self.conn.getresponse()
        except (http.client.HTTPException, OSError):  # Azurite closed an idle connection
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
            self.conn.request("GET", path)
            resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {path.split('?')[0]}: HTTP {resp.status} {body[:200]!r}")
        return resp, body

    def count(self):
        """Messages in the queue, visible or not (Get Queue Metadata: one scan in Azurite)."""
        resp, _ = self._req(self.meta)
        return int(resp.getheader("x-ms-approximate-messages-count"))

    def drain(self):
        """Every visible message (table, id) with how many times it came."""
        got = {}
        while True:
            _, body = self._req(self.get)
            msgs = [json.loads(base64.b64decode(m.findtext("MessageText")))
                    for m in ET.fromstring(body).iter("QueueMessage")]
            for m in msgs:
                k = (m["table"], int(m["key"]["id"]))
                got[k] = got.get(k, 0) + 1
            if len(msgs) < 32:
                return got

    def clear(self):
        self.az.sqlq("queue", "clear", self.queue)

    def settle(self, reader, lo, hi, expect):
        """Wait (up to DRAIN_S) until every id of lo..hi-1 has a message in the queue; then
        read the rest and clear the queue. Returns (ids found, by the reader or the draining
        read, with their count of messages; the reader's arrivals; seconds waited)."""
        t0 = time.monotonic()
        deadline = t0 + DRAIN_S
        found, arrivals = {}, {}
        while True:
            need = expect - sum(1 for k in found if lo <= k[1] < hi)
            while time.monotonic() < deadline and self.count() < need:
                time.sleep(0.1)
            # a reader takes what is visible (5 ms apart, slower as the queue fills): let it
            # see every message before the draining read takes the rest
            while reader and time.monotonic() < deadline and reader.count(lo, hi) < expect:
                time.sleep(0.05)
            got = self.drain()
            if reader:
                arrivals.update(reader.take(lo, hi))
                for k in arrivals:
                    got[k] = got.get(k, 0) + 1
            for k, c in got.items():
                found[k] = found.get(k, 0) + c
            self.clear()
            if sum(1 for k in found if lo <= k[1] < hi) >= expect or time.monotonic() >= deadline:
                return found, arrivals, time.monotonic() - t0


def _lat_figures(lat, prefix=""):
    return {f"{prefix}p50_ms": B.pctl(lat, 50), f"{prefix}p95_ms": B.pctl(lat, 95),
            f"{prefix}p99_ms": B.pctl(lat, 99), f"{prefix}max_ms": max(lat) if lat else None}


def figures_tap(puts, lo, hi, committed):
    """The tap's figures for ids lo..hi-1: visible = the first 201 of a Put Message that carried
    the row's change; the commit's time is the row's. Also two stages per message: commit to
    the put's first byte on the wire (database, wake-up, poll, envelope, waiting for a free
    request slot), and that byte to the 201's first byte (the queue service)."""
    first = {}
    for p in puts:
        m = p["msg"]
        if p["status"] != 201 or not m:
            continue
        k = (m["table"], int(m["key"]["id"]))
        if lo <= k[1] < hi and (k not in first or p["answered"] < first[k][1]):
            first[k] = (p["sent"], p["answered"], float(m["row"]["ts"]))
    lat = [(a - ts) * 1000 for s_, a, ts in first.values()]
    missing = committed - len(first)
    if missing > 0:  # in the queue but not seen by the tap: counted as DRAIN_S late
        lat += [DRAIN_S * 1000.0] * missing
    r = {"visible": "tap", "samples": len(lat), "tap_missing": max(0, missing)}
    r.update(_lat_figures(lat))
    r.update(_lat_figures([(s_ - ts) * 1000 for s_, a, ts in first.values()], "to_put_"))
    r.update(_lat_figures([(a - s_) * 1000 for s_, a, ts in first.values()], "put_"))
    mine = [p for p in puts if p["msg"] and lo <= int(p["msg"]["key"]["id"]) < hi]
    r["put_requests"] = len(mine)
    # TCP connections the puts went over (a new connection is a handshake and, in Azurite,
    # a new socket and HTTP parser)
    r["put_connections"] = len({p["conn"] for p in mine})
    # At the queue service: the most puts in flight at once, and the longest time it answered
    # none while some were waiting (a stall: a pause of its one thread, or no CPU for it)
    inflight = peak = 0
    last, stall = None, 0.0
    for t, d in sorted([(p["sent"], 1) for p in mine] + [(p["answered"], -1) for p in mine]):
        if d < 0 and last is not None:
            stall = max(stall, t - last)
        if d < 0:
            last = t
        elif inflight == 0:
            last = t
        inflight += d
        peak = max(peak, inflight)
    r["put_peak_in_flight"], r["put_longest_stall_ms"] = peak, round(stall * 1000)
    return r


def figures_reader(arrivals, committed):
    lat = [(arr - ts) * 1000 for arr, ts in arrivals.values()]
    missing = committed - len(arrivals)
    if missing > 0:
        lat += [DRAIN_S * 1000.0] * missing
    r = {"visible": "reader", "samples": len(lat), "reader_missing": max(0, missing)}
    r.update(_lat_figures(lat))
    return r


BATCH_FIELDS = ("changes", "wait_ms", "poll_ms", "put_ms", "ms")


def batch_stats(logs, offsets):
    """The `batch` debug lines the bridges logged since `offsets` (one per log file): how many,
    changes per batch, full and hinted shares, median and p95 of each stage."""
    rows = []
    for path, off in zip(logs, offsets):
        with open(path, "rb") as f:
            f.seek(off)
            for line in f.read().decode(errors="replace").splitlines():
                if " event=batch " not in line:
                    continue
                kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
                rows.append(kv)
    if not rows:
        return None
    out = {"batches": len(rows),
           "full_pct": round(100 * sum(r.get("full") == "1" for r in rows) / len(rows)),
           "hinted_pct": round(100 * sum(r.get("hinted") == "1" for r in rows) / len(rows))}
    for k in BATCH_FIELDS:
        v = [float(r[k]) for r in rows if k in r]
        out[k] = {"p50": B.pctl(v, 50), "p95": B.pctl(v, 95), "mean": round(sum(v) / len(v), 1)}
    return out


def log_sizes(logs):
    return [os.path.getsize(p) if os.path.exists(p) else 0 for p in logs]


class CpuShare:
    """CPU used during a span, in % of one core, per process group of the benchmark: Azurite,
    PostgreSQL (every server process), the bridges, the writers, this script (the reader and
    the driver), the tap (tcpdump), and the whole machine (of 2 cores: 200%)."""

    def __init__(self, az, pg, bridges, writers, tap=None):
        self.groups = {"azurite": [az.pid], "bridges": [p.pid for p in bridges],
                       "writers": [p.pid for p in getattr(writers, "procs", [])],
                       "bench": [os.getpid()], "tap": [tap.pid] if tap else []}
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


QUIET_PCT = None  # --wait-quiet: the machine's busy share (% of all cores) to wait below


def wait_quiet(limit_s=600):
    """--wait-quiet: before a run, wait (up to limit_s) until the whole machine was busy less
    than QUIET_PCT of its cores over 5 s (other engineers share it); the share seen is kept."""
    if QUIET_PCT is None:
        return None
    t_end = time.monotonic() + limit_s
    while True:
        b0, t0 = B.system_busy_s(), time.monotonic()
        time.sleep(5)
        busy = 100 * (B.system_busy_s() - b0) / (time.monotonic() - t0) / os.cpu_count()
        if busy < QUIET_PCT or time.monotonic() > t_end:
            B.log(f"machine {busy:.0f}% busy over 5 s before the run")
            return round(busy)


def latency_runs(az, dbname, pg, work, mode, flags, tables_n, instances, quick, rates,
                 binary=None, rnd=0, visible="tap"):
    """One database, bridge set and fresh Azurite; each rate in turn. visible: tap, reader or
    both (VISIBLE). One result per rate and method of taking the visible time."""
    tables = [f"t{k}" for k in range(tables_n)]
    tag = f"lat{dbname[:2]}{mode[:3]}{tables_n}x{instances}r{rnd}{visible[:2]}"
    conn, make_writers = setup_db(dbname, pg, work, tag, tables, binary=binary,
                                  logical=mode == "logical")
    queue = f"lat-{tag}"
    quiet = wait_quiet()
    az.restart()  # in-memory Azurite slows down with the messages of its lifetime
    sas = az.sas_url(queue)
    check = QueueCheck(az, queue, sas)
    tap = T.Tap(work / f"{tag}.pcap", az.port) if visible in ("tap", "both") else None
    reader = None
    if visible in ("reader", "both"):
        reader = Reader(sas, READER_GAP_MS)
        reader.start()
    procs = start_bridges(az, conn, tables, queue, instances, flags, work, tag, binary)
    logs = [work / f"{tag}-bridge{n}.log" for n in range(instances)]
    writers = make_writers()
    spans = []
    try:
        time.sleep(2)
        drive(writers, tables_n, 10, 10, 1)  # warm-up: connections, first polls
        check.settle(reader, 1, 11, 10)
        for k, rate in enumerate(rates):
            if dbname == "sqlite" and rate > 100:
                continue  # one writer at a time: the file lock, not sqlq, would be measured
            n = (20 if quick else 60) if rate == 1 else rate * ((4 if rate < 1000 else 3) if quick else 12)
            lo = (k + 1) * 10_000_000
            cpu = CpuShare(az, pg if dbname == "postgres" else None, procs, writers, tap)
            requests0, offsets = (reader.requests if reader else 0), log_sizes(logs)
            achieved = drive(writers, tables_n, rate, n, lo)
            # CPU during the writes and until every row's message is in the queue (the
            # count polls, 10/s, are part of it; the draining read is not).
            found, arrivals, waited = check.settle(reader, lo, lo + n, n)
            c = cpu.result()
            in_queue = sum(1 for k_ in found if lo <= k_[1] < lo + n)
            spans.append({"rate": rate, "n": n, "lo": lo, "achieved": achieved, "cpu": c,
                          "in_queue": in_queue, "arrivals": arrivals, "settle_s": waited,
                          "duplicates": sum(v - 1 for k_, v in found.items() if v > 1),
                          "reader_requests": (reader.requests - requests0) if reader else 0,
                          "batches": batch_stats(logs, offsets)})
            if in_queue < n:
                B.log(f"{n - in_queue} of {n} rows have no message in the queue "
                      f"{DRAIN_S} s after the last commit")
    finally:
        if reader:
            reader.stop = True
        stop_bridges(procs)
        writers.close()
        tap_stats = tap.stop() if tap else None
    puts, unanswered = T.put_messages(tap.path, az.port) if tap else ([], 0)
    runs = []
    for sp in spans:
        base = {"db": dbname, "mode": mode, "tables": tables_n, "instances": instances,
                "rate": sp["rate"], "achieved": sp["achieved"], "committed": sp["n"],
                "in_queue": sp["in_queue"], "not_arrived": sp["n"] - sp["in_queue"],
                "duplicates": sp["duplicates"], "round": rnd, "cpu": sp["cpu"],
                "variant": visible, "reader_requests": sp["reader_requests"],
                "busy_before_pct": quiet,
                "batches": sp["batches"]}
        figs = []
        if tap:
            figs.append(figures_tap(puts, sp["lo"], sp["lo"] + sp["n"], sp["in_queue"])
                        | {"tap_dropped": tap_stats.get("dropped"), "tap_unanswered": unanswered})
        if reader:
            figs.append(figures_reader(sp["arrivals"], sp["in_queue"]))
        for f in figs:
            r = base | f
            runs.append(r)
            extra = (f"; commit to put {r['to_put_p50_ms']:.0f} / {r['to_put_p99_ms']:.0f}, "
                     f"put to 201 {r['put_p50_ms']:.0f} / {r['put_p99_ms']:.0f} ms (p50 / p99)"
                     if f["visible"] == "tap" else "")
            B.log(f"{dbname} {mode} {tables_n}x{instances} {r['rate']}/s visible by {f['visible']}"
                  f" ({visible}): p50 {r['p50_ms']:.0f} p95 {r['p95_ms']:.0f} p99 "
                  f"{r['p99_ms']:.0f} ms ({r['samples']} samples){extra}; CPU % of a core "
                  f"{r['cpu']}")
        if sp["batches"]:
            b = sp["batches"]
            B.log("  batches: " + f"{b['batches']}, full {b['full_pct']}%, hinted {b['hinted_pct']}%, "
                  + ", ".join(f"{k} p50 {b[k]['p50']:g} p95 {b[k]['p95']:g}" for k in BATCH_FIELDS))
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


def late_note(*runs):
    late = [f"{r['mode']}: {r['not_arrived']} not arrived {DRAIN_S} s after the last commit"
            for r in runs if r.get("not_arrived")]
    return f" ({'; '.join(late)}, counted as that late)" if late else ""


def primary(res):
    """The runs the main tables show: the first --visible variant, by its own method (both:
    the tap's figure)."""
    v = res["visible"][0]
    method = "reader" if v == "reader" else "tap"
    return [r for r in res["runs"] if r["variant"] == v and r["visible"] == method]


def method_note(res):
    v = res["visible"][0]
    service = ("queue service: bench/fakequeue.c (not Azurite)" if res.get("queue") == "fake"
               else "queue service: in-memory Azurite")
    return service + "; " + {"tap": "visible = the Put Message's 201 in a passive capture (nothing reads the "
                   "queue during the writes)",
            "reader": f"visible = a reader's Get Messages (32 at a time, {READER_GAP_MS:g} ms "
                      "apart when it got fewer)",
            "both": "visible = the Put Message's 201 in a passive capture, with a Get Messages "
                    "reader running at the same time"}[v]


def table(res):
    lines = [f"Figures: {method_note(res)}.", "",
             "| database | tables × instances | tx/s offered (achieved) | today p50 / p95 / p99 ms | "
             "wake-ups p50 / p95 / p99 ms | samples | CPU % wake-ups: Azurite / bridges / machine "
             "(load) |", "|---|---|---:|---:|---:|---:|---|"]
    by = {(r["db"], r["tables"], r["instances"], r["rate"], r["mode"]): r for r in primary(res)}
    for (db, t, i, rate, mode), r in by.items():
        if mode != "today":
            continue
        w = by.get((db, t, i, rate, "wake-ups"))
        if not w:
            continue
        c = w["cpu"]
        lines.append(f"| {'PostgreSQL' if db == 'postgres' else 'SQLite'} | {t} × {i} | {rate} "
                     f"({w['achieved']:.0f}) | {r['p50_ms']:.0f} / {r['p95_ms']:.0f} / "
                     f"{r['p99_ms']:.0f} | **{w['p50_ms']:.0f} / {w['p95_ms']:.0f} / "
                     f"{w['p99_ms']:.0f}** | {w['samples']}{late_note(r, w)} | {c['azurite']} / "
                     f"{c['bridges']} / {c['machine']} ({c['load1']}) |")
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
    return "\n".join(lines)


def _f(x):
    return "-" if x is None else f"{x:.0f}"


def visibility_table(res):
    """Every run, each method of taking the visible time on its own line: the tap alone, the
    reader alone, or both at once (the same messages, the reader's load included), with the
    tap's two stages and the CPU of each process group."""
    lines = ["| database | tables × instances | tx/s (achieved) | round | mode | run | visible by | "
             "p50 / p95 / p99 ms | commit → put sent p50 / p99 | put → 201 p50 / p99 | samples "
             "(committed, in queue) | puts: connections / peak in flight / longest stall ms | CPU %: Azurite / tap / PostgreSQL / bridges / "
             "bench / machine | load (1 min) |",
             "|---|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for r in res["runs"]:
        c = r["cpu"]
        tap = r["visible"] == "tap"
        lines.append(
            f"| {'PostgreSQL' if r['db'] == 'postgres' else 'SQLite'} | {r['tables']} × "
            f"{r['instances']} | {r['rate']} ({r['achieved']:.0f}) | {r['round'] + 1} | "
            f"{r['mode']} | {r['variant']} | {r['visible']} | **{_f(r['p50_ms'])} / "
            f"{_f(r['p95_ms'])} / {_f(r['p99_ms'])}** | "
            + (f"{_f(r['to_put_p50_ms'])} / {_f(r['to_put_p99_ms'])} | {_f(r['put_p50_ms'])} / "
               f"{_f(r['put_p99_ms'])}" if tap else "- | -")
            + f" | {r['samples']} ({r['committed']}, {r['in_queue']}) | "
            + (f"{r['put_connections']} / {r['put_peak_in_flight']} / {r['put_longest_stall_ms']}"
               if tap else "-")
            + f" | {c['azurite']} / "
            f"{c.get('tap', 0)} / {c['postgres']} / {c['bridges']} / {c['bench']} / "
            f"{c['machine']} | {c['load1']}"
            + (f" ({r['busy_before_pct']}% busy before)" if r.get("busy_before_pct") is not None
               else "") + " |")
    return "\n".join(lines)


def batch_table(res):
    """--bridge-log-level debug: the route's stages per batch (all routes of the run)."""
    lines = ["| tables × instances | tx/s | round | mode | run | batches | changes per batch "
             "(mean) | full / hinted % | wait ms p50 / p95 | poll ms p50 / p95 | put ms p50 / p95 "
             "| batch ms p50 / p95 |", "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    seen = set()
    for r in res["runs"]:
        b = r.get("batches")
        key = (r["db"], r["tables"], r["instances"], r["rate"], r["round"], r["mode"],
               r["variant"])
        if not b or key in seen:
            continue
        seen.add(key)
        lines.append(f"| {r['tables']} × {r['instances']} | {r['rate']} | {r['round'] + 1} | "
                     f"{r['mode']} | {r['variant']} | {b['batches']} | {b['changes']['mean']} | "
                     f"{b['full_pct']} / {b['hinted_pct']} | "
                     + " | ".join(f"{b[k]['p50']:g} / {b[k]['p95']:g}"
                                  for k in ("wait_ms", "poll_ms", "put_ms", "ms")) + " |")
    return "\n".join(lines) if seen else ""


def compare_table(res, baseline):
    """--baseline: the other build's wake-ups beside this build's, round by round, with the
    CPU of each process group during the run (% of one core; the machine has 2)."""
    lines = [f"Baseline: `{baseline}`; this build: `{B.SQLQ}`; {method_note(res)}", "",
             "| database | tables × instances | tx/s | round | baseline p50 / p95 / p99 ms | "
             "this build p50 / p95 / p99 ms | CPU % baseline: Azurite / PostgreSQL / bridges / "
             "writers / bench / machine | CPU % this build | load (1 min) |",
             "|---|---|---:|---:|---:|---:|---|---|---:|"]
    by = {(r["db"], r["tables"], r["instances"], r["rate"], r["round"], r["mode"]): r
          for r in primary(res)}

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


def tap_cost(work, rounds, n=3000, k=16):
    """What the tap costs and adds: bench/putload's N puts, K in flight, into a fresh in-memory
    Azurite, without and with tcpdump on the port, alternating: puts/s, the client's p50/p99,
    Azurite's CPU per 1,000 puts, tcpdump's CPU."""
    B.need_tools()
    body = B.put_body_xml(B.change_body(work), work / "body.xml")
    out = []
    for rnd in range(rounds):
        for with_tap in (False, True):
            az = B.Azurite(work / "azurite-tapcost").start()
            try:
                url = az.sas_url("tapcost")
                B.putload(url, body, 500, k)  # JIT warm-up
                tap = T.Tap(work / f"tapcost{rnd}.pcap", az.port) if with_tap else None
                load = os.getloadavg()[0]
                a0, t0 = az.cpu_s(), _cpu(tap.pid) if tap else 0.0
                r = B.putload(url, body, n, k).json()
                a1, t1 = az.cpu_s(), _cpu(tap.pid) if tap else 0.0
                seen = None
                if tap:
                    tap.stop()
                    puts, _ = T.put_messages(tap.path, az.port)
                    seen = sum(1 for p in puts if p["status"] == 201)
                    tap.path.unlink()
                out.append({"round": rnd, "tap": with_tap, "per_second": r["per_second"],
                            "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
                            "azurite_ms_per_1000": round((a1 - a0) * 1e6 / n),
                            "tap_ms_per_1000": round((t1 - t0) * 1e6 / n), "captured_puts": seen,
                            "load1": round(load, 1)})
                B.log(f"tap cost: {out[-1]}")
            finally:
                az.stop()
    return out


def tap_cost_table(rows):
    lines = ["| round | tap | puts/s | client p50 / p99 ms | Azurite CPU ms per 1,000 puts | "
             "tcpdump CPU ms per 1,000 puts | puts in the capture | load (1 min) |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['round'] + 1} | {'on' if r['tap'] else 'off'} | "
                     f"{r['per_second']:,.0f} | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} | "
                     f"{r['azurite_ms_per_1000']} | {r['tap_ms_per_1000'] if r['tap'] else '-'} | "
                     f"{r['captured_puts'] if r['tap'] else '-'} | {r['load1']} |")
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
of its insert (PostgreSQL: the server's `clock_timestamp()`, the same machine clock).

Visible: by default (`--visible tap`) the time of the 201 that answered the bridge's Put
Message for the row's change (a message put with visibility timeout 0 is visible to the next
Get Messages once the Put succeeded; Azurite stores it before it answers), taken from a
passive capture of Azurite's port on the loopback interface (`tcpdump`, parsed after the run
by `bench/tap.py`: TCP reassembled per connection, each request paired with its answer, the
message text decoded to its table, key and commit time). Nothing reads the queue during the
writes: the earlier reader's Get Messages cost single-threaded in-memory Azurite more than the
bridge's puts at 1,000/s (each one scans every message of the queue), so it measured its own
load. Cross-check: `--visible reader` (a reader polls Get Messages, 32 at a time, again at once
after 32, else {READER_GAP_MS:g} ms later, and takes the time of the answer that brought each
message: up to {READER_GAP_MS:g} ms plus a request late) or `--visible both` (the two at once, on
the same messages). After each rate's writes the script waits until the queue holds a message
for every committed row (Get Queue Metadata, 10 a second), reads them all (one draining read,
after the measured span) and clears the queue; a row whose message is not there
{DRAIN_S} s after the last commit is counted that late. p99 of a small sample is its highest
values. Idle cost: with no writes, the statements the bridges ran against
the benchmark database (`log_statement = all` on that database only) and its transactions
(`pg_stat_database`), per minute. What wake-ups cost writers (a notification only while a
bridge waits) is measured by `bench/wakeup_writes.py` (Findings 11) and, with no bridge, by the
Write overhead scenario. **This is a shared 2-core machine
(other engineers build and test on it): the load average is given with the figures; compare
the columns of one run rather than runs.**

{B.facts_lines()}- Command: `{cmd}`

{table(res)}

What it means: today a change waits for the next poll, half an interval on average, a whole
one at worst, unless batches are full (high rates keep the route polling back to back). With
wake-ups the commit's notification ends the idle wait; what remains is the 5 ms coalescing
window, the poll (one transaction) and the put. The LISTEN connection sends no
query while idle, so the idle cost is the polling interval's, as before. End to end, commit to
handler: add the consumer's wait, which is the queue service's polling rules (`sqlq consume`,
like the Azure Functions queue trigger, backs off up to 60 s when the queue stays empty,
`max_polling_interval_ms`), so a consumer that has been idle may see a message up to that
long after it became visible; a busy one sees it within its next poll.
"""


def main():
    global READER_GAP_MS, BRIDGE_LOG_LEVEL, QUIET_PCT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--db", default="postgres,sqlite")
    ap.add_argument("--rates", default=",".join(map(str, RATES)), help="e.g. 100,1000")
    ap.add_argument("--layouts", default="1x1,4x2", help="tables x instances, e.g. 4x2")
    ap.add_argument("--no-idle", action="store_true", help="skip the idle cost runs")
    ap.add_argument("--baseline", metavar="BIN",
                    help="also run wake-ups with this sqlq binary (another build), interleaved "
                         "with this build's in each round, and print them side by side")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the modes (with --baseline)")
    ap.add_argument("--no-today", action="store_true", help="skip today's polling (--no-wakeup)")
    ap.add_argument("--reader-gap-ms", type=float, default=READER_GAP_MS,
                    help="the reader's pause after an answer of fewer than 32 messages")
    ap.add_argument("--visible", default="tap",
                    help="how the visible time is taken, one run per item in each round: tap "
                         "(the Put's 201 in a passive capture), reader (Get Messages), both "
                         "(the two at once); e.g. tap,both")
    ap.add_argument("--bridge-log-level", default=BRIDGE_LOG_LEVEL,
                    help="the bridges' --log-level; debug: their per-batch stages, summarised")
    ap.add_argument("--bridge-flags", default="",
                    help="extra flags for every bridge (e.g. '--max-in-flight 32')")
    ap.add_argument("--queue", choices=("azurite", "fake"), default="azurite",
                    help="the queue service: in-memory Azurite, or bench/fakequeue.c (answers in "
                         "microseconds: what is left is the bridge's and the database's)")
    ap.add_argument("--wait-quiet", type=float, metavar="PCT",
                    help="before each run wait (up to 10 min) until the machine was less than PCT%% "
                         "busy over 5 s (of all cores)")
    ap.add_argument("--logical", action="store_true",
                    help="also the logical source (--source logical; PostgreSQL, the server "
                         "started with wal_level = logical)")
    ap.add_argument("--commit-flush", action="store_true",
                    help="PostgreSQL with synchronous_commit = on (fsync still off): each commit "
                         "writes its WAL before it returns, so the logical source's walsender "
                         "sees it at once; without it the WAL writer flushes every "
                         "wal_writer_delay (200 ms) and the logical source waits for that")
    ap.add_argument("--tap-cost", type=int, metavar="ROUNDS", default=0,
                    help="only measure what the tap costs: putload with and without it")
    a = ap.parse_args()
    READER_GAP_MS = a.reader_gap_ms
    BRIDGE_LOG_LEVEL = a.bridge_log_level
    QUIET_PCT = a.wait_quiet
    visible = tuple(a.visible.split(","))
    if any(v not in VISIBLE for v in visible):
        raise SystemExit(f"--visible: one or more of {', '.join(VISIBLE)}")
    if a.tap_cost:
        with B.Workdir("tapcost") as w:
            rows = tap_cost(w.path, a.tap_cost)
        B.save("latency_tap_cost", {"runs": rows})
        print(tap_cost_table(rows))
        return
    extra = a.bridge_flags.split()
    modes = [(m, f + extra, None) for m, f in MODES if not (a.no_today and m == "today")]
    if a.baseline:
        modes.insert(len(modes) - 1, (BASELINE, extra, a.baseline))
    if a.logical:
        modes.append(("logical", ["--source", "logical"] + extra, None))
    rates = tuple(int(x) for x in a.rates.split(","))
    layouts = tuple(tuple(int(v) for v in x.split("x")) for x in a.layouts.split(","))
    if not os.access(B.SQLQ, os.X_OK):
        raise SystemExit(f"missing {B.SQLQ}: run bench/setup.sh first (or set SQLQ_BIN)")
    res = {"runs": [], "idle": [], "visible": visible, "queue": a.queue}
    with B.Workdir("latency") as w:
        az = w.add((FakeQueue if a.queue == "fake" else B.Azurite)(w.path / "azurite")).start()
        pg = w.add(B.Postgres(w.path / "pg", wal_level="logical" if a.logical else "replica",
                              sync_commit=a.commit_flush)).start() if "postgres" in a.db else None
        for dbname in a.db.split(","):
            for tables_n, instances in (layouts if dbname == "postgres" else layouts[:1]):
                for rnd in range(a.rounds):
                    for mode, flags, binary in modes:
                        if mode == "logical" and dbname != "postgres":
                            continue
                        for vis in visible:
                            res["runs"] += latency_runs(az, dbname, pg, w.path, mode, flags,
                                                        tables_n, instances, a.quick, rates,
                                                        binary, rnd, vis)
        if pg and not a.no_idle:
            for tables_n, instances in layouts:
                for mode, flags in MODES:
                    r = idle_run(az, pg, w.path, mode, flags, tables_n, instances,
                                 20 if a.quick else 60)
                    res["idle"].append(r)
                    B.log(f"idle {mode} {tables_n}x{instances}: {r['statements_per_min']:.0f} "
                          f"statements/min, {r['transactions_per_min']:.0f} transactions/min")
    pg_wake = [r for r in primary(res) if r["db"] == "postgres" and r["mode"] == "wake-ups"]
    res["targets"] = [{"target": f"PostgreSQL latency p50 <= {TARGET_P50:.0f} ms, p99 <= "
                                 f"{TARGET_P99:.0f} ms ({r['tables']} table(s), {r['instances']} "
                                 f"instance(s), {r['rate']} tx/s)",
                       "figure": f"p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms "
                                 f"(visible by {r['visible']})",
                       "reached": r["p50_ms"] <= TARGET_P50 and r["p99_ms"] <= TARGET_P99}
                      for r in pg_wake]
    by = {(r["db"], r["tables"], r["instances"], r["rate"], r["mode"]): r for r in primary(res)}
    res["figures"] = [f"Latency, PostgreSQL {t}x{i} at {rate} tx/s: p50 {w['p50_ms']:.0f} ms with "
                      f"wake-ups, {o['p50_ms']:.0f} ms polling every second"
                      for (db, t, i, rate, mode), w in by.items()
                      if db == "postgres" and mode == "wake-ups" and rate == 1
                      and (o := by.get((db, t, i, rate, "today")))]
    B.save("latency", res)
    print(table(res))
    print("\n" + visibility_table(res))
    if batch_table(res):
        print("\n" + batch_table(res))
    if a.baseline:
        print("\n" + compare_table(res, a.baseline))
    if a.write_docs:
        cmd = "bench/latency.py" + (" --quick" if a.quick else "") + \
            (f" --db {a.db}" if a.db != "postgres,sqlite" else "") + \
            (f" --visible {a.visible}" if a.visible != "tap" else "") + \
            (" --logical" if a.logical else "") + (" --commit-flush" if a.commit_flush else "")
        B.write_docs(TITLE, docs(res, cmd))


if __name__ == "__main__":
    main()
