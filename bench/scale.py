#!/usr/bin/env python3
"""Scaling out: rows published per second by 1, 2, 3 bridge instances on one queue and by one
instance on 1, 2, 4 shards, as ratios to one instance on one queue, all in one run.

The queue service is bench/fakequeue.c answering every request after 20-30 ms (as a region
away would), so that round trips, not the local queue service's CPU, bound one instance. Each
configuration drains a fresh backlog of ROWS changes from PostgreSQL (`sqlq bridge --once`,
every instance started at once; the time runs from the start to the last exit). The write
path is untouched: the backlog is written before the bridges start.

    bench/scale.py [--rows N] [--write-docs]
"""
import argparse
import os
import resource
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

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def one_run(pg, queue, rows, instances, shards, n):
    db = f"scale{n}"
    pg.create_db(db)
    pg.psql(db, "CREATE TABLE kv (id integer PRIMARY KEY, v integer NOT NULL)")
    conn = pg.odbc(db)
    B.sh([B.SQLQ, "setup", "--db", conn, "--table", "kv"])
    pg.psql(db, f"INSERT INTO kv SELECT g, g FROM generate_series(1, {rows}) g")
    env = dict(os.environ, SQLQ_QUEUE_CONNECTION=queue.conn)
    args = [str(B.SQLQ), "bridge", "--db", conn, "--table", "kv", "--queue", f"sc{n}",
            "--once", "--log-level", "warn", "--max-batch-size", str(100 * shards)]
    if shards > 1:
        args += ["--shards", str(shards)]
    before = queue.count()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = ru.ru_utime + ru.ru_stime
    pg0 = pg.cpu_s()
    t0 = time.monotonic()
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for _ in range(instances)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"bridge exited {p.returncode}: {err.decode()[-500:]}")
    secs = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = ru.ru_utime + ru.ru_stime - cpu0
    pg_busy = pg.cpu_s() - pg0
    published = queue.count() - before
    if published < rows:
        raise RuntimeError(f"{published} of {rows} rows published")
    return {"instances": instances, "shards": shards, "rows": rows, "seconds": secs,
            "rows_per_s": rows / secs, "bridge_cores": busy / secs, "pg_cores": pg_busy / secs, "published": published}


def table(runs):
    base = runs[0]["rows_per_s"]
    lines = ["| instances | shards | rows/s | ratio to 1×1 | linear | of linear | bridge CPU (cores) | PostgreSQL CPU (cores) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        k = r["instances"] * r["shards"]
        ratio = r["rows_per_s"] / base
        lines.append(f"| {r['instances']} | {r['shards']} | {B.n_(r['rows_per_s'])} | "
                     f"{ratio:.2f}× | {k}× | {ratio / k:.2f} | {r['bridge_cores']:.2f} | {r['pg_cores']:.2f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    runs = []
    with B.Workdir("scale") as w:
        pg = w.add(B.Postgres(w.path / "pg").start())
        queue = w.add(DelayedQueue(w.path).start())
        configs = [(1, 1), (2, 1), (3, 1), (1, 2), (1, 4)]
        for n, (inst, shards) in enumerate(configs):
            r = one_run(pg, queue, a.rows, inst, shards, n)
            B.log(f"{inst} instance(s), {shards} shard(s): {r['rows_per_s']:.0f} rows/s "
                  f"in {r['seconds']:.1f} s, bridge {r['bridge_cores']:.2f} cores")
            runs.append(r)
    body = (f"{B.facts_lines()}\n\nQueue service: bench/fakequeue.c answering after {DELAY} ms "
            f"per request; PostgreSQL backlog of {a.rows} rows per configuration, drained by "
            f"`sqlq bridge --once` started N times at once (max_in_flight 16 per queue; "
            f"max_batch_size 100 per shard, so that each queue of a set gets as many changes per poll).\n\n{table(runs)}\n")
    print(body)
    B.save("scale", {"runs": runs})
    if a.write_docs:
        B.write_section(TITLE, body)


if __name__ == "__main__":
    main()
