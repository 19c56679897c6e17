#!/usr/bin/env python3
"""Scaling out: rows published per second by 1, 2, 3 bridge instances on one queue and by one
instance on 1, 2, 4 shards, as ratios to one instance on one queue, all in one run.

The queue service is bench/fakequeue.c answering every request after 20-30 ms (as a region
away would), so that round trips, not the local queue service's CPU, bound one instance. Each
configuration drains a fresh backlog of ROWS changes from PostgreSQL (`sqlq bridge --once`,
every instance started at once; the time runs from the start to the last exit). The write
path is untouched: the backlog is written before the bridges start.

Rounds: every configuration once per round, in turn; each row shows the median of its rounds.
Beside the rates: the CPU of the bridges, PostgreSQL and fakequeue, the share of the machine's
cores in use (/proc/stat, everyone's work) and the share of each publish round its lanes spent putting
(the bridges' `lanes_put` debug lines: a round ends when its slowest lane does, so a lane that
ends early idles until then). --busy N runs N spinning processes during the run, to see what a
machine whose cores are taken by other work does to the ratios.

    bench/scale.py [--rows N] [--rounds R] [--busy N] [--write-docs]
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import time
import urllib.request

import benchlib as B

TITLE = "Scaling out: instances and shards"
DELAY = "20-30"


class DelayedQueue:
    def __init__(self, workdir):
        self.dir = workdir

    def start(self):
        self.port = B.free_port()
        self.out = open(self.dir / "fakequeue.log", "ab")
        self.proc = subprocess.Popen([str(B.TOOLS / "fakequeue"), str(self.port), DELAY],
                                     stdout=subprocess.PIPE, stderr=self.out,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening"):
            raise RuntimeError(f"fakequeue did not start: {line!r}")
        self.conn = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                     f"AccountKey={B.ACCOUNT_KEY};"
                     f"QueueEndpoint=http://127.0.0.1:{self.port}/devstoreaccount1;")
        return self

    def count(self):
        """Messages put so far, every queue together (fakequeue keeps one store)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/devstoreaccount1/q?comp=metadata",
                                     method="HEAD")
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.headers["x-ms-approximate-messages-count"])

    def cpu_s(self):
        return B.proc_cpu_s(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class Spinners:
    """N processes that only spin: a machine whose cores other work takes (--busy)."""

    def __init__(self, n):
        self.n = n

    def start(self):
        self.procs = [subprocess.Popen(["python3", "-c", "while True: pass"],
                                       stdin=subprocess.DEVNULL) for _ in range(self.n)]
        return self

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(10)


def cpu_ticks():
    """(busy, all, nice) clock ticks of every core so far (/proc/stat): busy over all between
    two readings is the share of the machine's cores that anything used, whoever it was; nice
    the part of it that niced processes used (they yield to the benchmark's)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = f
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait, nice


def one_run(pg, queue, rows, instances, shards, n):
    db = f"scale{n}"
    pg.create_db(db)
    pg.psql(db, "CREATE TABLE kv (id integer PRIMARY KEY, v integer NOT NULL)")
    conn = pg.odbc(db)
    B.sh([B.SQLQ, "setup", "--db", conn, "--table", "kv"])
    pg.psql(db, f"INSERT INTO kv SELECT g, g FROM generate_series(1, {rows}) g")
    env = dict(os.environ, SQLQ_QUEUE_CONNECTION=queue.conn)
    args = [str(B.SQLQ), "bridge", "--db", conn, "--table", "kv", "--queue", f"sc{n}",
            "--once", "--log-level", "debug", "--max-batch-size", str(100 * shards)]
    if shards > 1:
        args += ["--shards", str(shards)]
    before = queue.count()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = ru.ru_utime + ru.ru_stime
    pg0, fq0, sys0 = pg.cpu_s(), queue.cpu_s(), cpu_ticks()
    t0 = time.monotonic()
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(instances)]
    logs = []
    for p in procs:
        _, err = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"bridge exited {p.returncode}: {err.decode()[-500:]}")
        logs.append(err.decode())
    secs = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = ru.ru_utime + ru.ru_stime - cpu0
    pg_busy = pg.cpu_s() - pg0
    fq_busy, sys1 = queue.cpu_s() - fq0, cpu_ticks()
    machine = (sys1[0] - sys0[0]) / max(1, sys1[1] - sys0[1])
    niced = (sys1[2] - sys0[2]) / max(1, sys1[1] - sys0[1])
    published = queue.count() - before
    if published < rows:
        raise RuntimeError(f"{published} of {rows} rows published")
    return {"instances": instances, "shards": shards, "rows": rows, "seconds": secs,
            "rows_per_s": rows / secs, "bridge_cores": busy / secs, "pg_cores": pg_busy / secs,
            "fakequeue_cores": fq_busy / secs, "machine_busy": machine,
            "machine_niced": niced,
            "lanes_busy": lanes_busy(logs), "published": published}


LANES = re.compile(r"event=lanes_put .*messages=([\d,]+) end_ms=([\d,]+)")


def lanes_busy(logs):
    """The share of their rounds' time the lanes of a shard set spent putting (the bridges'
    `lanes_put` debug lines, one a round: each lane's end in ms from the round's start, all
    lanes starting together): the lanes' put time over lanes x the slowest lane's. None for one
    queue (one lane: never idle)."""
    put = span = 0
    for text in logs:
        for m in LANES.finditer(text):
            ends = [int(x) for x in m.group(2).split(",")]
            put += sum(ends)
            span += len(ends) * max(ends)
    return put / span if span else None


def table(runs):
    base = runs[0]["rows_per_s"]
    lines = [f"| instances | shards | rows/s | ratio to 1×1 | linear | of linear | of linear per round "
             "| lanes busy | bridge CPU (cores) | PostgreSQL CPU | fakequeue CPU | machine busy (niced) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        k = r["instances"] * r["shards"]
        ratio = r["rows_per_s"] / base
        per_round = ", ".join(f"{x:.2f}" for x in r["of_linear_rounds"])
        lanes = "" if r["lanes_busy"] is None else f"{r['lanes_busy']:.0%}"
        lines.append(f"| {r['instances']} | {r['shards']} | {B.n_(r['rows_per_s'])} | "
                     f"{ratio:.2f}× | {k}× | **{ratio / k:.2f}** | {per_round} | {lanes} | "
                     f"{r['bridge_cores']:.2f} | {r['pg_cores']:.2f} | {r['fakequeue_cores']:.2f} | "
                     f"{r['machine_busy']:.0%} ({r['machine_niced']:.0%}) |")
    return "\n".join(lines)


def merge(rounds):
    """One row per configuration: the median of its rounds, with each round's ratio to that
    round's one instance on one queue, per instance x shard."""
    out = []
    for i, first in enumerate(rounds[0]):
        runs = [r[i] for r in rounds]
        row = {k: statistics.median(x[k] for x in runs) for k in
               ("seconds", "rows_per_s", "bridge_cores", "pg_cores", "fakequeue_cores", "machine_busy", "machine_niced")}
        lanes = [x["lanes_busy"] for x in runs if x["lanes_busy"] is not None]
        k = first["instances"] * first["shards"]
        out.append({**row, "instances": first["instances"], "shards": first["shards"],
                    "rows": first["rows"], "lanes_busy": statistics.median(lanes) if lanes else None,
                    "of_linear_rounds": [x["rows_per_s"] / r[0]["rows_per_s"] / k
                                         for x, r in zip(runs, rounds)],
                    "rounds": runs})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, default=0, help="spinning processes during the run")
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    rounds = []
    configs = [(1, 1), (2, 1), (3, 1), (1, 2), (1, 4)]
    with B.Workdir("scale") as w:
        pg = w.add(B.Postgres(w.path / "pg").start())
        queue = w.add(DelayedQueue(w.path).start())
        if a.busy:
            w.add(Spinners(a.busy).start())
        n = 0
        for rnd in range(a.rounds):
            runs = []
            for inst, shards in configs:
                r = one_run(pg, queue, a.rows, inst, shards, n)
                n += 1
                B.log(f"round {rnd + 1}: {inst} instance(s), {shards} shard(s): "
                      f"{r['rows_per_s']:.0f} rows/s in {r['seconds']:.1f} s, bridge "
                      f"{r['bridge_cores']:.2f} cores, machine {r['machine_busy']:.0%} busy")
                runs.append(r)
            rounds.append(runs)
        end_load = " ".join(open("/proc/loadavg").read().split()[:3])
    runs = merge(rounds)
    cmd = "bench/scale.py" + (f" --rows {a.rows}" if a.rows != 6000 else "") + \
        (f" --rounds {a.rounds}" if a.rounds != 3 else "") + (f" --busy {a.busy}" if a.busy else "")
    body = (f"{B.facts_lines(f'; at the end {end_load}')}- Command: `{cmd}`\n\n"
            f"Queue service: bench/fakequeue.c answering after {DELAY} ms "
            f"per request; PostgreSQL backlog of {a.rows} rows per configuration, drained by "
            f"`sqlq bridge --once` started N times at once (max_in_flight 16 per queue; "
            f"max_batch_size 100 per shard, so that each queue of a set gets as many changes per "
            f"poll); {a.rounds} rounds, every configuration once per round, the median of its "
            f"rounds"
            + (f"; {a.busy} spinning processes took cores meanwhile" if a.busy else "")
            + f".\n\n{table(runs)}\n")
    print(body)
    B.save("scale-busy" if a.busy else "scale", {"runs": runs})
    if a.write_docs:
        B.write_section(TITLE, body)


if __name__ == "__main__":
    main()
