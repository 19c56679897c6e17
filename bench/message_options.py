#!/usr/bin/env python3
"""Issue 16: what each per-route message option costs the bridge. The same backlog (bench/
bridge.py's table and fill) drained by `sqlq bridge --once --format batch` without options and
with each option, on SQLite and PostgreSQL; rounds alternate the order so a slow moment of the
shared machine does not land on one option. Batch format keeps the queue's share small, so the
bridge's and the database's own work show.

  bench/message_options.py [--n 20000] [--rounds 3] [--db sqlite,postgres] [--write-docs]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--db", default="sqlite,postgres")
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    B.need_tools()
    runs = []
    with B.Workdir("msgopt") as w:
        az = w.add(B.Azurite(w.path / "azurite")).start()
        engines = []
        if "sqlite" in a.db.split(","):
            engines.append(BR.Sqlite(w.path))
        if "postgres" in a.db.split(","):
            engines.append(BR.Postgres(w.add(B.Postgres(w.path / "pg")).start()))
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
                    B.log(f"{db.name} {name} round {rd + 1}: {r['changes_s']:,.0f} changes/s, bridge cpu "
                          f"{r['bridge_cpu_ms_per_1000']:.0f} ms/1000, db cpu {r['db_cpu_ms_per_1000']:.0f} "
                          f"ms/1000, {r['messages']} messages, other load {r['other_load_cores']:.2f}")
    summary = []
    for db in sorted({r["db"] for r in runs}):
        base = None
        for name, _ in OPTIONS:
            rs = [r for r in runs if r["db"] == db and r["option"] == name]
            s = {"db": db, "option": name, "runs": len(rs),
                 "changes_s": B.median([r["changes_s"] for r in rs]),
                 "bridge_cpu": B.median([r["bridge_cpu_ms_per_1000"] for r in rs]),
                 "db_cpu": B.median([r["db_cpu_ms_per_1000"] for r in rs]),
                 "messages": B.median([r["messages"] for r in rs]),
                 "other": B.median([r["other_load_cores"] for r in rs])}
            base = base or s
            s["vs_none"] = s["changes_s"] / base["changes_s"] - 1
            summary.append(s)
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
