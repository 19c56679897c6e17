#!/usr/bin/env python3
"""Issue 16 item 5: what keying a table by a unique index (`--key-columns`) costs the bridge
against the same table keyed by its primary key. bench/bridge.py's table and fill; the keyed
variant has no primary key, `id` NOT NULL with a unique index, and `sqlq setup --key-columns
id`. Drained by `sqlq bridge --once --format batch` (without the flag: the change log's key);
rounds alternate the order. The per-poll key check reads the unique index from the catalog
instead of the primary key; the poll joins the log to the table through the unique index.

  bench/key_columns.py [--n 20000] [--rounds 3] [--db sqlite,postgres] [--write-docs]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402
import bridge as BR  # noqa: E402

TITLE = "Key columns (issue 16)"
VARIANTS = ["primary key", "--key-columns id (unique index)"]


class KeyedSqlite(BR.Sqlite):
    def create(self, tag, keyed=False):
        path = self.work / f"{tag}.db"
        path.unlink(missing_ok=True)
        ddl = BR.SQLITE_TABLE if not keyed else BR.SQLITE_TABLE.replace(
            "id INTEGER PRIMARY KEY", "id INTEGER NOT NULL")
        B.sh(["sqlite3", path, ddl] + (["CREATE UNIQUE INDEX orders_id ON orders (id)"] if keyed else []))
        self.path, self.conn = path, B.sqlite_odbc(path)
        B.run([B.SQLQ, "setup", "--db", self.conn, "--table", "orders"] +
              (["--key-columns", "id"] if keyed else []))


class KeyedPostgres(BR.Postgres):
    def create(self, tag, keyed=False):
        self.pg.create_db(tag)
        ddl = BR.PG_TABLE if not keyed else BR.PG_TABLE.replace(
            "id bigint PRIMARY KEY", "id bigint NOT NULL")
        self.pg.psql(tag, ddl)
        if keyed:
            self.pg.psql(tag, "CREATE UNIQUE INDEX orders_id ON orders (id)")
        self.tag, self.conn = tag, self.pg.odbc(tag)
        B.run([B.SQLQ, "setup", "--db", self.conn, "--table", "orders"] +
              (["--key-columns", "id"] if keyed else []))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--db", default="sqlite,postgres")
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    B.need_tools()
    runs = []
    with B.Workdir("keycols") as w:
        az = w.add(B.Azurite(w.path / "azurite")).start()
        engines = B.engines(w, a.db, KeyedSqlite, KeyedPostgres)
        for rd in range(a.rounds):
            for db in engines:
                order = VARIANTS if rd % 2 == 0 else VARIANTS[::-1]
                for k, name in enumerate(order):
                    tag = f"k{rd}{k}{db.name[0].lower()}"
                    db.create(tag, keyed=name != VARIANTS[0])
                    db.fill(1, a.n)
                    BR.fresh_azurite(az, w.path)
                    r = BR.drain(az, db, "batch", a.n, tag)
                    r.update(variant=name, round=rd)
                    runs.append(r)
                    B.log(f"{db.name} {name} round {rd + 1}: {B.drain_line(r)}, other load "
                          f"{r['other_load_cores']:.2f}")
    summary = B.summarise(runs, "variant", VARIANTS, B.DRAIN_FIELDS, "changes_s", "vs_pk")
    B.save("key_columns", {"n": a.n, "rounds": a.rounds, "runs": runs, "summary": summary})
    lines = ["| database | key | changes/s (median) | vs primary key | bridge CPU ms/1000 | "
             "db CPU ms/1000 | other load (cores) |", "|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['db']} | {s['variant']} | {s['changes_s']:,.0f} | {s['vs_pk']:+.0%} | "
                     f"{s['bridge_cpu']:.0f} | {s['db_cpu']:.0f} | {s['other']:.2f} |")
    table = "\n".join(lines)
    print(table)
    if a.write_docs:
        body = (f"`bench/key_columns.py --n {a.n} --rounds {a.rounds}` (issue 16 item 5): a backlog "
                f"of {a.n:,} inserts drained by `sqlq bridge --once --format batch`, the table keyed "
                "by its primary key and, without one, by a unique index (`sqlq setup --key-columns "
                "id`; the bridge without the flag); rounds in alternating order; medians. The "
                "machine is shared (see the other-load column): differences under about 10% are "
                "noise.\n\n" + table)
        B.write_section(TITLE, body)


if __name__ == "__main__":
    main()
