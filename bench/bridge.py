#!/usr/bin/env python3
"""Scenario 3: the bridge end to end. A backlog of changes in a SQLite or PostgreSQL table
(captured by `sqlq setup`'s change log) drained by `sqlq bridge --once` into a fresh in-memory
Azurite, in row mode (one message per change) and batch mode ({"changes": [...]}).

For every run: changes/s, bridge CPU and database-server CPU per 1,000 changes, the bridge's
peak RSS, and time per 10,000 changes (which must not grow with the backlog). Row mode is set
against the Put Message ceiling measured in the same run: bench/putload putting as many
messages of the bridge's own size (a message taken from the bridge's queue) into a fresh
Azurite at the bridge's 16 in flight. A separate small run counts the SQL statements (round
trips) per batch: PostgreSQL with log_statement=all, SQLite with a unixODBC trace.

  bench/bridge.py [--quick] [--write-docs] [--db sqlite,postgres,mariadb] [--runs row:10000,batch:1000000]
"""
import argparse
import base64
import json
import math
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

TITLE = "Bridge end to end"
FULL = "row:10000:3,row:10000:1:1000,row:100000,batch:10000:3,batch:100000,batch:100000:1:1000,batch:1000000"
QUICK = "row:10000:2,batch:10000,batch:100000"
TXN_ROWS = 100  # PostgreSQL backlog: written by transactions of this many rows
DONE = re.compile(r"event=bridge_done changes=(\d+) messages=(\d+) released=(\d+) "
                  r"poisoned=(\d+) lost=(\d+)")

SQLITE_TABLE = ("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, "
                "total NUMERIC, note TEXT, updated_at TEXT)")
PG_TABLE = ("CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, "
            "total numeric(12,2), note text, updated_at timestamptz)")


class Sqlite:
    name = "SQLite"

    def __init__(self, work):
        self.work = work

    def create(self, tag):
        """A fresh database file with the change log set up."""
        path = self.work / f"{tag}.db"
        path.unlink(missing_ok=True)
        B.sh(["sqlite3", path, SQLITE_TABLE])
        self.path, self.conn = path, B.sqlite_odbc(path)
        B.run([B.SQLQ, "setup", "--db", self.conn, "--table", "orders"])

    def fill(self, first, last):
        """Insert rows first..last in one statement (each row still gets its own version)."""
        return B.run(["sqlite3", self.path,
                      f"WITH RECURSIVE s(i) AS (SELECT {first} UNION ALL SELECT i + 1 FROM s "
                      f"WHERE i < {last}) INSERT INTO orders SELECT i, 'customer-' || i, "
                      f"(i % 1000) || '.50', 'note ' || hex(randomblob(24)), "
                      f"'2024-05-01T12:00:00.000Z' FROM s"]).wall

    def analyze(self, freeze=False):
        B.sh(["sqlite3", self.path, "ANALYZE"])

    def cpu_s(self):
        return 0.0  # SQLite runs inside the bridge: its CPU is the bridge's


class Postgres:
    name = "PostgreSQL"
    txn_rows = TXN_ROWS

    def __init__(self, server):
        self.pg = server

    def create(self, tag):
        """A fresh database with the change log set up."""
        self.pg.create_db(tag)
        self.pg.psql(tag, PG_TABLE)
        self.tag, self.conn = tag, self.pg.odbc(tag)
        B.run([B.SQLQ, "setup", "--db", self.conn, "--table", "orders"])

    def fill(self, first, last, analyze=True, per=None):
        """Insert rows first..last by transactions of txn_rows rows (each row change gets its
        own version), then VACUUM ANALYZE as autovacuum would have done while a real backlog
        built up (analyze=False: a burst, the statistics stay as they were)."""
        per = per or self.txn_rows
        txns = math.ceil((last - first + 1) / per)
        return B.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
                      self.pg.port, "-U", "sqlq", "-d", self.tag, "-c",
                      f"DO $$ BEGIN FOR t IN 0..{txns - 1} LOOP INSERT INTO orders SELECT i, "
                      f"'customer-' || i, (i % 1000) + 0.5, 'note ' || md5(i::text) || "
                      f"substr(md5((i + 1)::text), 1, 16), timestamptz '2024-05-01 12:00:00+00' "
                      f"FROM generate_series({first} + t * {per}, "
                      f"least({last}, {first - 1} + (t + 1) * {per})) i; COMMIT; "
                      f"END LOOP; END $$"] +
                     (["-c", "VACUUM ANALYZE orders", "-c", "VACUUM ANALYZE sqlq.log_orders"]
                      if analyze else [])).wall

    def analyze(self, freeze=False):
        """VACUUM ANALYZE of the database; freeze: and no autovacuum on sqlq's tables from now
        on, so statistics taken now stay (a burst arrives faster than autovacuum's nap)."""
        sql = ["VACUUM ANALYZE"]
        if freeze:
            sql = [f"ALTER TABLE {t} SET (autovacuum_enabled = false)" for t in self.pg.psql(
                self.tag, "SELECT oid::regclass FROM pg_class WHERE relkind = 'r' AND "
                "relnamespace = 'sqlq'::regnamespace").split()] + sql
        self.pg.psql(self.tag, *sql)

    def cpu_s(self):
        return self.pg.cpu_s()


MY_TABLE = ("CREATE TABLE orders (id bigint PRIMARY KEY, customer varchar(100) NOT NULL, "
            "total decimal(12,2), note text, updated_at timestamp(3) NULL) DEFAULT CHARSET=utf8mb4")


class Mariadb:
    name = "MariaDB"

    def __init__(self, server):
        self.my = server

    def create(self, tag):
        """A fresh database with the change log set up."""
        self.my.create_db(tag)
        self.my.sql(tag, MY_TABLE)
        self.tag, self.conn = tag, self.my.odbc(tag)
        B.run([B.SQLQ, "setup", "--db", self.conn, "--table", "orders"])

    def fill(self, first, last):
        """Insert rows first..last in one statement (one transaction: the bridge's first poll
        stamps them, 16 batches per stamp)."""
        return B.run(["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", self.my.port, "-u",
                      "sqlq", self.tag, "-e",
                      f"INSERT INTO orders SELECT seq, CONCAT('customer-', seq), "
                      f"(seq % 1000) + 0.5, CONCAT('note ', MD5(seq), SUBSTR(MD5(seq + 1), 1, 16)), "
                      f"'2024-05-01 12:00:00' FROM seq_{first}_to_{last}"]).wall

    def cpu_s(self):
        time.sleep(0.5)
        return B.tree_cpu_s(int((self.my.dir / "mysqld.pid").read_text().strip()))


def drain(az, db, fmt, n, tag, extra=(), binary=None):
    """sqlq bridge --once over the prepared backlog; checked: every change published."""
    q = f"br-{tag}"
    d0 = db.cpu_s()
    a0, s0 = az.cpu_s(), B.system_busy_s()
    r = B.run([binary or B.SQLQ, "bridge", "--once", "--db", db.conn, "--table", "orders", "--queue", q,
               "--format", fmt, "--log-level", "info", *extra], env=az.env(), timeout=3600)
    busy, az_cpu = B.system_busy_s() - s0, az.cpu_s() - a0
    dcpu = db.cpu_s() - d0
    # CPU the rest of the machine (other users of this shared host) took meanwhile, in cores.
    other = max(0.0, busy - r.cpu - az_cpu - dcpu) / r.wall
    m = DONE.search(r.err)
    if not m or int(m.group(1)) != n or int(m.group(3)) != n or int(m.group(4)) != 0:
        raise RuntimeError(f"{db.name} {fmt} {n}: bridge did not publish every change: "
                           f"{r.err[-800:]}")
    messages = int(m.group(2))
    stored = az.count(q)
    # At least once: a put that timed out but had been stored is sent again, so a row-mode
    # queue may hold a few duplicates; fewer messages than changes would be a loss.
    if fmt == "row" and stored < n:
        raise RuntimeError(f"{db.name} row {n}: the queue holds {stored} messages")
    warnings = {}
    for e in re.findall(r"level=(?:warn|error) event=(\S+)", r.err):
        warnings[e] = warnings.get(e, 0) + 1
    return {"db": db.name, "format": fmt, "n": n, "messages": messages, "seconds": r.wall,
            "changes_s": n / r.wall, "per_10k_s": r.wall * 10000 / n,
            "bridge_cpu_ms_per_1000": r.cpu * 1e6 / n, "db_cpu_ms_per_1000": dcpu * 1e6 / n,
            "rss_mib": r.maxrss_kb / 1024, "queue": q,
            "azurite_cpu_ms_per_1000": az_cpu * 1e6 / n, "other_load_cores": other,
            "duplicates": stored - n if fmt == "row" else 0, "warnings": warnings}


def default_batch(fmt):
    """max_batch_size when unset: 1000 in batch format, 100 otherwise."""
    return 1000 if fmt == "batch" else 100


def reference(az, work, body_text, n):
    """The ceiling for n messages of the bridge's size: putload at 16 in flight."""
    body = work / "bridge-msg.txt"
    body.write_text(body_text)
    xml = work / "bridge-msg.xml"
    xml.write_text(f"<QueueMessage><MessageText>{body_text}</MessageText></QueueMessage>")
    az.restart()
    az.warm_up(body)
    r = B.putload(az.sas_url("ceiling-bridge"), xml, n, 16).json()
    if r["ok"] != n:
        raise RuntimeError(f"putload: {r}")
    return {"n": n, "msg_s": r["per_second"], "message_bytes": len(body_text)}


# ---- SQL round trips ---------------------------------------------------------------------


def round_trips(db, az, fmt, count_statements):
    """Statements per batch: a run over 1,000 changes minus a run with nothing to do, divided
    by the 10 batches of 100. A first run on the empty table creates the bridge's state and
    leases, so neither counted run pays for that."""
    db.create(f"stmts{fmt}")
    drain_quiet(az, db, fmt)
    db.fill(1, 1000)
    full = count_statements(lambda env: drain_quiet(az, db, fmt, env))
    empty = count_statements(lambda env: drain_quiet(az, db, fmt, env))
    return breakdown(full, empty, 10)


def drain_quiet(az, db, fmt, env=None):
    B.run([B.SQLQ, "bridge", "--once", "--db", db.conn, "--table", "orders", "--queue",
           "stmt-count", "--format", fmt, "--log-level", "warn"], env={**az.env(), **(env or {})})


def pg_statements(pg):
    """Statements the server receives during run() (log_statement = all on the server)."""
    def count(run_bridge):
        start = pg.log_file.stat().st_size
        run_bridge({})
        with open(pg.log_file, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        return re.findall(r"LOG:  (?:statement|execute [^:]*): (.{0,60})", text)
    return count


def sqlite_statements(work):
    """SQLExecDirect calls in a unixODBC trace during run() (SQLite is in-process: each is a
    call into the engine, not a network round trip)."""
    ini = work / "odbc"
    ini.mkdir(exist_ok=True)
    trace = ini / "trace.log"
    (ini / "odbcinst.ini").write_text(f"[ODBC]\nTrace=Yes\nTraceFile={trace}\n\n" +
                                      Path("/etc/odbcinst.ini").read_text())

    def count(run_bridge):
        trace.unlink(missing_ok=True)
        run_bridge({"ODBCSYSINI": str(ini)})
        lines = trace.read_text(errors="replace").splitlines()
        sql = []
        for i, line in enumerate(lines):
            if "[SQLExecDirect" in line and i + 3 < len(lines) and "Entry" in lines[i + 1]:
                m = re.search(r"SQL = \[(.{0,60})", lines[i + 3])
                sql.append(m.group(1) if m else "?")
        return sql
    return count


def breakdown(full, empty, batches):
    """Statements per batch, and what they are (first words), from two statement lists."""
    def kind(s):
        s = re.sub(r"_EXEC_SVP_\w+|\"SQL_CUR\w+\"|sqlq_leases_\w+|leases_\w+", "…", s)
        return " ".join(s.split()[:4])[:48]
    kinds = {}
    for s in full:
        kinds[kind(s)] = kinds.get(kind(s), 0) + 1
    for s in empty:
        kinds[kind(s)] = kinds.get(kind(s), 0) - 1
    per = {k: v / batches for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]) if v > 0}
    return {"per_batch": (len(full) - len(empty)) / batches, "fixed": len(empty),
            "kinds": per}


# ---- report ---------------------------------------------------------------------------------


def table(res):
    lines = ["| database | format | batch | changes | messages | seconds | changes/s | time per "
             "10k (s) | vs 10k backlog | share of ceiling (per round) | bridge CPU ms / 1000 | "
             "database CPU ms / 1000 | Azurite CPU ms / 1000 | other load (cores) | bridge peak "
             "RSS (MiB) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["summary"]:
        base = [x for x in res["summary"] if x["db"] == r["db"] and x["format"] == r["format"]
                and x["batch"] == r["batch"] and x["n"] == 10000]
        growth = f"{r['per_10k_s'] / base[0]['per_10k_s']:.2f}x" if base else "-"
        share = "-"
        if "share_of_ceiling" in r:
            share = f"**{r['share_of_ceiling']:.0%}**"
            if len(r["shares"]) > 1:
                share += f" ({', '.join(f'{x:.0%}' for x in r['shares'])})"
        dbcpu = f"{r['db_cpu_ms_per_1000']:.0f}" if r["db"] == "PostgreSQL" else "(in bridge)"
        lines.append(
            f"| {r['db']} | {r['format']} | {r['batch']} | {r['n']:,} | {r['messages']:,} | "
            f"{r['seconds']:.2f} | **{B.n_(r['changes_s'])}** | {r['per_10k_s']:.3f} | {growth} | "
            f"{share} | {r['bridge_cpu_ms_per_1000']:.0f} | {dbcpu} | "
            f"{r['azurite_cpu_ms_per_1000']:.0f} | {r['other_load_cores']:.2f} | "
            f"{r['rss_mib']:.1f} |")
    return "\n".join(lines)


def dups_md(res):
    """Duplicates and warnings the bridge logged, per run that had any."""
    lines = []
    for r in res["summary"]:
        if r["duplicates"] or r["warnings"]:
            w = ", ".join(f"`{k}` x{v}" for k, v in r["warnings"].items()) or "none"
            lines.append(f"- {r['db']} {r['format']} {r['n']:,} (batch {r['batch']}): "
                         f"{r['duplicates']:,} duplicate messages; warnings logged: {w}.")
    return "\n".join(lines) or "No run logged a warning or left a duplicate message."


def refs_table(res):
    lines = ["| messages | round | message size (base64 bytes) | ceiling msg/s (putload, 16 in "
             "flight) |", "|---:|---:|---:|---:|"]
    for r in res["references"]:
        lines.append(f"| {r['n']:,} | {r['round'] + 1} | {r['message_bytes']:,} | "
                     f"{B.n_(r['msg_s'])} |")
    return "\n".join(lines)


def trips_table(res):
    lines = ["| database | format | statements per batch of 100 | fixed per run (start, "
             "empty poll) | per batch, by kind |", "|---|---|---:|---:|---|"]
    for t in res["round_trips"]:
        kinds = "; ".join(f"`{k}` {v:g}" for k, v in t["kinds"].items())
        lines.append(f"| {t['db']} | {t['format']} | **{t['per_batch']:g}** | {t['fixed']} | "
                     f"{kinds} |")
    return "\n".join(lines)


def targets(res):
    """One line per target, reached or not, with the figure."""
    out = []
    summ = [r for r in res["summary"] if r["batch"] == default_batch(r["format"])]
    row = [r for r in summ if "share_of_ceiling" in r]
    if row:
        worst = min(row, key=lambda r: r["share_of_ceiling"])
        out.append({"target": "Bridge row mode >= 90% of the ceiling",
                    "figure": f"{worst['share_of_ceiling']:.0%} (lowest: {worst['db']}, "
                              f"{worst['n']:,} changes)",
                    "reached": worst["share_of_ceiling"] >= 0.9})
    # Batch format at default settings, bursts into stale statistics included (issue 15).
    bursts = [dict(r, burst=r["stats"]) for r in res.get("burst_summary", [])
              if r["binary"] == "this"]
    batch = [r for r in summ if r["format"] == "batch"] + bursts
    if batch:
        worst = min(batch, key=lambda r: r["changes_s"])
        what = f"a {worst['n']:,}-change burst, {worst['burst']} statistics" \
            if "burst" in worst else f"{worst['n']:,} changes"
        out.append({"target": "Bridge batch mode >= 20,000 changes/s at defaults, bursts included",
                    "figure": f"{B.n_(worst['changes_s'])} changes/s (lowest: {worst['db']}, "
                              f"{what})",
                    "reached": worst["changes_s"] >= 20000})
    for db in sorted({r["db"] for r in bursts}):
        by = {r["stats"]: r for r in bursts if r["db"] == db}
        if "stale" in by and "fresh" in by:
            lo, hi = sorted((by["stale"]["changes_s"], by["fresh"]["changes_s"]))
            out.append({"target": f"Burst into stale statistics within 20% of fresh ({db})",
                        "figure": f"stale / fresh {by['stale']['changes_s'] / by['fresh']['changes_s']:.2f} "
                                  f"({B.n_(by['stale']['changes_s'])} vs "
                                  f"{B.n_(by['fresh']['changes_s'])} changes/s)",
                        "reached": lo >= 0.8 * hi})
    for r in [r for r in summ if r["n"] >= 1000000]:
        out.append({"target": f"Bridge peak RSS < 32 MiB on the 1M backlog ({r['db']})",
                    "figure": f"{r['rss_mib']:.1f} MiB", "reached": r["rss_mib"] < 32})
        base = [x for x in summ if x["db"] == r["db"] and x["format"] == r["format"]
                and x["n"] == 10000]
        if base:
            g = r["per_10k_s"] / base[0]["per_10k_s"]
            out.append({"target": f"Time per 10k changes at 1M within 20% of 10k ({r['db']}, "
                                  f"{r['format']})",
                        "figure": f"{g:.2f}x ({r['per_10k_s']:.3f} s vs "
                                  f"{base[0]['per_10k_s']:.3f} s)", "reached": g <= 1.2})
    return out


def targets_md(res):
    return "\n".join(f"- {t['target']}: {t['figure']}: "
                     f"**{'reached' if t['reached'] else 'not reached'}**." for t in targets(res))


def docs(res, cmd):
    return f"""Scenario 3. A backlog of N changes (N inserted rows: integer key, text, decimal, text,
timestamp; about {res['row_json_bytes']} bytes of JSON per change) captured by `sqlq setup`'s
change log, drained by `sqlq bridge --once --db … --table orders --queue … --format F` (every
other setting at its default: polls of 100 changes in row format and 1,000 in batch format, 16
puts in flight, except where the batch column says otherwise: `--max-batch-size`) into a fresh,
warmed-up in-memory Azurite. SQLite: one file per run, the rows inserted by one statement (each
row still gets its own version). PostgreSQL: a private server (fsync off), one database per
run, the rows inserted by transactions of {Postgres.txn_rows:,} rows (the change log's versions are
transaction ids), then `VACUUM ANALYZE`. Every run is checked: the bridge reports every change
released and none poisoned, and in row mode the queue holds at least one message per change
(duplicates, which at-least-once delivery allows after a put timed out, are counted below the
table).
Runs: `{res['plan']}` (`format:changes[:rounds[:max_batch_size]]`) on each database; where a
run has several rounds the figures are medians and the share of the ceiling is given per round
(the ceiling is measured in each round next to the bridge runs).

{B.facts_lines()}- Command: `{cmd}`

{table(res)}

Seconds are the whole `sqlq bridge --once` process (start, connections, setup checks, the
drain, the final advance). Bridge CPU is user+system of that process; on SQLite it includes the
database engine, which runs inside it. Database CPU is every PostgreSQL server process
(backends, including the bridge's lease-renewal connection, and background workers such as
autovacuum) over the run, read half a second after the bridge exits so that its backends have
been reaped. Time per 10k is seconds x 10,000 / N; "vs 10k backlog" compares it with the 10k
run of the same database and format. Other load is the CPU the rest of this shared machine used
during the run (all busy time in /proc/stat minus the bridge, Azurite and PostgreSQL), in cores
out of 2: a run with a high figure competed for the CPU and its time is inflated accordingly.

{dups_md(res)}

The ceiling for row mode, measured in the same run, each in a fresh warmed-up Azurite:

{refs_table(res)}

{targets_md(res)}

SQL round trips per batch (a separate run over 1,000 changes, minus a run with nothing to do;
PostgreSQL: statements received by the server with `log_statement = all`, each a network round
trip, several `;`-joined commands in one `statement` counting once; SQLite: `SQLExecDirect`
calls in a unixODBC trace, calls into the in-process engine):

{trips_table(res)}
{burst_docs(res)}"""


def parse_plan(text):
    """format:changes[:rounds[:max_batch_size]] items, comma separated."""
    plan = []
    for item in text.split(","):
        f = item.split(":")
        plan.append({"format": f[0], "n": int(f[1]), "rounds": int(f[2]) if len(f) > 2 else 1,
                     "batch": int(f[3]) if len(f) > 3 else 0})
    return plan


def sample_message(az, db, work):
    """One row message as the bridge sends it (base64 text), for the ceiling's body."""
    db.create("sample")
    db.fill(50000, 50000)
    q = drain(az, db, "row", 1, "sample")["queue"]
    return json.loads(az.sqlq("queue", "peek", "--raw", q).splitlines()[0])["text"]


def fresh_azurite(az, work):
    az.restart()
    body = work / "warm.json"
    body.write_text('{"warm":"' + "x" * 300 + '"}')
    az.warm_up(body)


def run_plan(plan, engines, az, work, res):
    text = sample_message(az, engines[0], work)
    res["row_json_bytes"] = len(base64.b64decode(text))
    for i, p in enumerate(plan):
        fmt, n = p["format"], p["n"]
        extra = ["--max-batch-size", str(p["batch"])] if p["batch"] else []
        for rd in range(p["rounds"]):
            order = (["ceiling"] if fmt == "row" else []) + engines
            order = order[rd % len(order):] + order[:rd % len(order)]
            ref = None
            for j, who in enumerate(order):
                if who == "ceiling":
                    ref = reference(az, work, text, n)
                    ref["round"] = rd
                    res["references"].append(ref)
                    B.log(f"ceiling {n:,}: {ref['msg_s']:,.0f} msg/s")
                    continue
                db, tag = who, f"b{i}{rd}{j}"
                db.create(tag)
                fill = db.fill(1, n)
                fresh_azurite(az, work)
                r = drain(az, db, fmt, n, tag, extra)
                r.update(fill_s=fill, round=rd, batch=p["batch"] or default_batch(fmt))
                res["runs"].append(r)
                B.log(f"{db.name} {fmt} {n:,} (batch {r['batch']}) round {rd + 1}: "
                      f"{r['changes_s']:,.0f} changes/s, {r['per_10k_s']:.3f} s/10k, bridge cpu "
                      f"{r['bridge_cpu_ms_per_1000']:.0f} ms/1000, db cpu "
                      f"{r['db_cpu_ms_per_1000']:.0f} ms/1000, rss {r['rss_mib']:.1f} MiB, other load "
                      f"{r['other_load_cores']:.2f} cores")
            if fmt == "row":
                for r in res["runs"]:
                    if r["format"] == "row" and r["n"] == n and r["round"] == rd and \
                            r["batch"] == (p["batch"] or default_batch(fmt)):
                        r["share_of_ceiling"] = r["changes_s"] / ref["msg_s"]
                        r["ceiling_msg_s"] = ref["msg_s"]


# ---- a burst into a log whose statistics were taken when it was empty ---------------------


def burst_runs(engines, az, work, res, n, rounds, binaries, fmt="batch"):
    """Issue 15's cliff: the bridge has run (state and leases exist), the database was analyzed
    with the change log empty (and autovacuum kept off sqlq's tables, so those statistics stay),
    then a burst of n changes (transactions of 1,000 rows) is drained at default settings.
    "fresh": the same, analyzed after the burst. Binaries, engines and both cases interleaved
    in every round (order rotated), so they share the machine's load."""
    for rd in range(rounds):
        cases = [(label, path, db, stats) for label, path in binaries for db in engines
                 if hasattr(db, "analyze") for stats in ("stale", "fresh")]
        cases = cases[rd % len(cases):] + cases[:rd % len(cases)]
        for j, (label, path, db, stats) in enumerate(cases):
            tag = f"burst{rd}{j}"
            db.create(tag)
            B.run([path, "bridge", "--once", "--db", db.conn, "--table", "orders", "--queue",
                   "burst-warm", "--format", fmt, "--log-level", "warn"], env=az.env())
            db.analyze(freeze=True)
            if isinstance(db, Postgres):
                db.fill(1, n, analyze=False, per=1000)
            else:
                db.fill(1, n)
            if stats == "fresh":
                db.analyze()
            fresh_azurite(az, work)
            r = drain(az, db, fmt, n, tag, binary=path)
            r.update(round=rd, stats=stats, binary=label, load=os.getloadavg()[0])
            res["bursts"].append(r)
            B.log(f"burst {label} {db.name} {stats} round {rd + 1}: {r['changes_s']:,.0f} "
                  f"changes/s, bridge cpu {r['bridge_cpu_ms_per_1000']:.0f} ms/1000, db cpu "
                  f"{r['db_cpu_ms_per_1000']:.0f} ms/1000, other load "
                  f"{r['other_load_cores']:.2f} cores")


def burst_summary(res):
    groups = {}
    for r in res["bursts"]:
        groups.setdefault((r["binary"], r["db"], r["stats"]), []).append(r)
    out = []
    for (label, db, stats), rs in groups.items():
        a = {"binary": label, "db": db, "stats": stats, "rounds": len(rs), "n": rs[0]["n"]}
        for key in ("seconds", "changes_s", "bridge_cpu_ms_per_1000", "db_cpu_ms_per_1000",
                    "other_load_cores"):
            a[key] = B.median([r[key] for r in rs])
        a["all_changes_s"] = [r["changes_s"] for r in rs]
        out.append(a)
    return out


def burst_table(res):
    lines = ["| sqlq | database | statistics | changes | changes/s (median) | every round | "
             "stale / fresh | bridge CPU ms / 1000 | database CPU ms / 1000 | other load "
             "(cores) |", "|---|---|---|---:|---:|---|---:|---:|---:|---:|"]
    summ = res["burst_summary"]
    for r in summ:
        fresh = [x for x in summ if x["binary"] == r["binary"] and x["db"] == r["db"]
                 and x["stats"] == "fresh"]
        ratio = f"{r['changes_s'] / fresh[0]['changes_s']:.2f}" \
            if fresh and r["stats"] == "stale" else "-"
        dbcpu = f"{r['db_cpu_ms_per_1000']:.0f}" if r["db"] == "PostgreSQL" else "(in bridge)"
        lines.append(f"| {r['binary']} | {r['db']} | {r['stats']} | {r['n']:,} | "
                     f"**{B.n_(r['changes_s'])}** | "
                     f"{', '.join(B.n_(x) for x in r['all_changes_s'])} | {ratio} | "
                     f"{r['bridge_cpu_ms_per_1000']:.0f} | {dbcpu} | "
                     f"{r['other_load_cores']:.2f} |")
    return "\n".join(lines)


def burst_docs(res):
    if not res.get("bursts"):
        return ""
    return f"""
### A burst into a change log analyzed when empty

The bridge ran once on the empty table (its state and leases exist), the database was analyzed
with the change log empty and autovacuum kept off sqlq's tables (so those statistics stay, as
when a burst arrives faster than autovacuum), then {res['burst_n']:,} changes arrived
(transactions of 1,000 rows) and `sqlq bridge --once --format batch` drained them at default
settings. "fresh": the same, with an ANALYZE after the burst. Each binary, database and case
ran once per round, interleaved (the order rotated every round); medians of
{res['burst_rounds']} rounds. "stale / fresh" is the ratio of drain rates (target: at least
0.8).

{burst_table(res)}
"""


def aggregate(runs):
    """Median over rounds per (database, format, changes, batch size)."""
    groups = {}
    for r in runs:
        groups.setdefault((r["db"], r["format"], r["n"], r["batch"]), []).append(r)
    out = []
    for (db, fmt, n, batch), rs in groups.items():
        a = {"db": db, "format": fmt, "n": n, "batch": batch, "rounds": len(rs),
             "messages": rs[0]["messages"], "duplicates": sum(r["duplicates"] for r in rs),
             "warnings": {k: sum(r["warnings"].get(k, 0) for r in rs)
                          for k in sorted({k for r in rs for k in r["warnings"]})}}
        for key in ("seconds", "changes_s", "per_10k_s", "bridge_cpu_ms_per_1000",
                    "db_cpu_ms_per_1000", "rss_mib", "share_of_ceiling", "ceiling_msg_s",
                    "azurite_cpu_ms_per_1000", "other_load_cores"):
            if key in rs[0]:
                a[key] = B.median([r[key] for r in rs])
        if "share_of_ceiling" in rs[0]:
            a["shares"] = [r["share_of_ceiling"] for r in rs]
        out.append(a)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--db", default="sqlite,postgres")
    ap.add_argument("--runs", help="format:changes[:rounds[:max_batch_size]] list (default "
                    f"{FULL}; --quick {QUICK})")
    ap.add_argument("--no-round-trips", action="store_true")
    ap.add_argument("--pg-txn-rows", type=int, default=100,
                    help="PostgreSQL backlog: rows per writing transaction (default 100; each row "
                    "change gets its own change-log version)")
    ap.add_argument("--burst", type=int, default=100000,
                    help="changes of the stale-statistics burst scenario (0: skip it)")
    ap.add_argument("--burst-rounds", type=int, default=3)
    ap.add_argument("--before", help="a second sqlq binary to run the burst scenario with, "
                    "interleaved (e.g. a build of main)")
    a = ap.parse_args()
    Postgres.txn_rows = a.pg_txn_rows
    plan = parse_plan(a.runs or (QUICK if a.quick else FULL)) if a.runs != "none" else []
    dbs = a.db.split(",")
    B.need_tools()
    res = {"plan": a.runs or (QUICK if a.quick else FULL), "runs": [], "references": [],
           "round_trips": [], "bursts": []}
    with B.Workdir("bridge") as w:
        az = w.add(B.Azurite(w.path / "azurite")).start()
        engines = []
        if "sqlite" in dbs:
            engines.append(Sqlite(w.path))
        if "postgres" in dbs:
            pg = w.add(B.Postgres(w.path / "pg")).start()
            engines.append(Postgres(pg))
        if "mariadb" in dbs:
            engines.append(Mariadb(w.add(B.MariaDB(w.path / "my")).start()))
        if a.burst:
            bins = [("this", B.SQLQ)] + ([("before", Path(a.before))] if a.before else [])
            res.update(burst_n=a.burst, burst_rounds=a.burst_rounds)
            burst_runs(engines, az, w.path, res, a.burst, a.burst_rounds, bins)
            res["burst_summary"] = burst_summary(res)
            print(burst_table(res))
        if plan:
            run_plan(plan, engines, az, w.path, res)
        if not a.no_round_trips:
            az.restart()
            for db in engines:
                if isinstance(db, Mariadb):
                    continue  # statement counts: PostgreSQL's log and SQLite's trace only
                if isinstance(db, Postgres):
                    db.pg.psql("postgres", "ALTER SYSTEM SET log_statement = 'all'",
                               "SELECT pg_reload_conf()")
                    count = pg_statements(db.pg)
                else:
                    count = sqlite_statements(w.path)
                for fmt in ("row", "batch"):
                    t = round_trips(db, az, fmt, count)
                    t.update(db=db.name, format=fmt)
                    res["round_trips"].append(t)
                    B.log(f"{db.name} {fmt}: {t['per_batch']:g} statements per batch")
    res["summary"] = aggregate(res["runs"])
    res["targets"] = targets(res)
    res["figures"] = [f"Bridge {r['db']} {r['format']} (batch {r['batch']}), {r['n']:,} changes: "
                      f"{B.n_(r['changes_s'])} changes/s, {r['per_10k_s']:.2f} s per 10k, "
                      f"{r['rss_mib']:.0f} MiB" + (f", {r['share_of_ceiling']:.0%} of the ceiling"
                                                   if "share_of_ceiling" in r else "")
                      for r in res["summary"]]
    B.save("bridge", res)
    print(table(res))
    if a.write_docs:
        cmd = "bench/bridge.py" + (" --quick" if a.quick else "") + \
            (f" --runs {a.runs}" if a.runs else "") + \
            (f" --db {a.db}" if a.db != "sqlite,postgres" else "") + \
            (f" --pg-txn-rows {a.pg_txn_rows}" if a.pg_txn_rows != 100 else "") + \
            (f" --burst {a.burst} --burst-rounds {a.burst_rounds}" if a.burst else " --burst 0") + \
            (" --before OLD" if a.before else "")
        B.write_docs(TITLE, docs(res, cmd))


if __name__ == "__main__":
    main()
