#!/usr/bin/env python3
"""What the PostgreSQL capture trigger costs a write, and what variants of it would cost
(issue 15). Two measurements of the same tables, each table with its own change log:

1. Instructions (valgrind callgrind on a single-user backend, `postgres --single`, with the
   server stopped): instructions per single-row INSERT statement in its own transaction, per
   INSERT inside one large transaction, and per single-row UPDATE of a key the log holds,
   taken as the difference of two runs that differ only in the number of statements
   (start-up, warm-up and shutdown cancel out). Collected only inside the per-statement calls
   of the backend's loop (parse, analyze, plan, portal run, commit), so reading stdin does not
   count. Instruction counts do not move with the machine's load; they do not weigh cache
   misses, lock waits, the client, the kernel or the WAL writer.
2. pgbench on the running server (--pgbench): rounds with the tables in rotated order, 1 and
   8 clients of single-row INSERT transactions (and with --batch 1 client of 1,000 single-row
   INSERTs per transaction): rows/s, busy CPU of the whole machine per row (/proc/stat: the
   backend, pgbench, the WAL writer, the kernel, and whatever else runs) and CPU of the
   server's processes per row.

  bench/trigger_cost.py [--variants a,b,...] [--cases insert,insert_in_tx,update] [--n N]
                        [--profile a,b] [--keep-profiles DIR] [--role] [--notify on|off]
                        [--pgbench [--pgbench-variants a,b] [--clients 1,8] [--batch]
                         [--seconds S] [--rounds R]] [--no-callgrind]
  bench/trigger_cost.py --list

The variants are SQL applied after `sqlq setup` of the variant's table: `sqlq` is what the
sqlq binary under test installs (SQLQ_BIN, else build-bench/cli/sqlq, else build/cli/sqlq),
`main` the trigger of session 5 (one function for both triggers), the others experiments;
those marked "reference" are not correct captures, only measures of a part. --profile prints
the inclusive instructions of PostgreSQL's main functions per statement against the plain
table's (exported names only: Debian's postgres has no symbols for its static functions).
sqlq.notify is off unless --notify on: the wake-up expression is evaluated, the NOTIFY not
sent. --role writes as a role without superuser rights (EXECUTE and table rights are then
checked). Needs valgrind (bench/setup.sh installs it) and pgbench.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

COLUMNS = ("(id bigserial PRIMARY KEY, customer text NOT NULL, total numeric(12,2), "
           "note text, updated_at timestamptz NOT NULL DEFAULT now())")
NOTE = "a short note about this order"
SQLQ = B.SQLQ if "SQLQ_BIN" in os.environ or os.access(B.SQLQ, os.X_OK) else \
    B.ROOT / "build" / "cli" / "sqlq"
NOTIFY_SETTING = "off"  # --notify
ROLE = False  # --role: the writer is sqlq_app, not a superuser

NOTIFY = ("CASE WHEN (CASE current_setting('sqlq.notify', true) WHEN 'on' THEN true WHEN 'off' "
          "THEN false ELSE current_setting('max_prepared_transactions') = '0' END) THEN "
          "pg_notify('sqlq.log_{t}', '') END")
SEQ = "nextval('\"sqlq\".\"ver_{t}\"')"
LOG = "\"sqlq\".\"log_{t}\""
UPS_I = ("ON CONFLICT (\"id\") DO UPDATE SET sqlq_version = excluded.sqlq_version, sqlq_op = "
         "excluded.sqlq_op, sqlq_since = excluded.sqlq_since")
UPS_UD = ("ON CONFLICT (\"id\") DO UPDATE SET sqlq_version = excluded.sqlq_version, sqlq_op = "
          "excluded.sqlq_op")


def row_upsert(row, op, notify=True):
    """The row trigger's upsert of session 5: the version (and the wake-up) in a FROM item."""
    since = "sqlq_next.sqlq_version" if op == "I" else "NULL"
    wake = f", {NOTIFY} AS sqlq_notify" if notify else ""
    return (f"INSERT INTO {LOG} (\"id\", sqlq_version, sqlq_op, sqlq_since) SELECT {row}.\"id\", "
            f"sqlq_next.sqlq_version, '{op}', {since} FROM (SELECT {SEQ} AS sqlq_version{wake}) "
            f"sqlq_next {UPS_I if op == 'I' else UPS_UD};")


def stmt_upsert(notify=True):
    wake = f", {NOTIFY} AS sqlq_notify" if notify else ""
    return (f"INSERT INTO {LOG} (\"id\", sqlq_version, sqlq_op, sqlq_since) SELECT "
            f"sqlq_next.\"id\", sqlq_next.sqlq_version, 'I', sqlq_next.sqlq_version FROM (SELECT "
            f"sqlq_inserted.\"id\", {SEQ} AS sqlq_version{wake} FROM sqlq_inserted) sqlq_next "
            f"{UPS_I};")


def row_branches(notify=True):
    """TG_OP tests and upserts of the update and delete rows, as session 5 wrote them."""
    return (f"ELSIF TG_OP = 'DELETE' THEN {row_upsert('OLD', 'D', notify)} "
            f"ELSIF (OLD.\"id\") IS NOT DISTINCT FROM (NEW.\"id\") THEN "
            f"{row_upsert('NEW', 'U', notify)} ELSE {row_upsert('OLD', 'D', notify)} "
            f"{row_upsert('NEW', 'I', notify)} END IF;")


def values_upsert(row, op):
    """An update's or a delete's upsert as VALUES: its version is used once (since NULL)."""
    return (f"INSERT INTO {LOG} (\"id\", sqlq_version, sqlq_op, sqlq_since) VALUES "
            f"({row}.\"id\", {SEQ}, '{op}', NULL) {UPS_UD};")


def row_body_values(ret="NULL"):
    """The row function with VALUES upserts for updates and deletes, the new key's insert of a
    key-changing update with its FROM item (since = version), the wake-up once per call."""
    return (f"BEGIN IF TG_OP = 'DELETE' THEN {values_upsert('OLD', 'D')} "
            f"ELSIF (OLD.\"id\") IS NOT DISTINCT FROM (NEW.\"id\") THEN "
            f"{values_upsert('NEW', 'U')} ELSE {values_upsert('OLD', 'D')} "
            f"{row_upsert('NEW', 'I', False)} END IF; IF ({NOTIFY}) IS NULL THEN END IF; "
            f"RETURN {ret}; END")


def stmt_body_plwake(ret="OLD"):
    return (f"BEGIN {stmt_upsert(False)} IF FOUND AND ({NOTIFY}) IS NULL THEN END IF; "
            f"RETURN {ret}; END")


def function(body, name="capture_{t}"):
    return (f"CREATE OR REPLACE FUNCTION sqlq.{name}() RETURNS trigger LANGUAGE plpgsql AS "
            f"$f$ {body} $f$")


def triggers(ins="stmt", fn="capture_{t}", ins_fn=None):
    """The two triggers: UPDATE/DELETE per row; INSERT per statement (transition table) or per
    row (ins='row': one trigger for every event), or none."""
    drop = ["DROP TRIGGER IF EXISTS sqlq_capture ON {t}",
            "DROP TRIGGER IF EXISTS sqlq_capture_ins ON {t}"]
    if ins == "row":
        return drop + [f"CREATE TRIGGER sqlq_capture AFTER INSERT OR UPDATE OR DELETE ON {{t}} "
                       f"FOR EACH ROW EXECUTE FUNCTION sqlq.{fn}()"]
    return drop + [f"CREATE TRIGGER sqlq_capture AFTER UPDATE OR DELETE ON {{t}} FOR EACH ROW "
                   f"EXECUTE FUNCTION sqlq.{fn}()",
                   f"CREATE TRIGGER sqlq_capture_ins AFTER INSERT ON {{t}} REFERENCING NEW TABLE "
                   f"AS sqlq_inserted FOR EACH STATEMENT EXECUTE FUNCTION "
                   f"sqlq.{ins_fn or fn}()"]


MAIN_BODY = (f"#variable_conflict use_column\nBEGIN IF TG_LEVEL = 'STATEMENT' THEN "
             f"{stmt_upsert()} {row_branches()} RETURN NULL; END")

# name -> (description, SQL statements after `sqlq setup`; None: no setup at all)
VARIANTS = {
    "plain": ("no capture", None),
    "sqlq": ("the trigger the sqlq binary under test installs", []),
    "main": ("session 5's trigger (statement trigger for INSERT, FROM-subquery upsert)",
             [function(MAIN_BODY)] + triggers()),
    "main_nonotify": ("main without the wake-up expression (reference: what it costs)",
                      [function(f"BEGIN IF TG_LEVEL = 'STATEMENT' THEN {stmt_upsert(False)} "
                                f"{row_branches(False)} RETURN NULL; END")] + triggers()),
    "main_novarconf": ("main without #variable_conflict",
                       [function(MAIN_BODY.replace("#variable_conflict use_column\n", ""))]
                       + triggers()),
    "empty_stmt": ("reference: an INSERT statement trigger with a transition table that "
                   "does nothing", [function("BEGIN RETURN NULL; END")] + triggers()),
    "empty_row": ("reference: an AFTER INSERT row trigger that does nothing",
                  [function("BEGIN RETURN NULL; END")] + triggers("row")),
    "stmt_plain_insert": ("reference: statement trigger, plain INSERT ... SELECT into the log "
                          "(no ON CONFLICT, no subquery, since NULL, no wake-up: not a correct capture)",
                          [function(f"BEGIN IF TG_LEVEL = 'STATEMENT' THEN INSERT INTO {LOG} "
                                    f"(\"id\", sqlq_version, sqlq_op, sqlq_since) SELECT "
                                    f"sqlq_inserted.\"id\", {SEQ}, 'I', NULL FROM sqlq_inserted; "
                                    f"{row_branches()} RETURN NULL; END")] + triggers()),
    "stmt_nosub": ("reference: statement trigger, upsert without the subquery, since NULL, "
                   "no wake-up (not a correct capture)",
                   [function(f"BEGIN IF TG_LEVEL = 'STATEMENT' THEN INSERT INTO {LOG} "
                             f"(\"id\", sqlq_version, sqlq_op, sqlq_since) SELECT "
                             f"sqlq_inserted.\"id\", {SEQ}, 'I', NULL FROM sqlq_inserted "
                             f"{UPS_I}; {row_branches()} RETURN NULL; END")] + triggers()),
    "stmt_currval": ("reference: statement trigger, SELECT id, nextval(), 'I', currval() FROM "
                     "sqlq_inserted (no subquery; relies on the order a target list is "
                     "evaluated in; no wake-up: compare with main_nonotify)",
                     [function(f"BEGIN IF TG_LEVEL = 'STATEMENT' THEN INSERT INTO {LOG} "
                               f"(\"id\", sqlq_version, sqlq_op, sqlq_since) SELECT "
                               f"sqlq_inserted.\"id\", {SEQ}, 'I', currval('\"sqlq\".\"ver_{{t}}\"') "
                               f"FROM sqlq_inserted {UPS_I}; {row_branches(False)} RETURN NULL; "
                               f"END")]
                     + triggers()),
    "log_pk_only": ("reference: main with the log's (sqlq_version, key) index dropped (the "
                    "poll needs it)",
                    [function(MAIN_BODY)] + triggers() + ["DROP INDEX sqlq.ixk_log_{t}"]),
    "row_ins": ("INSERT through the row trigger (session 5's row upsert with NEW), no "
                "statement trigger",
                [function(f"BEGIN IF TG_OP = 'INSERT' THEN {row_upsert('NEW', 'I')} "
                          f"{row_branches()} RETURN NULL; END")] + triggers("row")),
    "split_fn": ("main's statement upsert in a function of its own (no TG_LEVEL test)",
                 [function(MAIN_BODY), function(f"BEGIN {stmt_upsert()} RETURN NULL; END",
                                                "capture_ins_{t}")]
                 + triggers(ins_fn="capture_ins_{t}")),
    "split_ret": ("split_fn, and the statement function returns OLD (NULL in a statement "
                  "trigger: no expression to evaluate) instead of NULL",
                  [function(MAIN_BODY), function(f"BEGIN {stmt_upsert()} RETURN OLD; END",
                                                 "capture_ins_{t}")]
                  + triggers(ins_fn="capture_ins_{t}")),
    "two_fns": ("issue 15, step 1: split_ret, and the row function (UPDATE, DELETE) without the "
                "TG_LEVEL test",
                   [function("BEGIN " + row_branches()[3:] + " RETURN NULL; END"),
                    function(f"BEGIN {stmt_upsert()} RETURN OLD; END", "capture_ins_{t}")]
                   + triggers(ins_fn="capture_ins_{t}")),
    "split_ret_nonotify": ("split_ret without the wake-up expression (reference)",
                           [function(MAIN_BODY), function(f"BEGIN {stmt_upsert(False)} RETURN OLD; "
                                                          f"END", "capture_ins_{t}")]
                           + triggers(ins_fn="capture_ins_{t}")),
    "split_ret_plwake": ("split_ret with the wake-up evaluated by plpgsql (IF (<wake-up>) IS "
                         "NULL THEN END IF: a simple expression, initialized once per "
                         "transaction) instead of in the upsert's FROM item",
                         [function(MAIN_BODY),
                          function(f"BEGIN {stmt_upsert(False)} IF ({NOTIFY}) IS NULL THEN "
                                   f"END IF; RETURN OLD; END", "capture_ins_{t}")]
                         + triggers(ins_fn="capture_ins_{t}")),
    "two_fns_wake": ("issue 15, step 2: two_fns with the wake-up evaluated by plpgsql once "
                     "per call (IF FOUND AND (<wake-up>) IS NULL THEN END IF), and updates "
                     "and deletes upserting with VALUES",
                            [function(row_body_values()),
                             function(stmt_body_plwake(), "capture_ins_{t}")]
                            + triggers(ins_fn="capture_ins_{t}")),
    "two_fns_wake_retnull": ("two_fns_wake, the statement function returning NULL",
                                    [function(row_body_values()),
                                     function(stmt_body_plwake("NULL"), "capture_ins_{t}")]
                                    + triggers(ins_fn="capture_ins_{t}")),
    "log_ff80": ("main with the log's fillfactor 80 (room for a key's next row version on its "
                 "page)", [function(MAIN_BODY)] + triggers()
                 + ["ALTER TABLE sqlq.log_{t} SET (fillfactor = 80)"]),
    "dedup_off": ("main, both log indexes WITH (deduplicate_items = off)",
                  [function(MAIN_BODY)] + triggers()
                  + ["ALTER INDEX sqlq.log_{t}_pkey SET (deduplicate_items = off)",
                     "ALTER INDEX sqlq.ixk_log_{t} SET (deduplicate_items = off)",
                     "REINDEX TABLE sqlq.log_{t}"]),
}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default="plain,sqlq,main,main_nonotify,empty_stmt,two_fns,"
                    "two_fns_wake")
    ap.add_argument("--cases", default=",".join(CASES), help="of: " + ", ".join(CASES))
    ap.add_argument("--list", action="store_true", help="list the variants and exit")
    ap.add_argument("--n", type=int, default=1000, help="statements between the two runs")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--role", action="store_true",
                    help="write as a role without superuser rights (sqlq_app, granted what "
                         "docs/capture.md says a writer needs), not as the superuser")
    ap.add_argument("--notify", choices=("on", "off"), default="off",
                    help="sqlq.notify for the measured sessions (default off)")
    ap.add_argument("--profile", default="",
                    help="variants whose functions' inclusive costs to print (vs plain)")
    ap.add_argument("--keep-profiles", help="copy the callgrind files here")
    ap.add_argument("--pgbench", action="store_true")
    ap.add_argument("--pgbench-variants", help="default: --variants")
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", action="store_true",
                    help="pgbench: also 1 client of 1,000 single-row INSERTs per transaction")
    return ap.parse_args()


# ---- set-up -------------------------------------------------------------------------------


def install(pg, v):
    """Table t_<v>, set up by sqlq and then changed by the variant's SQL."""
    t = v
    pg.psql("tc", f"CREATE TABLE t_{t} {COLUMNS}")
    sql = VARIANTS[v][1]
    if sql is None:
        return
    env = {**os.environ, "SQLQ_DB_CONNECTION": pg.odbc("tc")}
    subprocess.run([str(SQLQ), "setup", "--table", f"public.t_{t}"], env=env, check=True,
                   capture_output=True)
    if sql:
        pg.psql("tc", *[s.replace("{t}", "t_" + t) for s in sql])


# ---- callgrind ----------------------------------------------------------------------------

# The per-statement calls of PostgresMain's loop (exec_simple_query is static): everything a
# statement costs but reading it from stdin.
TOGGLES = ["StartTransactionCommand", "pg_parse_query", "pg_analyze_and_rewrite_fixedparams",
           "pg_plan_queries", "CreatePortal", "PortalDefineQuery", "PortalStart", "PortalRun",
           "PortalDrop", "CommitTransactionCommand"]


def insert_sql(table):
    return (f"INSERT INTO {table} (customer, total, note) VALUES ('customer-1', 19.90, "
            f"'{NOTE}');\n")


def script(table, case, warmup, n, start_id):
    """Statements for one run: `warmup` single-row INSERT transactions, then n statements of
    the case."""
    lines = (["SET ROLE sqlq_app;\n"] if ROLE else []) + [insert_sql(table)] * warmup
    if case == "insert":
        lines += [insert_sql(table)] * n
    elif case == "insert_in_tx":
        lines += ["BEGIN;\n"] + [insert_sql(table)] * n + ["COMMIT;\n"]
    elif case == "update":  # one existing key each, all different
        lines += [f"UPDATE {table} SET total = total + 1 WHERE id = {start_id + i};\n"
                  for i in range(n)]
    return "".join(lines)


def as_pg(cmd):
    return (["runuser", "-u", "postgres", "--"] + cmd) if os.getuid() == 0 else cmd


def callgrind(pg, work, table, case, warmup, n, start_id):
    """Instructions of one single-user backend run (the server is stopped)."""
    src = work / f"{table}-{case}-{n}.sql"
    src.write_text(script(table, case, warmup, n, start_id))
    out = work / f"{table}-{case}-{n}.cg"
    bindir = Path(B.sh(["bash", "-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1"])
                  .strip())
    cmd = as_pg(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
                + [f"--toggle-collect={f}" for f in TOGGLES]
                + [str(bindir / "postgres"), "--single", "-D", str(pg.dir / "data"),
                   "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
                   "full_page_writes=off", "-c", "max_prepared_transactions=20", "-c",
                   "search_path=public", "-c", f"sqlq.notify={NOTIFY_SETTING}", "tc"])
    with open(src) as fin:
        r = subprocess.run(cmd, stdin=fin, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m or "ERROR:" in r.stdout or "ERROR:" in r.stderr:
        first = re.search(r"ERROR:.*", r.stdout + r.stderr)
        raise RuntimeError(f"callgrind {table} {case}: "
                           f"{first.group(0) if first else r.stderr[-800:]}")
    return int(m.group(1)), out


def functions(path):
    """Inclusive instructions per function (recursion levels folded into the outermost)."""
    out = B.sh(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path])
    d = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?:(\S+?)(?:'\d+)? \[", line)
        if m:
            name = m.group(2)
            d[name] = max(d.get(name, 0), int(m.group(1).replace(",", "")))
    return d


# The functions shown per variant: inclusive instructions per statement, minus the plain
# table's (exported names only: Debian's postgres has no symbols for static functions).
SHOWN = [
    ("AfterTriggerEndQuery", "after-trigger queue at the statement's end (the trigger call)"),
    ("plpgsql_call_handler", "plpgsql call"),
    ("plpgsql_exec_trigger", "plpgsql function run"),
    ("SPI_register_trigger_data", "transition table as a named relation"),
    ("SPI_execute_plan_with_paramlist", "SPI statement (the upsert)"),
    ("GetCachedPlan", "plan cache check and locks"),
    ("ExecutorStart", "executor start-up (both statements)"),
    ("ExecInitModifyTable", "ModifyTable init (both)"),
    ("ExecInitSubqueryScan", "SubqueryScan init"),
    ("ExecInitNamedTuplestoreScan", "NamedTuplestoreScan init"),
    ("ExecInitResult", "Result init"),
    ("ExecBuildProjectionInfo", "projections built"),
    ("ExecBuildUpdateProjection", "ON CONFLICT update projection"),
    ("ExecOpenIndices", "open indexes (both)"),
    ("pg_proc_aclcheck", "EXECUTE checks of functions"),
    ("ExecutorRun", "executor run (both)"),
    ("ExecCheckIndexConstraints", "ON CONFLICT arbiter pre-check"),
    ("heap_insert", "heap inserts (both)"),
    ("heap_finish_speculative", "speculative insertion confirm"),
    ("ExecInsertIndexTuples", "index inserts (both)"),
    ("nextval_internal", "nextval (both sequences)"),
    ("tuplestore_puttupleslot", "transition table capture"),
    ("XLogInsert", "WAL inserts"),
    ("ExecutorEnd", "executor end (both)"),
    ("CommitTransactionCommand", "commit"),
    ("GetTransactionSnapshot", "snapshots"),
]

CASES = {"insert": "single-row INSERT, own transaction",
         "insert_in_tx": "INSERT inside one large transaction",
         "update": "single-row UPDATE of a logged key, own transaction"}


def measure_instructions(pg, work, names, a, keep):
    res = {}
    small = max(50, a.n // 5)
    big = small + a.n
    for case in a.cases.split(","):
        for v in names:
            table = f"t_{v}"
            start = 1  # update: ids 1.. exist from the insert cases, each updated once
            i1, f1 = callgrind(pg, work, table, case, a.warmup, small, start)
            i2, f2 = callgrind(pg, work, table, case, a.warmup, big, start + small)
            per = (i2 - i1) / (big - small)
            res.setdefault(case, {})[v] = {"per_stmt": per}
            if v in a.profile_set or v == "plain":
                d1, d2 = functions(f1), functions(f2)
                res[case][v]["functions"] = {k: (d2.get(k, 0) - d1.get(k, 0)) / (big - small)
                                             for k in set(d1) | set(d2)}
            if keep:
                for f in (f1, f2):
                    B.sh(["cp", f, keep])
            for f in (f1, f2):
                f.unlink()
            B.log(f"{case:13} {v:18} {per:10,.0f} instructions per statement")
    return res


def report_instructions(res, names):
    lines = []
    for case, title in CASES.items():
        if case not in res:
            continue
        r = res[case]
        base = r["plain"]["per_stmt"]
        lines.append(f"\n{title}: instructions per statement")
        lines.append(f"{'variant':20} {'instr':>9} {'capture':>9} {'ratio':>6}")
        for v in names:
            x = r[v]["per_stmt"]
            lines.append(f"{v:20} {x:9,.0f} {x - base:9,.0f} {base / x:6.0%}")
    prof = [v for v in names if "insert" in res and "functions" in res["insert"][v]
            and v != "plain"]
    for case in ("insert",):
        if not prof:
            break
        p = res[case]["plain"]["functions"]
        lines.append(f"\n{CASES[case]}: inclusive instructions per statement, minus plain")
        lines.append(f"{'function':34}" + "".join(f"{v[:12]:>13}" for v in prof))
        for fn, what in SHOWN:
            vals = [res[case][v]["functions"].get(fn, 0) - p.get(fn, 0) for v in prof]
            lines.append(f"{fn[:34]:34}" + "".join(f"{x:13,.0f}" for x in vals) + f"  {what}")
    return "\n".join(lines)


# ---- pgbench ------------------------------------------------------------------------------


def pgbench(pg, work, table, clients, seconds, per_txn):
    sc = work / f"pgb_{table}_{per_txn}.sql"
    ins = (f"INSERT INTO {table} (customer, total, note) VALUES ('customer-' || :client_id, "
           f"19.90, '{NOTE}');\n")
    sc.write_text(ins if per_txn == 1 else "BEGIN;\n" + ins * per_txn + "COMMIT;\n")
    busy0, srv0 = B.system_busy_s(), pg.cpu_s()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(["pgbench", "-n", "-h", "127.0.0.1", "-p", str(pg.port), "-U",
                        "sqlq_app" if ROLE else "sqlq",
                        "-f", str(sc), "-c", str(clients), "-j", str(min(clients, 2)), "-T",
                        str(seconds), "tc"], capture_output=True, text=True, timeout=seconds + 60)
    wall = time.monotonic() - t0
    busy1 = B.system_busy_s()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    srv1 = pg.cpu_s()  # waits 0.5 s for the backends to exit
    m = re.search(r"number of transactions actually processed: (\d+)", r.stdout)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"pgbench: {r.stdout[-500:]} {r.stderr[-500:]}")
    n = int(m.group(1))
    return {"tps": n / wall, "rows_s": n * per_txn / wall,
            "cpu_us_per_row": (busy1 - busy0) * 1e6 / (n * per_txn),
            "server_us_per_row": (srv1 - srv0) * 1e6 / (n * per_txn),
            "own_us_per_row": (srv1 - srv0 + client) * 1e6 / (n * per_txn)}


def measure_pgbench(pg, work, names, a):
    cases = [(int(c), 1) for c in a.clients.split(",") if c] + ([(1, 1000)] if a.batch else [])
    res = {}
    for clients, per_txn in cases:
        key = f"{clients}x{per_txn}"
        for rd in range(a.rounds):
            k = rd % len(names)
            order = names[k:] + names[:k]
            load = Path("/proc/loadavg").read_text().split()[0]
            for v in order:
                r = pgbench(pg, work, f"t_{v}", clients, a.seconds if per_txn == 1 else
                            a.seconds * 2, per_txn)
                res.setdefault(key, {}).setdefault(v, []).append(r)
                B.log(f"pgbench {key} round {rd + 1} (load {load}) {v:18} "
                      f"{r['rows_s']:8,.0f} rows/s  machine {r['cpu_us_per_row']:6.1f}  "
                      f"server {r['server_us_per_row']:6.1f}  server+pgbench "
                      f"{r['own_us_per_row']:6.1f} us CPU/row")
    return res


def report_pgbench(res, names):
    lines = []
    for key, by in res.items():
        base = by["plain"]
        lines.append(f"\npgbench {key} (clients x rows per transaction): medians of rounds; "
                     f"ratio = median of per-round ratios to plain")
        lines.append("CPU us per row (+: over plain, median of per-round differences): the "
                     "machine's (everything running), the server's processes', server + "
                     "pgbench")
        lines.append(f"{'variant':20} {'rows/s':>9} {'ratio':>6} {'machine':>8} {'+':>6} "
                     f"{'server':>8} {'+':>6} {'srv+pgb':>8} {'+':>6} {'own ratio':>9}")
        for v in names:
            rs = by[v]
            ratio = B.median([x["rows_s"] / b["rows_s"] for x, b in zip(rs, base)])
            cols = []
            for k in ("cpu_us_per_row", "server_us_per_row", "own_us_per_row"):
                cols.append(B.median([x[k] for x in rs]))
                cols.append(B.median([x[k] - b[k] for x, b in zip(rs, base)]))
            own = B.median([b["own_us_per_row"] / x["own_us_per_row"] for x, b in zip(rs, base)])
            lines.append(f"{v:20} {B.median([x['rows_s'] for x in rs]):9,.0f} {ratio:6.0%} "
                         + " ".join(f"{c:8.1f} {d:6.1f}" for c, d in zip(cols[::2], cols[1::2]))
                         + f" {own:9.0%}")
    return "\n".join(lines)


def main():
    a = parse_args()
    if a.list:
        for k, (d, _) in VARIANTS.items():
            print(f"{k:20} {d}")
        return
    names = a.variants.split(",")
    if "plain" not in names:
        names.insert(0, "plain")
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants: {', '.join(unknown)} (see --list)")
    a.profile_set = set(filter(None, a.profile.split(",")))
    if not os.access(SQLQ, os.X_OK):
        raise SystemExit(f"no sqlq binary at {SQLQ}: build first or set SQLQ_BIN")
    B.log(f"load average {' '.join(B.START_LOAD)}; sqlq {SQLQ}")
    results = {"variants": {v: VARIANTS[v][0] for v in names}}
    with B.Workdir("trigger") as w:
        os.chmod(w.path, 0o777)
        pg = w.add(B.Postgres(w.path / "pg")).start()
        pg.create_db("tc")
        global NOTIFY_SETTING, ROLE
        NOTIFY_SETTING, ROLE = a.notify, a.role
        # (a single-user backend reads no database or role settings: callgrind() passes them)
        pg.psql("postgres", f"ALTER DATABASE tc SET sqlq.notify = {a.notify}",
                "ALTER ROLE sqlq SET search_path = public")
        for v in names:
            install(pg, v)
        if a.role:
            pg.psql("tc", "CREATE ROLE sqlq_app LOGIN NOSUPERUSER",
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public "
                    "TO sqlq_app", "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO sqlq_app",
                    "GRANT USAGE ON SCHEMA sqlq TO sqlq_app",
                    "GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA sqlq TO sqlq_app",
                    "GRANT USAGE ON ALL SEQUENCES IN SCHEMA sqlq TO sqlq_app")
        if not a.no_callgrind:
            pg.stop()
            cg = w.path / "cg"
            cg.mkdir()
            os.chmod(cg, 0o777)
            if a.keep_profiles:
                Path(a.keep_profiles).mkdir(parents=True, exist_ok=True)
            results["instructions"] = measure_instructions(pg, cg, names, a, a.keep_profiles)
            print(report_instructions(results["instructions"], names), flush=True)
            pg.start()
        if a.pgbench:
            pb = (a.pgbench_variants or ",".join(names)).split(",")
            if "plain" not in pb:
                pb.insert(0, "plain")
            results["pgbench"] = measure_pgbench(pg, w.path, pb, a)
            results["load_end"] = Path("/proc/loadavg").read_text().split()[:3]
            print(report_pgbench(results["pgbench"], pb), flush=True)
    B.save("trigger_cost", results)


if __name__ == "__main__":
    main()
