#!/usr/bin/env python3
"""Issue 16: what each per-route message option costs the bridge. The same backlog (bench/
bridge.py's table and fill) drained by `sqlq bridge --once --format batch` without options and
with each option, on SQLite and PostgreSQL; rounds alternate the order so a slow moment of the
shared machine does not land on one option. Batch format keeps the queue's share small, so the
bridge's and the database's own work show.

  bench/message_options.py [--n 20000] [--rounds 3] [--db sqlite,postgres] [--write-docs]
  bench/message_options.py --updates [--n 20000] [--rounds 3] [--db sqlite,postgres]
  bench/message_options.py --writes [--n 100000] [--rounds 5] [--db sqlite,postgres]

--updates: what changed columns and before images cost (issue 16 items 1-2), on both sides.
Each round and setup variant (none, --track-columns, --before-image, both; rotating order): a
table set up with the option, n rows inserted and delivered, then one statement updating every
row (the write side: its wall time, the triggers' cost), then that backlog of n updates drained
with the matching route options (the bridge side). Prints a table; the reading goes into
docs/benchmarks.md by hand. --writes: the write side alone, n rows updated by one statement per
round and variant, no bridge (a larger n: the triggers' cost per row).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402
import bridge as BR  # noqa: E402

TITLE = "Message options (issue 16)"
# (name, extra bridge arguments, what the drain must have published: all or a share)
OPTIONS = [
    ("none", []),
    ("--columns customer,total", ["--columns", "customer,total"]),
    ("--exclude-columns note", ["--exclude-columns", "note"]),
    ("--ops update (every insert released unsent)", ["--ops", "update"]),
    ("--where \"total > 500\" (half the rows)", ["--where", "total > 500"]),
    ("--initial-visibility-s 60", ["--initial-visibility-s", "60"]),
]


# (name, sqlq setup options, bridge options) of the --updates run
UPDATE_OPTIONS = [
    ("none", [], []),
    ("--track-columns / --changed", ["--track-columns"], ["--changed"]),
    ("--before-image / --before-image", ["--before-image"], ["--before-image"]),
    ("both", ["--track-columns", "--before-image"], ["--changed", "--before-image"]),
]
UPDATE_SQL = "UPDATE orders SET total = total + 1, note = note || 'x'"


def update_all(db):
    """One statement updating every row; its wall time (the triggers run once per row)."""
    if isinstance(db, BR.Sqlite):
        return B.run(["sqlite3", db.path, UPDATE_SQL]).wall
    return B.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", db.pg.port,
                  "-U", "sqlq", "-d", db.tag, "-c", UPDATE_SQL]).wall


def updates(a, az, w, engines):
    runs = []
    for rd in range(a.rounds):
        for db in engines:
            order = UPDATE_OPTIONS[rd % len(UPDATE_OPTIONS):] + UPDATE_OPTIONS[:rd % len(UPDATE_OPTIONS)]
            for k, (name, setup, extra) in enumerate(order):
                tag = f"u{rd}{k}{db.name[0].lower()}"
                db.create(tag)
                if setup:
                    B.run([B.SQLQ, "setup", "--db", db.conn, "--table", "orders", *setup])
                db.fill(1, a.n)
                BR.fresh_azurite(az, w.path)
                BR.drain(az, db, "batch", a.n, tag + "i", extra)  # the inserts, not measured
                write_s = update_all(db)
                r = BR.drain(az, db, "batch", a.n, tag, extra)
                r.update(option=name, round=rd, write_s=write_s)
                runs.append(r)
                B.log(f"{db.name} {name} round {rd + 1}: update of {a.n} rows {write_s:.2f} s, "
                      f"drain {B.drain_line(r)}, other load {r['other_load_cores']:.2f}")
    lines = ["| database | setup / route options | update of every row, s (median) | vs none | "
             "drain changes/s | bridge CPU ms/1000 | db CPU ms/1000 | other load (cores) |",
             "|---|---|---|---|---|---|---|---|"]
    summary = B.summarise(runs, "option", [name for name, _, _ in UPDATE_OPTIONS],
                          {"write_s": "write_s", **B.DRAIN_FIELDS}, "write_s", "write_vs_none")
    for s in summary:
        lines.append(f"| {s['db']} | {s['option']} | {s['write_s']:.2f} | {s['write_vs_none']:+.0%} | "
                     f"{s['changes_s']:,.0f} | {s['bridge_cpu']:.0f} | {s['db_cpu']:.0f} | "
                     f"{s['other']:.2f} |")
    B.save("message_options_updates", {"n": a.n, "rounds": a.rounds, "runs": runs, "summary": summary})
    print("\n".join(lines))


def writes(a, engines):
    """The write side alone: per round and setup variant (rotating order), n rows inserted, then
    every row updated by one statement, timed (the triggers' cost per row updated)."""
    runs = []
    for rd in range(a.rounds):
        for db in engines:
            order = UPDATE_OPTIONS[rd % len(UPDATE_OPTIONS):] + UPDATE_OPTIONS[:rd % len(UPDATE_OPTIONS)]
            for k, (name, setup, _) in enumerate(order):
                db.create(f"w{rd}{k}{db.name[0].lower()}")
                if setup:
                    B.run([B.SQLQ, "setup", "--db", db.conn, "--table", "orders", *setup])
                db.fill(1, a.n)
                wall = update_all(db)
                runs.append({"db": db.name, "option": name, "round": rd, "update_s": wall,
                             "us_per_row": wall * 1e6 / a.n})
                B.log(f"{db.name} {name} round {rd + 1}: update of {a.n} rows {wall:.2f} s "
                      f"({wall * 1e6 / a.n:.1f} us/row)")
    lines = ["| database | setup option | update of every row, us/row (median) | vs none | runs |",
             "|---|---|---|---|---|"]
    for dbn in sorted({r["db"] for r in runs}):
        base = None
        for name, _, _ in UPDATE_OPTIONS:
            us = B.median([r["us_per_row"] for r in runs if r["db"] == dbn and r["option"] == name])
            base = base or us
            lines.append(f"| {dbn} | {name.split(' /')[0]} | {us:.1f} | {us / base - 1:+.0%} | {a.rounds} |")
    B.save("message_options_writes", {"n": a.n, "rounds": a.rounds, "runs": runs})
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--db", default="sqlite,postgres")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--updates", action="store_true", help="changed columns and before images")
    ap.add_argument("--writes", action="store_true", help="their write side alone (no bridge)")
    a = ap.parse_args()
    B.need_tools()
    runs = []
    with B.Workdir("msgopt") as w:
        az = w.add(B.Azurite(w.path / "azurite")).start()
        engines = B.engines(w, a.db, BR.Sqlite, BR.Postgres)
        if a.updates:
            return updates(a, az, w, engines)
        if a.writes:
            return writes(a, engines)
        for rd in range(a.rounds):
            for db in engines:
                order = OPTIONS[rd % len(OPTIONS):] + OPTIONS[:rd % len(OPTIONS)]
                for k, (name, extra) in enumerate(order):
                    tag = f"o{rd}{k}{db.name[0].lower()}"
                    db.create(tag)
                    db.fill(1, a.n)
                    BR.fresh_azurite(az, w.path)
                    az.sqlq("queue", "create", f"br-{tag}")  # --ops update publishes nothing
                    r = BR.drain(az, db, "batch", a.n, tag, extra)
                    r.update(option=name, round=rd)
                    runs.append(r)
                    B.log(f"{db.name} {name} round {rd + 1}: {B.drain_line(r)}, {r['messages']} messages, "
                          f"other load {r['other_load_cores']:.2f}")
    summary = B.summarise(runs, "option", [name for name, _ in OPTIONS],
                          {**B.DRAIN_FIELDS, "messages": "messages"}, "changes_s", "vs_none")
    B.save("message_options", {"n": a.n, "rounds": a.rounds, "runs": runs, "summary": summary})
    lines = ["| database | option | changes/s (median) | vs none | bridge CPU ms/1000 | db CPU ms/1000 "
             "| messages | other load (cores) |", "|---|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['db']} | {s['option']} | {s['changes_s']:,.0f} | {s['vs_none']:+.0%} | "
                     f"{s['bridge_cpu']:.0f} | {s['db_cpu']:.0f} | {s['messages']:.0f} | {s['other']:.2f} |")
    table = "\n".join(lines)
    print(table)
    if a.write_docs:
        body = (f"`bench/message_options.py --n {a.n} --rounds {a.rounds}` (issue 16): a backlog of "
                f"{a.n:,} inserts drained by `sqlq bridge --once --format batch`, without options and "
                "with each per-route option, rounds in rotating order; medians. The machine is shared "
                "(see the other-load column): differences under about 10% are noise.\n\n" + table)
        B.write_section(TITLE, body)


if __name__ == "__main__":
    main()
