#!/usr/bin/env python3
"""Scenario 6: what change capture costs writers. Inserts per second into two identical
tables, one with `sqlq setup`'s change-log trigger and one without, side by side and
alternating: PostgreSQL with pgbench (a custom one-INSERT script, 1 and 8 clients, and 1,000
single-row INSERTs per transaction; the trigger's wake-up on; on a server with fsync off, where
only CPU counts, and on one with PostgreSQL's durable defaults), MariaDB
with mariadb-slap (the same INSERT, 1 and 8 clients), SQLite with Python's sqlite3 module (one
row per transaction, and many rows per transaction).

  bench/write_overhead.py [--quick] [--write-docs] [--seconds S] [--rounds R]
"""
import argparse
import re
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

TITLE = "Write overhead of change capture"
PG_COLUMNS = ("(id bigserial PRIMARY KEY, customer text NOT NULL, total numeric(12,2), "
              "note text, updated_at timestamptz NOT NULL DEFAULT now())")
SQLITE_COLUMNS = ("(id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total NUMERIC, note TEXT, "
                  "updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)")
MY_COLUMNS = ("(id bigint AUTO_INCREMENT PRIMARY KEY, customer varchar(100) NOT NULL, "
              "total decimal(12,2), note text, updated_at timestamp(6) NOT NULL "
              "DEFAULT CURRENT_TIMESTAMP(6)) DEFAULT CHARSET=utf8mb4")
NOTE = "a short note about this order"


def pgbench(pg, work, table, clients, seconds, per_txn=1):
    """Inserts per second: pgbench running transactions of per_txn one-row INSERT statements."""
    script = work / f"insert_{table}_{per_txn}.sql"
    insert = (f"INSERT INTO {table} (customer, total, note) VALUES "
              f"('customer-' || :client_id, 19.90, '{NOTE}');\n")
    script.write_text(insert if per_txn == 1 else "BEGIN;\n" + insert * per_txn + "COMMIT;\n")
    r = B.run(["pgbench", "-n", "-h", "127.0.0.1", "-p", pg.port, "-U", "sqlq", "-f", script,
               "-c", clients, "-j", min(clients, 2), "-T", seconds, "wo"], timeout=seconds + 60)
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", r.out)
    if not m:
        raise RuntimeError(f"pgbench output: {r.out[-500:]}")
    return float(m.group(1)) * per_txn


def slap(my, table, clients, queries):
    """Inserts per second: mariadb-slap running `queries` one-row INSERTs (autocommit) on
    `clients` connections."""
    q = (f"INSERT INTO {table} (customer, total, note) VALUES "
         f"(CONCAT('customer-', CONNECTION_ID()), 19.90, '{NOTE}')")
    r = B.run(["mariadb-slap", "--no-defaults", "-h", "127.0.0.1", "-P", my.port, "-u", "sqlq",
               "--create-schema=wo", "--no-drop", f"--query={q}", f"--concurrency={clients}",
               f"--number-of-queries={queries}", "--iterations=1"], timeout=600)
    m = re.search(r"Average number of seconds to run all queries: ([\d.]+) seconds", r.out)
    if not m or float(m.group(1)) <= 0:
        raise RuntimeError(f"mariadb-slap output: {r.out[-500:]}")
    return queries / float(m.group(1))


def sqlite_rate(path, table, per_txn, rows):
    """Rows per second inserting `rows` rows, per_txn rows per transaction."""
    db = sqlite3.connect(path, isolation_level=None)
    sql = f"INSERT INTO {table} (customer, total, note) VALUES (?, '19.90', '{NOTE}')"
    t0 = time.perf_counter()
    for start in range(0, rows, per_txn):
        batch = [(f"customer-{i}",) for i in range(start, min(rows, start + per_txn))]
        if per_txn == 1:
            db.execute(sql, batch[0])
        else:
            db.execute("BEGIN")
            db.executemany(sql, batch)
            db.execute("COMMIT")
    secs = time.perf_counter() - t0
    db.close()
    return rows / secs


def table(res):
    lines = ["| database | commits | writers | rows per transaction | inserts/s without capture | "
             "inserts/s with capture | with / without (per round) |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in res["cases"]:
        ratios = ", ".join(f"{x:.0%}" for x in r["ratios"])
        lines.append(f"| {r['db']} | {r.get('commits', '')} | {r['writers']} | {r['per_txn']} | "
                     f"{B.n_(r['plain'])} | {B.n_(r['captured'])} | **{r['ratio']:.0%}** "
                     f"({ratios}) |")
    return "\n".join(lines)


def case(db, writers, per_txn, pairs, commits=""):
    plain = [p for p, _ in pairs]
    cap = [c for _, c in pairs]
    ratios = [c / p for p, c in pairs]
    return {"db": db, "commits": commits, "writers": writers, "per_txn": per_txn,
            "plain": B.median(plain), "captured": B.median(cap), "ratio": B.median(ratios),
            "ratios": ratios}


# Issue 15's write-path targets: (database, rows per transaction, writers' prefix, least ratio).
TARGETS = (("PostgreSQL", 1, "1 ", 0.85), ("PostgreSQL", 1, "8 ", 0.85),
           ("PostgreSQL", 1000, "1 ", 0.80), ("SQLite", 1000, "1 ", 0.80))


def targets(res):
    out = []
    for db, per_txn, writers, least in TARGETS:
        for r in res["cases"]:
            if r["db"] == db and r["per_txn"] == per_txn and r["writers"].startswith(writers):
                what = "single-row transactions" if per_txn == 1 else f"{per_txn:,}-row transactions"
                mode = f" ({r['commits']})" if r.get("commits") else ""
                out.append({"target": f"Write overhead: {db} {what}, {r['writers']}{mode}, >= "
                                      f"{least:.0%} of the rate without capture",
                            "figure": f"{r['ratio']:.0%} ({B.n_(r['captured'])} vs "
                                      f"{B.n_(r['plain'])} inserts/s)",
                            "reached": r["ratio"] >= least})
    return out


def docs(res, cmd):
    return f"""Scenario 6. What capture costs the application's writes: inserts per second into two
identical tables (`id` serial key, text, decimal, text, timestamp default now), one set up with
`sqlq setup` (the change-log trigger: one upsert into the log table per row; SQLite reads
the log's newest version for it) and one without, measured one after the other (which goes first
alternates), {res['rounds']} rounds each; the ratio is per round and its median in bold.

- PostgreSQL: `pgbench -n -f insert.sql -c C -j min(C,2) -T {res['seconds']}` with one
  `INSERT INTO t (customer, total, note) VALUES (...)` per transaction, and (1 client) with
  `BEGIN`, 1,000 such INSERT statements, `COMMIT`, on two private servers: one with
  `fsync=off`, `synchronous_commit=off` and `full_page_writes=off` ("fsync off": no disk wait,
  so the trigger's CPU cost shows in full, the worst case), and one with PostgreSQL's defaults
  ("durable": every commit waits for its WAL flush on this machine's disk, as a production
  server's does). Wake-ups are on, as on a default server (the
  private server allows prepared transactions, which silences them unless `sqlq.notify = on`:
  the benchmark database sets it): each writing transaction tries the log's wake-up lock, and
  since no bridge runs here none holds it, so none notifies (with a bridge waiting they would:
  `bench/wakeup_writes.py`, Findings 11). PostgreSQL's trigger logs an INSERT statement's rows
  with one upsert per statement (a statement trigger with a transition table).
- MariaDB: `mariadb-slap --concurrency=C --number-of-queries={res['mariadb_queries']:,}` with
  the same INSERT (autocommit), on the private server (`innodb_flush_log_at_trx_commit=0`:
  no disk wait either). The trigger upserts the key's log row with version 0; the stamp
  (the bridge's, not running here) is not counted.
- SQLite: Python's `sqlite3` on a database file with SQLite's defaults (rollback journal,
  `synchronous=FULL`), one prepared INSERT: {res['sqlite_autocommit_rows']:,} rows one per
  transaction, and {res['sqlite_batch_rows']:,} rows {res['sqlite_batch']:,} per transaction.

{B.facts_lines()}- Command: `{cmd}`

{table(res)}
"""


def postgres_cases(w, res, secs, rounds, durable):
    commits = "durable" if durable else "fsync off"
    pg = w.add(B.Postgres(w.path / ("pg-durable" if durable else "pg"), durable)).start()
    pg.create_db("wo")
    pg.psql("postgres", "ALTER DATABASE wo SET sqlq.notify = on")
    pg.psql("wo", f"CREATE TABLE plain {PG_COLUMNS}", f"CREATE TABLE captured {PG_COLUMNS}")
    B.run([B.SQLQ, "setup", "--db", pg.odbc("wo"), "--table", "captured"])
    for clients, per_txn in ((1, 1), (8, 1), (1, 1000)):
        pairs = []
        for rd in range(rounds):
            first = "plain" if rd % 2 == 0 else "captured"  # alternate the order
            x = pgbench(pg, w.path, first, clients, secs, per_txn)
            y = pgbench(pg, w.path, "captured" if first == "plain" else "plain", clients, secs,
                        per_txn)
            p, c = (x, y) if first == "plain" else (y, x)
            pairs.append((p, c))
            B.log(f"PostgreSQL ({commits}) {clients} clients, {per_txn} per transaction, round "
                  f"{rd + 1}: {p:.0f} vs {c:.0f} inserts/s")
        res["cases"].append(case("PostgreSQL", f"{clients} (pgbench clients)", per_txn, pairs,
                                 commits))
    pg.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--rounds", type=int)
    a = ap.parse_args()
    secs = a.seconds or (4 if a.quick else 8)
    rounds = a.rounds or (1 if a.quick else 3)
    auto_rows, batch_rows, batch = (1000, 50000, 1000) if a.quick else (3000, 200000, 1000)
    B.need_tools()
    my_queries = 4000 if a.quick else 20000
    res = {"seconds": secs, "rounds": rounds, "cases": [], "sqlite_autocommit_rows": auto_rows,
           "sqlite_batch_rows": batch_rows, "sqlite_batch": batch, "mariadb_queries": my_queries}
    with B.Workdir("overhead") as w:
        postgres_cases(w, res, secs, rounds, durable=False)
        postgres_cases(w, res, secs, rounds, durable=True)
        my = w.add(B.MariaDB(w.path / "my")).start()
        my.create_db("wo")
        my.sql("wo", f"CREATE TABLE plain {MY_COLUMNS}", f"CREATE TABLE captured {MY_COLUMNS}")
        B.run([B.SQLQ, "setup", "--db", my.odbc("wo"), "--table", "captured"])
        for clients in (1, 8):
            pairs = []
            for rd in range(rounds):
                first = "plain" if rd % 2 == 0 else "captured"
                x = slap(my, first, clients, my_queries)
                y = slap(my, "captured" if first == "plain" else "plain", clients, my_queries)
                p, c = (x, y) if first == "plain" else (y, x)
                pairs.append((p, c))
                B.log(f"MariaDB {clients} clients round {rd + 1}: {p:.0f} vs {c:.0f} inserts/s")
            res["cases"].append(case("MariaDB", f"{clients} (mariadb-slap clients)", 1, pairs))
        my.stop()
        for per_txn, rows in ((1, auto_rows), (batch, batch_rows)):
            pairs = []
            for rd in range(rounds):
                rates = {}
                for t in (("plain", "captured") if rd % 2 == 0 else ("captured", "plain")):
                    path = w.path / f"{t}-{per_txn}-{rd}.db"
                    B.sh(["sqlite3", path, f"CREATE TABLE {t} {SQLITE_COLUMNS}"])
                    if t == "captured":
                        B.run([B.SQLQ, "setup", "--db", B.sqlite_odbc(path), "--table", t])
                    rates[t] = sqlite_rate(path, t, per_txn, rows)
                pairs.append((rates["plain"], rates["captured"]))
                B.log(f"SQLite {per_txn} per transaction round {rd + 1}: {rates['plain']:.0f} vs "
                      f"{rates['captured']:.0f} inserts/s")
            res["cases"].append(case("SQLite", "1 (Python sqlite3)", per_txn, pairs))
    res["targets"] = targets(res)
    res["figures"] = [f"Write overhead, {r['db']}" + (f" ({r['commits']})" if r.get("commits") else "")
                      + f", {r['writers']}, {r['per_txn']} per transaction: "
                      f"{r['ratio']:.0%} of the inserts/s without capture" for r in res["cases"]]
    B.save("write_overhead", res)
    print(table(res))
    if a.write_docs:
        cmd = "bench/write_overhead.py" + (" --quick" if a.quick else "") + \
            (f" --seconds {a.seconds}" if a.seconds else "") + \
            (f" --rounds {a.rounds}" if a.rounds else "")
        B.write_docs(TITLE, docs(res, cmd))


if __name__ == "__main__":
    main()
