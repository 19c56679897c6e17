#!/usr/bin/env python3
"""What PostgreSQL's wake-up costs writers (issues 15, 22): single-row INSERT transactions into
three identical tables, one without capture, one set up by a baseline sqlq (--old: its trigger
NOTIFYs in every writing transaction) and one by this sqlq (it notifies only while a bridge is
armed; without a bridge also with sqlq.notify = off, which tries no lock: the floor), side by
side in interleaved rounds (the order rotates each round). Per case: inserts/s,
the server's CPU per transaction (every PostgreSQL process, from /proc) and the whole
machine's busy time per transaction (/proc/stat; other work on the machine shows there too).

  A. fsync off (tests/support/postgres.sh's server, sqlq.notify = on), no bridge: 1 and 8
     pgbench clients of one INSERT per transaction, and 1 client of 1,000 INSERT statements per
     transaction;
  B. the same server with a bridge running on each captured table (--format batch; the
     baseline's bridge on its table, this sqlq's on the other) while pgbench writes (8 and 1
     clients as fast as they can, 8 clients at 300 and 1,000 transactions/s): a LISTEN session
     counts the notifications of each table against its commits; after each run the bridges
     drain before the next;
  D. as B with two bridge instances on each captured table (8 clients, as fast as they can
     and at 300/s);
  C. durable commits (a second private server with PostgreSQL's defaults: fsync,
     synchronous_commit and full_page_writes on; max_prepared_transactions 0, so the trigger
     notifies without sqlq.notify): 8 and 1 clients, no bridge.

  bench/wakeup_writes.py --old PATH [--quick] [--seconds S] [--rounds R] [--parts ABDC]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

COLUMNS = ("(id bigserial PRIMARY KEY, customer text NOT NULL, total numeric(12,2), "
           "note text, updated_at timestamptz NOT NULL DEFAULT now())")
NOTE = "a short note about this order"
TABLES = ("plain", "oldcap", "newcap")
# A variant: the table written, and the session's settings (PGOPTIONS). "newoff": this sqlq's
# trigger with notifications off (no lock tried, no NOTIFY): the floor the wake-up can reach.
VARIANTS = {"plain": ("plain", ""), "oldcap": ("oldcap", ""), "newcap": ("newcap", ""),
            "newoff": ("newcap", "-c sqlq.notify=off")}
CHANNEL = {"oldcap": "sqlq.log_oldcap", "newcap": "sqlq.log_newcap"}


class DurablePostgres(B.Postgres):
    """A private PostgreSQL with PostgreSQL's own durability defaults (fsync,
    synchronous_commit, full_page_writes on; no prepared transactions): the steps of
    tests/support/postgres.sh with other settings."""

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir.parent, 0o755)
        bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                        key=lambda p: [int(x) for x in re.findall(r"\d+", p)])[-1]
        as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        data = self.dir / "data"
        if os.getuid() == 0:
            B.sh(["chown", "postgres", self.dir])
        if not (data / "PG_VERSION").exists():
            B.sh([*as_pg, f"{bindir}/initdb", "-D", data, "-U", "sqlq", "--auth=trust", "-E",
                  "UTF8", "--no-locale"])
        self.port = B.free_port()
        B.sh([*as_pg, f"{bindir}/pg_ctl", "-D", data, "-l", self.dir / "server.log", "-w", "-t",
              "60", "start", "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
              "-c max_connections=300"])
        self.odbc_prefix = (f"Driver={{PostgreSQL Unicode}};Server=127.0.0.1;Port={self.port};"
                            "UID=sqlq;PWD=;BoolsAsChar=0;UseDeclareFetch=1;Fetch=1000;")
        return self


def prepare(pg, db, old, notify_on):
    pg.create_db(db)
    if notify_on:
        pg.psql("postgres", f"ALTER DATABASE {db} SET sqlq.notify = on")
    for t in TABLES:
        pg.psql(db, f"CREATE TABLE {t} {COLUMNS}")
    B.run([old, "setup", "--db", pg.odbc(db), "--table", "oldcap"])
    B.run([B.SQLQ, "setup", "--db", pg.odbc(db), "--table", "newcap"])
    # No autovacuum in the middle of a measurement: the tables are emptied between runs.
    for t in (*TABLES, "sqlq.log_oldcap", "sqlq.log_newcap"):
        pg.psql(db, f"ALTER TABLE {t} SET (autovacuum_enabled = off)")


def empty(pg, db):
    pg.psql(db, "TRUNCATE plain, oldcap, newcap, sqlq.log_oldcap, sqlq.log_newcap", "CHECKPOINT")


def pgbench(pg, work, db, variant, clients, seconds, per_txn, rate=None):
    """One pgbench run of a variant (at most `rate` transactions/s when given): inserts/s,
    transactions, and CPU per transaction (server, pgbench, machine)."""
    table, options = VARIANTS[variant]
    script = work / f"ins_{table}_{per_txn}.sql"
    insert = (f"INSERT INTO {table} (customer, total, note) VALUES "
              f"('customer-' || :client_id, 19.90, '{NOTE}');\n")
    script.write_text(insert if per_txn == 1 else "BEGIN;\n" + insert * per_txn + "COMMIT;\n")
    srv0, mach0 = pg.cpu_s(), B.system_busy_s()
    r = B.run(["pgbench", "-n", "-h", "127.0.0.1", "-p", pg.port, "-U", "sqlq", "-f", script,
               "-c", clients, "-j", min(clients, 2), "-T", seconds,
               *(["-R", rate] if rate else []), db], timeout=seconds + 60,
              env={"PGOPTIONS": options})
    mach = B.system_busy_s() - mach0
    srv = pg.cpu_s() - srv0
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", r.out)
    n = re.search(r"number of transactions actually processed: (\d+)", r.out)
    if not m or not n:
        raise RuntimeError(f"pgbench output: {r.out[-500:]}")
    txns = int(n.group(1))
    return {"rate": float(m.group(1)) * per_txn, "txns": txns,
            "server_us": srv / txns * 1e6, "pgbench_us": r.cpu / txns * 1e6,
            "machine_us": mach / txns * 1e6}


class Counter:
    """bench/listen_count: the notifications of the captured tables' channels."""

    def __init__(self, pg, db):
        self.p = subprocess.Popen(
            [str(B.TOOLS / "listen_count"),
             f"host=127.0.0.1 port={pg.port} user=sqlq dbname={db} application_name=bench-count",
             *CHANNEL.values()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self.p.stdout.readline().strip() != "ready":
            raise RuntimeError("listen_count did not start")

    def counts(self):
        import json
        time.sleep(0.3)  # notifications of the last commits on their way
        self.p.stdin.write("\n")
        self.p.stdin.flush()
        c = json.loads(self.p.stdout.readline())
        return {t: c[ch] for t, ch in CHANNEL.items()}

    def stop(self):
        self.p.stdin.close()
        self.p.wait(10)


def start_bridge(az, binary, conn, table, work):
    log = open(work / f"bridge-{table}.log", "ab")
    return subprocess.Popen([str(binary), "bridge", "--db", conn, "--table", table, "--queue",
                             f"ww-{table}", "--format", "batch", "--log-level", "warn"],
                            env={**os.environ, **az.env()}, stdout=log, stderr=log)


def drained(pg, db, table, timeout_s=120):
    """Until every change of the table's log is delivered (the sync version at its newest)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        left = pg.psql(db, f"SELECT count(*) FROM sqlq.log_{table} l WHERE sqlq_version > "
                           f"(SELECT coalesce(max(sync_version), 0) FROM sqlq.state WHERE "
                           f"table_name = 'public.{table}')").strip()
        if left == "0":
            return time.monotonic() - t0
        time.sleep(0.2)
    raise RuntimeError(f"the bridge of {table} did not drain in {timeout_s} s")


def rounds_of(pg, work, db, clients, per_txn, seconds, rounds, part, res, between=None,
              counter=None, rate=None, variants=TABLES):
    runs = {t: [] for t in variants}
    for rd in range(rounds):
        k = rd % len(variants)
        order = variants[k:] + variants[:k]  # rotate: each goes first in turn
        for t in order:
            if between is None:
                empty(pg, db)
            before = counter.counts() if counter else None
            x = pgbench(pg, work, db, t, clients, seconds, per_txn, rate)
            if counter:
                after = counter.counts()
                x["notified"] = after.get(t, 0) - before.get(t, 0)
            if between:
                between(VARIANTS[t][0])
            runs[t].append(x)
            B.log(f"{part} {clients} clients x {per_txn}/txn{f' at {rate}/s' if rate else ''} "
                  f"round {rd + 1} {t}: "
                  f"{x['rate']:.0f} inserts/s, server {x['server_us']:.0f} us/txn"
                  + (f", notified {x['notified']}/{x['txns']}" if counter else ""))
    case = {"part": part, "clients": clients, "per_txn": per_txn, "rate": rate}
    for t in variants:
        rs = runs[t]
        case[t] = {k: B.median([r[k] for r in rs]) for k in rs[0]}
        case[t]["runs"] = rs
        case[t]["ratio"] = B.median([c["rate"] / p["rate"] for c, p in zip(rs, runs["plain"])])
        case[t]["ratios"] = [c["rate"] / p["rate"] for c, p in zip(rs, runs["plain"])]
    res["cases"].append(case)
    return case


def table(res):
    lines = ["| part | clients × rows/txn | no capture: inserts/s, server µs/txn | old trigger "
             "(notifies always) | new trigger | new, sqlq.notify off | machine µs/txn: none / "
             "old / new | notified / committed: old, new |", "|---|---|---|---|---|---|---|---|"]

    def cell(c, t):
        if t not in c:
            return "-"
        x = c[t]
        per = ", ".join(f"{r:.0%}" for r in x["ratios"])
        return f"{B.n_(x['rate'])} **{x['ratio']:.0%}** ({per}), {x['server_us']:.0f} µs"
    for c in res["cases"]:
        p, o, n = c["plain"], c["oldcap"], c["newcap"]
        notified = (f"{o['notified']:,.0f} / {o['txns']:,.0f}, {n['notified']:,.0f} / "
                    f"{n['txns']:,.0f}") if "notified" in o else "-"
        lines.append(
            f"| {c['part']} | {c['clients']} × {c['per_txn']}"
            f"{' at ' + format(c['rate'], ',') + '/s' if c.get('rate') else ''} | "
            f"{B.n_(p['rate'])}, {p['server_us']:.0f} µs | {cell(c, 'oldcap')} | "
            f"{cell(c, 'newcap')} | {cell(c, 'newoff')} | {p['machine_us']:.0f} / "
            f"{o['machine_us']:.0f} / {n['machine_us']:.0f} | {notified} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the baseline sqlq binary (its trigger "
                    "notifies in every writing transaction), e.g. main's build-bench/cli/sqlq")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--parts", default="ABDC")
    a = ap.parse_args()
    secs = a.seconds or (4 if a.quick else 8)
    rounds = a.rounds or (1 if a.quick else 3)
    B.need_tools()
    res = {"seconds": secs, "rounds": rounds, "old": a.old, "cases": []}
    with B.Workdir("wakeup-writes") as w:
        if "A" in a.parts or "B" in a.parts:
            pg = w.add(B.Postgres(w.path / "pg")).start()
            prepare(pg, "ww", a.old, notify_on=True)
            if "A" in a.parts:
                for clients, per_txn in ((1, 1), (8, 1), (1, 1000)):
                    rounds_of(pg, w.path, "ww", clients, per_txn, secs, rounds, "A", res,
                              variants=tuple(VARIANTS))
            if "B" in a.parts or "D" in a.parts:
                az = w.add(B.Azurite(w.path / "az")).start()
                for t in ("oldcap", "newcap"):
                    az.sqlq("queue", "create", f"ww-{t}")
                empty(pg, "ww")
            for part, instances, cases in (("B", 1, ((8, None), (1, None), (8, 300), (8, 1000))),
                                           ("D", 2, ((8, None), (8, 300)))):
                if part not in a.parts:
                    continue
                bridges = [start_bridge(az, binary, pg.odbc("ww"), t, w.path)
                           for t, binary in (("oldcap", a.old), ("newcap", B.SQLQ))
                           for _ in range(instances)]
                counter = Counter(pg, "ww")
                time.sleep(2)

                def between(t):
                    if t != "plain":
                        B.log(f"  drained {t} in {drained(pg, 'ww', t):.1f} s")
                try:
                    for clients, rate in cases:
                        rounds_of(pg, w.path, "ww", clients, 1, secs, rounds, part, res,
                                  between=between, counter=counter, rate=rate)
                finally:
                    counter.stop()
                    for b in bridges:
                        b.terminate()
                        b.wait(30)
            pg.stop()
        if "C" in a.parts:
            dpg = w.add(DurablePostgres(w.path / "durable")).start()
            prepare(dpg, "ww", a.old, notify_on=False)
            for clients in (8, 1):
                rounds_of(dpg, w.path, "ww", clients, 1, secs, rounds, "C", res,
                          variants=tuple(VARIANTS))
            dpg.stop()
    B.save("wakeup_writes", res)
    print(table(res))


if __name__ == "__main__":
    main()
