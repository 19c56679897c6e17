#!/usr/bin/env python3
"""Scenario 13: the PostgreSQL logical source (--source logical) against no capture and the
trigger source, in one run.

Writers: inserts per second by pgbench (one INSERT per transaction, 1 and 8 clients) into a
table of a server with no capture at all (wal_level = replica, PostgreSQL's default), into the
same table set up for the logical source on a server with wal_level = logical while its route
streams (a bridge publishing every change to bench/fakequeue.c), and into a table with the
trigger source's change log (on the replica server, no bridge), and into a table of a server with
wal_level = logical and no slot (what the setting alone costs), taken in turn each round; fsync
off and durable. Throughput: a backlog of changes (1,000-row transactions) published by one
bridge with --once, from the logical source and from the trigger source's change log, in the
batch format and in the row format, to fakequeue (not the bottleneck); changes per second, the
bridge's CPU per change and its peak RSS (bench/measure.c).

  bench/logical.py [--quick] [--write-docs] [--seconds S] [--rounds R] [--backlog N]
                   [--no-writers] [--no-throughput] [--split-cpus] [--walsender-beside]

--split-cpus puts the database server (its walsender included) and pgbench on CPU 0 and the
bridge and the queue service on the other CPUs, for every configuration alike: what capture
costs the database's machine when the bridge runs on its own, as a container does in
production. --walsender-beside also moves the route's walsender to those CPUs: a server with a
core to spare for decoding, which a 2-CPU machine cannot otherwise show.
"""
import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402
import latency as L  # noqa: E402  (FakeQueue)
import write_overhead as W  # noqa: E402  (pgbench)

TITLE = "The logical source (PostgreSQL without triggers)"
COLUMNS = W.PG_COLUMNS
WRITER_TARGET = 0.95  # issue 32: the logical route running keeps >= 95% of no capture
THROUGHPUT_TARGET = 50000  # batch format, changes/s (a peer's published figure)


def bridge(q, conn, table, queue, *flags):
    """A bridge process publishing one table to fakequeue."""
    return subprocess.Popen(B.beside([str(B.SQLQ), "bridge", "--db", conn, "--table", table,
                                      "--queue", queue, "--log-level", "warn", *flags]),
                            env={**os.environ, **q.env()}, stdout=subprocess.DEVNULL,
                            stderr=open(q.dir / f"bridge-{table}.log", "ab"))


WALSENDER_BESIDE = False  # --walsender-beside


def walsender_beside(pg):
    """The route's walsender moved to the side CPUs: a server with a core to spare for it."""
    pids = [int(p) for p in pg.psql("postgres", "SELECT pid FROM pg_stat_replication").split()]
    if not pids:
        raise RuntimeError("no walsender to move: the route did not connect")
    for pid in pids:
        os.sched_setaffinity(pid, {int(c) for c in B.SIDE_CPUS.split(",")})
    B.log(f"walsender {pids} on CPU {B.SIDE_CPUS}")


def writers_case(w, q, res, secs, rounds, durable):
    commits = "durable" if durable else "fsync off"
    tag = "d" if durable else "f"
    rep = w.add(B.Postgres(w.path / f"pg-rep-{tag}", durable, "replica")).start()
    lg = w.add(B.Postgres(w.path / f"pg-log-{tag}", durable, "logical")).start()
    # wal_level = logical and no slot: what the server setting alone costs (larger WAL records),
    # which no client of a slot can avoid, apart from what decoding and the route add
    lvl = w.add(B.Postgres(w.path / f"pg-lvl-{tag}", durable, "logical")).start()
    for pg in (rep, lg, lvl):
        pg.create_db("wo")
        pg.psql("postgres", "ALTER DATABASE wo SET sqlq.notify = on")
    rep.psql("wo", f"CREATE TABLE plain {COLUMNS}", f"CREATE TABLE trig {COLUMNS}")
    B.run([B.SQLQ, "setup", "--db", rep.odbc("wo"), "--table", "trig"])
    lg.psql("wo", f"CREATE TABLE lg {COLUMNS}")
    lvl.psql("wo", f"CREATE TABLE plain {COLUMNS}")
    B.run([B.SQLQ, "setup", "--db", lg.odbc("wo"), "--table", "lg", "--source", "logical"])
    route = bridge(q, lg.odbc("wo"), "lg", "bench-writers", "--source", "logical")
    time.sleep(2)
    if WALSENDER_BESIDE:
        walsender_beside(lg)
    try:
        for clients in (1, 8):
            rows = []
            for rd in range(rounds):
                order = [("plain", rep), ("logical", lg), ("trigger", rep), ("level", lvl)]
                order = order[rd % 4:] + order[:rd % 4]  # rotate who goes first
                rate = {}
                for name, pg in order:
                    table = {"plain": "plain", "logical": "lg", "trigger": "trig",
                             "level": "plain"}[name]
                    rate[name] = W.pgbench(pg, w.path, table, clients, secs)
                rows.append(rate)
                B.log(f"writers ({commits}) {clients} clients round {rd + 1}: no capture "
                      f"{rate['plain']:.0f}, logical {rate['logical']:.0f}, trigger "
                      f"{rate['trigger']:.0f}, wal_level logical without a slot "
                      f"{rate['level']:.0f} inserts/s")
            res["writers"].append({
                "commits": commits, "clients": clients,
                "plain": B.median([r["plain"] for r in rows]),
                "logical": B.median([r["logical"] for r in rows]),
                "trigger": B.median([r["trigger"] for r in rows]),
                "level": B.median([r["level"] for r in rows]),
                "level_ratio": B.median([r["level"] / r["plain"] for r in rows]),
                "level_ratios": [r["level"] / r["plain"] for r in rows],
                "logical_ratio": B.median([r["logical"] / r["plain"] for r in rows]),
                "trigger_ratio": B.median([r["trigger"] / r["plain"] for r in rows]),
                "logical_ratios": [r["logical"] / r["plain"] for r in rows],
                "trigger_ratios": [r["trigger"] / r["plain"] for r in rows]})
    finally:
        route.terminate()
        route.wait(30)
        for pg in (rep, lg, lvl):
            pg.stop()


def measured_once(q, conn, table, queue, flags):
    """bridge --once under bench/measure (CPU seconds and peak RSS); wall seconds too."""
    out = q.dir / f"measure-{queue}.txt"
    t0 = time.monotonic()
    subprocess.run(B.beside([str(B.TOOLS / "measure"), str(out), str(B.SQLQ), "bridge", "--db",
                             conn, "--table", table, "--queue", queue, "--once", "--log-level",
                             "info", *flags]),
                   env={**os.environ, **q.env()}, stdout=subprocess.DEVNULL,
                   stderr=open(q.dir / f"once-{queue}.log", "wb"), check=True, timeout=3600)
    wall = time.monotonic() - t0
    user_us, sys_us, rss_kb = (int(x) for x in out.read_text().split())
    m = {"user_s": user_us / 1e6, "sys_s": sys_us / 1e6, "max_rss_kb": rss_kb}
    log = (q.dir / f"once-{queue}.log").read_text()
    done = re.search(r"event=bridge_done changes=(\d+)", log)
    return wall, m, int(done.group(1)) if done else 0


def throughput_case(w, q, res, backlog, fmt):
    pg = w.add(B.Postgres(w.path / f"pg-tp-{fmt}", False, "logical")).start()
    pg.create_db("tp")
    pg.psql("tp", f"CREATE TABLE lg {COLUMNS}", f"CREATE TABLE trig {COLUMNS}")
    B.run([B.SQLQ, "setup", "--db", pg.odbc("tp"), "--table", "trig"])
    B.run([B.SQLQ, "setup", "--db", pg.odbc("tp"), "--table", "lg", "--source", "logical"])
    for t in ("lg", "trig"):
        for start in range(0, backlog, 1000):  # 1,000-row transactions
            pg.psql("tp", f"INSERT INTO {t} (customer, total, note) SELECT 'c' || g, 19.90, "
                          f"'{W.NOTE}' FROM generate_series(1, {min(1000, backlog - start)}) g")
    for name, table, flags in (("logical", "lg", ["--source", "logical"]),
                               ("trigger", "trig", [])):
        wall, m, changes = measured_once(q, pg.odbc("tp"), table, f"tp-{fmt}-{name}",
                                         ["--format", fmt, *flags])
        cpu = m.get("user_s", 0) + m.get("sys_s", 0)
        r = {"source": name, "format": fmt, "backlog": backlog, "changes": changes,
             "seconds": wall, "rate": changes / wall if wall else 0,
             "cpu_us_per_change": cpu / changes * 1e6 if changes else 0,
             "peak_rss_mb": m.get("max_rss_kb", 0) / 1024}
        res["throughput"].append(r)
        B.log(f"throughput {name} {fmt}: {changes} changes in {wall:.1f} s = {r['rate']:.0f}/s, "
              f"{r['cpu_us_per_change']:.1f} us CPU per change, peak RSS {r['peak_rss_mb']:.0f} MB")
    pg.stop()


def tables(res):
    lines = ["| commits | writers | no capture (replica) | logical route running | trigger "
             "source | wal_level logical, no slot | logical / none (per round) | trigger / none "
             "(per round) | wal_level logical, no slot / none (per round) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["writers"]:
        lr, tr, vr = (", ".join(f"{x:.0%}" for x in r[k])
                      for k in ("logical_ratios", "trigger_ratios", "level_ratios"))
        lines.append(f"| {r['commits']} | {r['clients']} | {B.n_(r['plain'])} | "
                     f"{B.n_(r['logical'])} | {B.n_(r['trigger'])} | {B.n_(r['level'])} | "
                     f"**{r['logical_ratio']:.0%}** ({lr}) | {r['trigger_ratio']:.0%} ({tr}) | "
                     f"{r['level_ratio']:.0%} ({vr}) |")
    lines += ["", "| source | format | backlog | changes/s | bridge CPU per change | bridge peak RSS |",
              "|---|---|---:|---:|---:|---:|"]
    for r in res["throughput"]:
        lines.append(f"| {r['source']} | {r['format']} | {B.n_(r['backlog'])} | "
                     f"**{B.n_(r['rate'])}** | {r['cpu_us_per_change']:.1f} µs | "
                     f"{r['peak_rss_mb']:.0f} MB |")
    return "\n".join(lines)


def where(res):
    if res.get("walsender_beside"):
        return ("The server and pgbench run on CPU 0, the bridge, the queue service and the\n"
                "  route's walsender on the other CPUs (`--walsender-beside`: a server with a core "
                "to spare for decoding).")
    if res.get("split_cpus"):
        return ("The server (its walsender included) and pgbench run on CPU 0, the bridge and\n"
                "  the queue service on the other CPUs (`--split-cpus`: the bridge on its own "
                "machine).")
    return "The route's bridge shares the machine's CPUs with pgbench and the server."


def docs(res, cmd):
    return f"""Scenario 13 (issue 32). What the logical source (`--source logical`,
[logical-source.md](logical-source.md)) costs writers and how fast it publishes, beside no
capture and the trigger source, measured in one run.

- Writers: `pgbench -n -c C -j min(C,2) -T {res['seconds']}` with one `INSERT` per
  transaction into `(id bigserial, customer, total, note, updated_at)`: on a server with
  `wal_level = replica` and no capture ("no capture"), on a server with `wal_level = logical`
  whose table is in its route's publication while that route streams (`sqlq bridge --source
  logical` publishing every change to `bench/fakequeue.c`: "logical route running"), and into a
  table with the trigger source's change log on the replica server (no bridge), and into a
  table of a third server with `wal_level = logical` and no slot (what the setting alone costs),
  in turn, the first of the four rotating each round, {res['rounds']} rounds; the ratio per round, its
  median in bold. "fsync off": `fsync`, `synchronous_commit` and `full_page_writes` off;
  "durable": PostgreSQL's defaults. {where(res)}
- Throughput: {res['backlog']:,} changes (1,000-row transactions) waiting, then `sqlq bridge
  --once --format F` (bench/measure: wall time, the bridge's CPU, peak RSS), to
  `bench/fakequeue.c`; the logical source from its slot, the trigger source from its change log
  of the same rows.

{B.facts_lines()}- Command: `{cmd}`

{tables(res)}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--backlog", type=int)
    ap.add_argument("--no-writers", action="store_true")
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--split-cpus", action="store_true",
                    help="the database and its writers on CPU 0, the bridge and the queue "
                         "service on the others (the bridge on its own machine)")
    ap.add_argument("--walsender-beside", action="store_true",
                    help="--split-cpus, and the route's walsender on the side CPUs too (a "
                         "server with a core to spare for it)")
    a = ap.parse_args()
    ap_walsender = a.walsender_beside
    if a.split_cpus or ap_walsender:
        B.split_cpus()
    global WALSENDER_BESIDE
    WALSENDER_BESIDE = ap_walsender
    secs = a.seconds or (4 if a.quick else 8)
    rounds = a.rounds or (1 if a.quick else 3)
    backlog = a.backlog or (100_000 if a.quick else 1_000_000)
    B.need_tools()
    res = {"seconds": secs, "rounds": rounds, "backlog": backlog,
           "split_cpus": a.split_cpus or a.walsender_beside, "walsender_beside": a.walsender_beside,
           "writers": [],
           "throughput": []}
    with B.Workdir("logical") as w:
        q = w.add(L.FakeQueue(w.path / "fakequeue")).start()
        if not a.no_writers:
            for durable in (False, True):
                writers_case(w, q, res, secs, rounds, durable)
        if not a.no_throughput:
            for fmt in ("batch", "row"):
                throughput_case(w, q, res, backlog if fmt == "batch" else backlog // 10, fmt)
    res["targets"] = [
        {"target": f"Logical source: writers keep >= {WRITER_TARGET:.0%} of the rate without "
                   f"capture ({r['commits']}, {r['clients']} pgbench clients)",
         "figure": f"{r['logical_ratio']:.0%} (trigger source {r['trigger_ratio']:.0%})",
         "reached": r["logical_ratio"] >= WRITER_TARGET} for r in res["writers"]] + [
        {"target": f"Logical source: batch format >= {THROUGHPUT_TARGET:,} changes/s from a "
                   f"backlog",
         "figure": f"{r['rate']:,.0f} changes/s ({r['backlog']:,} changes)",
         "reached": r["rate"] >= THROUGHPUT_TARGET}
        for r in res["throughput"] if r["source"] == "logical" and r["format"] == "batch"]
    res["figures"] = [f"Logical source, writers ({r['commits']}, {r['clients']} clients): "
                      f"{r['logical_ratio']:.0%} of no capture (trigger {r['trigger_ratio']:.0%})"
                      for r in res["writers"]] + \
                     [f"{r['source']} source, {r['format']} format: {r['rate']:,.0f} changes/s"
                      for r in res["throughput"]]
    B.save("logical", res)
    print(tables(res))
    if a.write_docs:
        cmd = "bench/logical.py" + (" --quick" if a.quick else "") + \
            (" --split-cpus" if a.split_cpus else "") + \
            (" --walsender-beside" if a.walsender_beside else "") + \
            (f" --seconds {a.seconds}" if a.seconds else "") + \
            (f" --rounds {a.rounds}" if a.rounds else "") + \
            (f" --backlog {a.backlog}" if a.backlog else "")
        B.write_section(TITLE, docs(res, cmd))


if __name__ == "__main__":
    main()
