"""Shared pieces of the sqlq benchmarks (bench/*.py): private servers, measured processes,
machine and version facts, result files and docs/benchmarks.md sections.

Nothing here is a test: benchmarks are scripts, run by bench/run.sh or one by one.
"""
import base64
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("SQLQ_BENCH_BUILD", ROOT / "build-bench"))
SQLQ = Path(os.environ.get("SQLQ_BIN", BUILD / "cli" / "sqlq"))
TOOLS = Path(os.environ.get("SQLQ_BENCH_TOOLS", BUILD / "bench-tools"))
RESULTS = Path(os.environ.get("SQLQ_BENCH_RESULTS", BUILD / "bench-results"))
DOCS = ROOT / "docs" / "benchmarks.md"
SUPPORT = ROOT / "tests" / "support"
TCK = os.sysconf("SC_CLK_TCK")
START_LOAD = Path("/proc/loadavg").read_text().split()[:3]  # when the scenario started
ACCOUNT_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/"
               "K1SZFPTOtr/KBHBeksoGMGw==")


def log(*parts):
    print("[bench]", *parts, flush=True)


def need_tools():
    missing = [p for p in (SQLQ, TOOLS / "putload", TOOLS / "getload", TOOLS / "measure")
               if not os.access(p, os.X_OK)]
    if missing:
        raise SystemExit(f"missing {', '.join(map(str, missing))}: run bench/setup.sh first")


# ---- measured processes ------------------------------------------------------------------


class Run:
    """A finished process: rc, wall seconds, user/sys CPU seconds, peak RSS (KiB), output."""

    def __init__(self, cmd, rc, wall, user, sys_, maxrss_kb, out, err):
        self.cmd, self.rc, self.wall, self.user, self.sys = cmd, rc, wall, user, sys_
        self.cpu = user + sys_
        self.maxrss_kb = maxrss_kb
        self.out, self.err = out, err

    def json(self):
        """The last line of stdout that parses as a JSON object."""
        for line in reversed(self.out.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"no JSON line in the output of {self.cmd[0]}: {self.out[-300:]!r}")


def run(cmd, *, stdin=None, env=None, timeout=None, check=True):
    """Run cmd to completion under bench/measure: user/sys CPU and peak RSS of the process
    itself (Python's own wait4 would report Python's RSS: a forked child keeps its parent's
    high-water mark until exec)."""
    cmd = [str(c) for c in cmd]
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe, \
            tempfile.NamedTemporaryFile("r") as ft:
        fin = open(stdin, "rb") if isinstance(stdin, (str, Path)) else subprocess.DEVNULL
        t0 = time.monotonic()
        p = subprocess.Popen([str(TOOLS / "measure"), ft.name, *cmd], stdin=fin, stdout=fo,
                             stderr=fe, env={**os.environ, **(env or {})})
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.terminate()  # measure passes it on
            p.wait()
        wall = time.monotonic() - t0
        if fin is not subprocess.DEVNULL:
            fin.close()
        fo.seek(0)
        fe.seek(0)
        parts = (ft.read().split() + ["0", "0", "0"])[:3]
        r = Run(cmd, p.returncode, wall, int(parts[0]) / 1e6, int(parts[1]) / 1e6,
                int(parts[2]), fo.read().decode(errors="replace"),
                fe.read().decode(errors="replace"))
    if check and r.rc != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} … exited {r.rc}: {r.err[-2000:]}")
    return r


def sh(cmd, **kw):
    """Run a helper command (not measured) and return its stdout."""
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True,
                          **kw).stdout


def proc_cpu_s(pid, children=False):
    """utime+stime of a live process (and of its reaped children), in seconds."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children else 0)
    return ticks / TCK


def tree_cpu_s(root_pid):
    """CPU seconds of a process tree: the root with its reaped children (a PostgreSQL
    postmaster collects the CPU of every backend that has exited) plus every live descendant."""
    total = proc_cpu_s(root_pid, children=True)
    kids = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
                kids.setdefault(int(f[1]), []).append(int(d.name))
            except (OSError, IndexError):
                pass
    todo = list(kids.get(root_pid, []))
    while todo:
        pid = todo.pop()
        try:
            total += proc_cpu_s(pid, children=True)
        except OSError:
            continue
        todo.extend(kids.get(pid, []))
    return total


def system_busy_s():
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat."""
    f = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f[:8])
    return (user + nice + system + irq + softirq + steal) / TCK


# The CPUs of what runs beside the database rather than on it (the bridge, the queue service),
# as "1" for taskset; None: everything shares every CPU. Set by a scenario's --split-cpus.
SIDE_CPUS = None


def beside(cmd):
    """cmd run on SIDE_CPUS when set (taskset), else as it is."""
    return ["taskset", "-c", SIDE_CPUS, *cmd] if SIDE_CPUS else list(cmd)


def split_cpus():
    """This process and what it starts (the database, its writers) on CPU 0; SIDE_CPUS the
    rest: a bridge on its own machine, as in production, on a machine of 2 or more CPUs."""
    global SIDE_CPUS
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("--split-cpus needs at least 2 CPUs")
    os.sched_setaffinity(0, {cpus[0]})
    SIDE_CPUS = ",".join(str(c) for c in cpus[1:])
    log(f"database and writers on CPU {cpus[0]}; bridge and queue service on CPU {SIDE_CPUS}")


def free_port():
    return int(sh([SUPPORT / "free_port.sh"]).strip())


# ---- Azurite ------------------------------------------------------------------------------


class Azurite:
    """A private in-memory Azurite queue service. In-memory Azurite slows down sharply after
    about 50,000-100,000 messages over its lifetime (even when they are deleted), so every
    measurement gets a fresh one (restart())."""

    def __init__(self, workdir, debug_log=None):
        self.dir = Path(workdir)
        self.debug_log = debug_log
        self.proc = None

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        cmd = [ROOT / "node_modules" / ".bin" / "azurite-queue", "--queueHost", "127.0.0.1",
               "--queuePort", str(self.port), "--inMemoryPersistence", "--disableTelemetry",
               "--silent"]
        if self.debug_log:
            cmd += ["--debug", self.debug_log]
        self.out = open(self.dir / "azurite.log", "ab")
        # cwd: where Azurite would put anything it writes despite --inMemoryPersistence.
        self.proc = subprocess.Popen([str(c) for c in cmd], stdout=self.out, stderr=self.out,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     cwd=self.dir)
        self.endpoint = f"http://127.0.0.1:{self.port}/devstoreaccount1"
        self.conn = ("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
                     f"AccountKey={ACCOUNT_KEY};QueueEndpoint={self.endpoint};")
        for _ in range(300):
            try:
                urllib.request.urlopen(self.endpoint + "?comp=list", timeout=1)
            except urllib.error.HTTPError:
                break  # it answers (403 without a signature)
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("Azurite exited at start: see " + str(self.dir))
                time.sleep(0.1)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.out.close()
        self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    @property
    def pid(self):
        return self.proc.pid

    def cpu_s(self):
        return proc_cpu_s(self.pid)

    def env(self):
        return {"SQLQ_QUEUE_CONNECTION": self.conn}

    def sqlq(self, *args, stdin=None):
        return run([SQLQ, *args], stdin=stdin, env=self.env()).out

    def count(self, queue):
        return json.loads(self.sqlq("queue", "stats", queue))["approximate_count"]

    def sas_url(self, queue):
        """The queue's URL with a SAS (the queue is created)."""
        return sh(["node", ROOT / "bench" / "node" / "sas.js", self.conn, queue]).strip()

    def warm_up(self, body_file, n=1000):
        """Let Azurite's JIT warm up so the first measured client is not penalised."""
        self.sqlq("queue", "create", "warm-up")
        self.sqlq("queue", "put", "--count", str(n), "--in-flight", "16", "warm-up",
                  stdin=body_file)
        self.sqlq("queue", "delete", "warm-up")


def putload(url, body_xml, n, k):
    """The minimal load generator (bench/putload.c): N puts of a prepared body, K in flight."""
    base, sas = url.split("?", 1)
    return run([TOOLS / "putload", f"{base}/messages?{sas}", body_xml, n, k])


def putload_shared_key(az, queue, body_xml, n, k, work):
    """putload with one SharedKey signature computed here for all N identical requests (the
    date stays within Azurite's allowed skew for a benchmark's length), so Azurite checks a
    SharedKey signature per request while the client signs nothing."""
    import hashlib
    import hmac
    az.sqlq("queue", "create", queue)
    length = Path(body_xml).stat().st_size
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())
    to_sign = (f"POST\n\n\n{length}\n\napplication/xml\n\n\n\n\n\n\n"
               f"x-ms-date:{date}\nx-ms-version:2019-12-12\n"
               f"/devstoreaccount1/devstoreaccount1/{queue}/messages")
    sig = base64.b64encode(hmac.new(base64.b64decode(ACCOUNT_KEY), to_sign.encode(),
                                    hashlib.sha256).digest()).decode()
    headers = Path(work) / f"sharedkey-{queue}.txt"
    headers.write_text(f"x-ms-date: {date}\nx-ms-version: 2019-12-12\n"
                       f"Authorization: SharedKey devstoreaccount1:{sig}\n")
    return run([TOOLS / "putload", f"{az.endpoint}/{queue}/messages", body_xml, n, k, headers])


BODY_BYTES = 256


def change_body(work, nbytes=BODY_BYTES):
    """A row-mode change message of exactly nbytes of JSON (what the bridge sends), written to
    work/body.json; its path."""
    row = {"id": "1e5c50425ff0348b102e6f5f282037d3", "op": "update", "table": "orders",
           "key": {"id": 42}, "row": {"id": 42, "customer": "Zluty kun", "total": "1234.50",
                                      "note": ""},
           "version": 7, "bridge": "default", "ts": "2024-05-01T12:00:00.123Z"}
    row["row"]["note"] = "x" * (nbytes - len(json.dumps(row, separators=(",", ":"))))
    p = Path(work) / "body.json"
    p.write_text(json.dumps(row, separators=(",", ":")))
    return p


def put_body_xml(text_file, out):
    """<QueueMessage> body carrying the base64 of a file, as sqlq and the SDK send it."""
    text = base64.b64encode(Path(text_file).read_bytes()).decode()
    Path(out).write_text(f"<QueueMessage><MessageText>{text}</MessageText></QueueMessage>")
    return out


# ---- PostgreSQL ---------------------------------------------------------------------------


class MariaDB:
    """A private MariaDB server (tests/support/mariadb.sh: account sqlq, no password)."""

    def __init__(self, workdir):
        self.dir = Path(workdir)

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        sh([SUPPORT / "mariadb.sh", "start", self.dir])
        self.port = int((self.dir / "port").read_text())
        self.odbc_prefix = (self.dir / "odbc").read_text().strip()
        return self

    def stop(self):
        subprocess.run([str(SUPPORT / "mariadb.sh"), "stop", str(self.dir)], capture_output=True)

    def sql(self, db, *sql):
        cmd = ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(self.port), "-u", "sqlq",
               "-N", "-B"] + ([db] if db else [])
        return sh(cmd + ["-e", "; ".join(sql)])

    def create_db(self, name):
        self.sql(None, f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}")

    def odbc(self, db):
        return f"{self.odbc_prefix}Database={db};"


class Postgres:
    """A private PostgreSQL server (tests/support/postgres.sh: trust auth, fsync off; durable:
    PostgreSQL's own defaults, fsync and synchronous commits on)."""

    def __init__(self, workdir, durable=False, wal_level="replica", sync_commit=False):
        self.dir = Path(workdir)
        self.durable = durable
        self.wal_level = wal_level  # logical: the logical source can stream from it
        # sync_commit (fsync still off): commits write their WAL before returning, so a
        # walsender sees each at once, not at the WAL writer's next round (wal_writer_delay)
        self.sync_commit = sync_commit

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir.parent, 0o755)  # the server runs as its own user when we are root
        env = dict(os.environ, SQLQ_PG_DURABLE="1" if self.durable else "0",
                   SQLQ_PG_WAL_LEVEL=self.wal_level,
                   SQLQ_PG_SYNC_COMMIT="1" if self.sync_commit else "0")
        sh([SUPPORT / "postgres.sh", "start", self.dir], env=env)
        self.port = int((self.dir / "port").read_text())
        self.odbc_prefix = (self.dir / "odbc").read_text().strip()
        return self

    def stop(self):
        subprocess.run([str(SUPPORT / "postgres.sh"), "stop", str(self.dir)],
                       capture_output=True)

    def psql(self, db, *sql, quiet=True):
        cmd = ["psql", "-X", "-v", "ON_ERROR_STOP=1", "-At", "-h", "127.0.0.1", "-p",
               str(self.port), "-U", "sqlq", "-d", db]
        for s in sql:
            cmd += ["-c", s]
        return sh(cmd)

    def create_db(self, name):
        self.psql("postgres", f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}")

    def odbc(self, db):
        return f"{self.odbc_prefix}Database={db};"

    @property
    def postmaster_pid(self):
        return int((self.dir / "data" / "postmaster.pid").read_text().split()[0])

    def cpu_s(self):
        """CPU seconds of every server process so far. Waits half a second first: a backend
        whose client just left takes a moment to exit and be reaped, and until then its CPU
        shows up nowhere."""
        time.sleep(0.5)
        return tree_cpu_s(self.postmaster_pid)

    @property
    def log_file(self):
        return self.dir / "server.log"

    def version(self):
        return self.psql("postgres", "SHOW server_version").strip()


def sqlite_odbc(path):
    return f"Driver={{SQLite3}};Database={path};Timeout=5000;"


# ---- facts ----------------------------------------------------------------------------------


def machine():
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    return {"cpu": cpu, "nproc": os.cpu_count(), "mem_gib": round(mem_kb / 1048576, 1),
            "kernel": os.uname().release,
            "load": Path("/proc/loadavg").read_text().split()[:3]}


def _try(cmd, pattern=r"(\S+)"):
    try:
        m = re.search(pattern, sh(cmd))
        return m.group(1) if m else "?"
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _npm_version(name):
    try:
        return json.loads((ROOT / "node_modules" / name / "package.json").read_text())["version"]
    except OSError:
        return "?"


def versions():
    sha = _try(["git", "-C", ROOT, "rev-parse", "--short=10", "HEAD"])
    version = _try([SQLQ, "--version"], r"sqlq (\S+)")
    # The file the benchmarks write does not make the measured code dirty.
    dirty = _try(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":(exclude)docs/benchmarks.md"], r"(\S)")
    return {
        "sqlq": f"{version} (git {sha}"
                f"{', with uncommitted changes in the tree' if dirty != '?' else ''})",
        "build": _try(["grep", "CMAKE_BUILD_TYPE:", SQLQ.parent.parent / "CMakeCache.txt"],
                      r"=(\S+)"),
        "azurite": _npm_version("azurite"),
        "node_sdk": _npm_version("@azure/storage-queue"),
        "node": _try(["node", "--version"]),
        "postgresql": _try(["psql", "--version"], r"(\d+\.\d+)"),
        "sqlite": _try(["sqlite3", "--version"]),
        "libcurl": _try(["curl", "--version"], r"libcurl/(\S+)"),
        "wrk": _try(["dpkg-query", "-W", "-f=${Version}", "wrk"], r"(\S+)"),
        "psqlodbc": _try(["dpkg-query", "-W", "-f=${Version}", "odbc-postgresql"], r"(\S+)"),
        "sqliteodbc": _try(["dpkg-query", "-W", "-f=${Version}", "libsqliteodbc"], r"(\S+)"),
    }


def facts_lines(extra=""):
    m, v = machine(), versions()
    return (f"- Machine: {m['cpu']}, {m['nproc']} cores, {m['mem_gib']} GiB, Linux "
            f"{m['kernel']}; load average at the start {' '.join(START_LOAD)}{extra}\n"
            f"- Versions: sqlq {v['sqlq']}, {v['build']} build; Azurite {v['azurite']} "
            f"(queue service, in memory); @azure/storage-queue {v['node_sdk']} on Node "
            f"{v['node']}; PostgreSQL {v['postgresql']} (psqlODBC {v['psqlodbc']}); SQLite "
            f"{v['sqlite']} (sqliteodbc {v['sqliteodbc']}); libcurl {v['libcurl']}; wrk "
            f"{v['wrk']}\n- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")


# ---- numbers ---------------------------------------------------------------------------------


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def pctl(xs, p):
    """Nearest-rank percentile."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs) + 0.5)) - 1))]


def engines(w, dbs, sqlite, postgres):
    """The databases of a --db list (comma-separated: sqlite, postgres) in a Workdir w: sqlite(work
    path) and postgres(a private PostgreSQL server, started)."""
    out = []
    if "sqlite" in dbs.split(","):
        out.append(sqlite(w.path))
    if "postgres" in dbs.split(","):
        out.append(postgres(w.add(Postgres(w.path / "pg")).start()))
    return out


# A drain's medians: summary name -> key of a run of bench/bridge.py's drain.
DRAIN_FIELDS = {"changes_s": "changes_s", "bridge_cpu": "bridge_cpu_ms_per_1000",
                "db_cpu": "db_cpu_ms_per_1000", "other": "other_load_cores"}


def drain_line(r):
    """A drain's result for a log line: changes/s, bridge and database CPU per 1000 changes."""
    return (f"{r['changes_s']:,.0f} changes/s, bridge cpu {r['bridge_cpu_ms_per_1000']:.0f} ms/1000, "
            f"db cpu {r['db_cpu_ms_per_1000']:.0f} ms/1000")


def summarise(runs, by, names, fields, base_field, vs_name):
    """Medians per database (sorted) and variant (a run's `by`, in the order of names): each a
    dict of db, by, runs (how many), the median of every run key in fields (summary name -> run
    key), and vs_name: its base_field against the first variant's (+0.05: 5% more)."""
    summary = []
    for db in sorted({r["db"] for r in runs}):
        base = None
        for name in names:
            rs = [r for r in runs if r["db"] == db and r[by] == name]
            s = {"db": db, by: name, "runs": len(rs)}
            s.update({k: median([r[f] for r in rs]) for k, f in fields.items()})
            base = base or s
            s[vs_name] = s[base_field] / base[base_field] - 1
            summary.append(s)
    return summary


def n_(x, digits=0):
    return f"{x:,.{digits}f}"


# ---- results and docs ------------------------------------------------------------------------


def save(name, data):
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {**data, "machine": machine(), "versions": versions(),
            "quick": "--quick" in sys.argv, "argv": sys.argv[1:],
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=1))
    log(f"results in {RESULTS / (name + '.json')}")


def load(name):
    p = RESULTS / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


KEPT = "<!-- Earlier runs and findings: kept as they are when a script rewrites this section. -->"


def write_section(title, body):
    """Replace the '## title' section of docs/benchmarks.md (up to the next '## ' heading),
    or append it. What follows the KEPT line in the old section (earlier runs, findings taken
    apart by hand) stays, after the new body."""
    old = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    section = f"## {title}\n\n{body.strip()}\n\n"
    pat = re.compile(r"^## " + re.escape(title) + r"\n.*?(?=^## |\Z)", re.S | re.M)
    m = pat.search(old)
    if m and KEPT in m.group(0):
        section += m.group(0)[m.group(0).index(KEPT):].rstrip("\n") + "\n\n"
    new = pat.sub(lambda _: section, old, count=1) if m else \
        old.rstrip("\n") + "\n\n" + section
    DOCS.write_text(new.rstrip("\n") + "\n")
    log(f"wrote the '{title}' section of {DOCS}")


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def write_docs(title, body):
    """Replace a scenario's section, then the Summary at the top: only when this machine holds
    results of every scenario (a Summary from some would say the others were never run and drop
    their figures, which the sections below still show)."""
    write_section(title, body)
    import summary  # bench/summary.py (imported here: it imports this module)
    missing = [name for name, _ in summary.SCENARIOS if not load(name)]
    if missing:
        log(f"Summary not rewritten: no results here for {', '.join(missing)} "
            f"(bench/run.sh runs them all)")
        return
    summary.write()


class Workdir:
    """A temporary directory that is removed at exit, with servers stopped first."""

    def __init__(self, prefix):
        self.path = Path(tempfile.mkdtemp(prefix=f"sqlq-bench-{prefix}-"))
        self.servers = []

    def __enter__(self):
        signal.signal(signal.SIGTERM, _interrupt)
        return self

    def add(self, server):
        self.servers.append(server)
        return server

    def __exit__(self, *exc):
        for s in reversed(self.servers):
            try:
                s.stop()
            except Exception as e:  # keep cleaning up
                log(f"stopping {type(s).__name__}: {e}")
        if not os.environ.get("SQLQ_BENCH_KEEP"):
            shutil.rmtree(self.path, ignore_errors=True)
        return False
