#!/usr/bin/env python3
"""Scenarios 1 and 2: Azurite's own Put Message ceiling on this machine, and sqlq enqueueing
against it and against the official Node SDK, side by side in one run.

For every in-flight level K and round, a fresh in-memory Azurite (warmed up) takes, in an order
that rotates per round:
  putload  bench/putload.c (libcurl multi): N puts of a prepared body to a SAS URL, nothing
           signed or parsed per request;
  wrk      Debian's wrk, one thread, K connections, a fixed duration, the same body and URL;
  sqlq     sqlq queue put --count N --in-flight K (SharedKey signing, base64, full client);
  node     bench/node/enqueue.js: QueueClient.sendMessage from K async loops (the SDK).
The ceiling of a round is the faster of the two minimal generators. Every client gets a fresh
queue of its own and is checked: the queue must hold exactly N messages afterwards (wrk: no
error status).

  bench/ceiling.py [--quick] [--write-docs] [--n N] [--rounds R] [--in-flight 1,4,16,64]
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

BODY_BYTES = B.BODY_BYTES
TITLE = "Ceiling and enqueue"


def body_files(work):
    """A 256-byte JSON change (what the bridge sends) and its <QueueMessage> XML."""
    body = B.change_body(work, BODY_BYTES)
    return body, B.put_body_xml(body, work / "body.xml")


def one(az, client, k, n, body, xml, qn):
    q = f"enq-{client}-{qn}"
    a0 = az.cpu_s()
    if client == "putload":
        r = B.putload(az.sas_url(q), xml, n, k)
        secs = r.json()["seconds"]
    elif client == "putload-sk":
        r = B.putload_shared_key(az, q, xml, n, k, xml.parent)
        secs = r.json()["seconds"]
    elif client == "sqlq":
        az.sqlq("queue", "create", q)
        r = B.run([B.SQLQ, "queue", "put", "--count", n, "--in-flight", k, q], stdin=body,
                  env=az.env())
        secs = r.json()["seconds"]
    else:
        r = B.run(["node", B.ROOT / "bench" / "node" / "enqueue.js", az.conn, q, n, k, body])
        secs = r.json()["seconds"]
        loop_cpu = r.json()["cpu_s"]
    az_cpu = az.cpu_s() - a0
    stored = az.count(q)
    if stored != n:
        raise RuntimeError(f"{client} K={k}: the queue holds {stored} of {n} messages")
    out = {"client": client, "k": k, "n": n, "seconds": secs, "msg_s": n / secs,
           "cpu_s": r.cpu, "cpu_ms_per_msg": r.cpu * 1000 / n, "rss_mib": r.maxrss_kb / 1024,
           "azurite_cpu_ms_per_msg": az_cpu * 1000 / n}
    if client == "node":
        out["loop_cpu_ms_per_msg"] = loop_cpu * 1000 / n  # the send loop only, no start-up
    return out


def wrk(az, k, xml, secs, qn):
    url = az.sas_url(f"enq-wrk-{qn}")
    a0 = az.cpu_s()
    base, sas = url.split("?", 1)
    r = B.run(["wrk", "-t1", f"-c{k}", f"-d{secs}s", "--timeout", "30s", "-s",
               B.ROOT / "bench" / "put.lua", f"{base}/messages?{sas}"],
              env={"WRK_BODY_FILE": str(xml)})
    az_cpu = az.cpu_s() - a0
    j = r.json()
    if j["non201"] or j["errors"]:
        raise RuntimeError(f"wrk K={k}: {j}")
    n = max(1, j["requests"])
    return {"client": "wrk", "k": k, "n": n, "seconds": j["duration_us"] / 1e6,
            "msg_s": n / (j["duration_us"] / 1e6), "cpu_s": r.cpu,
            "cpu_ms_per_msg": r.cpu * 1000 / n, "rss_mib": r.maxrss_kb / 1024,
            "azurite_cpu_ms_per_msg": az_cpu * 1000 / n}


def startup_cost(az, body):
    """CPU and wall of `sqlq queue put` putting one message: the CLI's fixed cost."""
    az.sqlq("queue", "create", "enq-startup")
    runs = [B.run([B.SQLQ, "queue", "put", "enq-startup"], stdin=body, env=az.env())
            for _ in range(5)]
    return {"cpu_ms": B.median([r.cpu for r in runs]) * 1000,
            "wall_ms": B.median([r.wall for r in runs]) * 1000}


def add_ceilings(runs):
    """The ceiling of a round: the fastest of the minimal generators (putload and wrk over a
    SAS URL, putload with one pre-computed SharedKey signature)."""
    for k, rd in sorted({(r["k"], r["round"]) for r in runs}):
        gens = [r for r in runs if r["k"] == k and r["round"] == rd
                and r["client"] in ("putload", "wrk", "putload-sk")]
        best = max(gens, key=lambda r: r["msg_s"])
        runs.append({**best, "client": "ceiling", "from": best["client"]})


def summarise(runs, levels):
    out = {}
    for k in levels:
        row = {}
        for c in ("ceiling", "putload", "wrk", "putload-sk", "sqlq", "node"):
            rs = [r for r in runs if r["k"] == k and r["client"] == c]
            if rs:
                row[c] = {key: B.median([r[key] for r in rs]) for key in rs[0]
                          if isinstance(rs[0][key], float)}
        rounds = sorted({r["round"] for r in runs if r["k"] == k})

        def ratio(a, b, key):
            xs = []
            for rd in rounds:
                ra = [r for r in runs if r["k"] == k and r["round"] == rd and r["client"] == a]
                rb = [r for r in runs if r["k"] == k and r["round"] == rd and r["client"] == b]
                if ra and rb:
                    xs.append(ra[0][key] / rb[0][key])
            return B.median(xs)
        row["sqlq_share_of_ceiling"] = ratio("sqlq", "ceiling", "msg_s")
        row["node_share_of_ceiling"] = ratio("node", "ceiling", "msg_s")
        row["sqlq_cpu_vs_node"] = ratio("sqlq", "node", "cpu_ms_per_msg")
        row["sqlq_share_per_round"] = [
            r["msg_s"] / c["msg_s"] for r in runs for c in runs
            if r["k"] == k and c["k"] == k and r["round"] == c["round"]
            and r["client"] == "sqlq" and c["client"] == "ceiling"]
        out[str(k)] = row
    return out


def table(summary, levels):
    lines = ["| in flight | putload msg/s | wrk msg/s | putload SharedKey msg/s | ceiling msg/s | "
             "sqlq msg/s | sqlq share "
             "of ceiling | Node SDK msg/s | Node share | sqlq CPU ms/msg | Node CPU ms/msg (send "
             "loop) | "
             "sqlq CPU / Node CPU | peak RSS sqlq / Node (MiB) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in levels:
        s = summary[str(k)]
        p, w, c, q, nd = s["putload"], s["wrk"], s["ceiling"], s["sqlq"], s["node"]
        sk = s["putload-sk"]
        lines.append(
            f"| {k} | {B.n_(p['msg_s'])} | {B.n_(w['msg_s'])} | {B.n_(sk['msg_s'])} | "
            f"{B.n_(c['msg_s'])} | "
            f"{B.n_(q['msg_s'])} | **{s['sqlq_share_of_ceiling']:.0%}** "
            f"({', '.join(f'{x:.0%}' for x in s['sqlq_share_per_round'])}) | "
            f"{B.n_(nd['msg_s'])} | {s['node_share_of_ceiling']:.0%} | "
            f"{q['cpu_ms_per_msg']:.3f} | {nd['cpu_ms_per_msg']:.3f} "
            f"({nd['loop_cpu_ms_per_msg']:.3f}) | "
            f"**1/{1 / s['sqlq_cpu_vs_node']:.0f}** | {q['rss_mib']:.1f} / {nd['rss_mib']:.0f} |")
    return "\n".join(lines)


def targets(res):
    """Targets (reached or not) and key figures for the summary."""
    s, out, figs = res["summary"], [], []
    if "16" in s:
        share, cpu = s["16"]["sqlq_share_of_ceiling"], s["16"]["sqlq_cpu_vs_node"]
        out.append({"target": "Enqueue >= 95% of the ceiling at 16 in flight",
                    "figure": f"{share:.0%} ({B.n_(s['16']['sqlq']['msg_s'])} vs "
                              f"{B.n_(s['16']['ceiling']['msg_s'])} msg/s)",
                    "reached": share >= 0.95})
        out.append({"target": "Enqueue CPU per message <= 1/10 of the Node SDK's (16 in flight)",
                    "figure": f"1/{1 / cpu:.0f} ({s['16']['sqlq']['cpu_ms_per_msg']:.3f} vs "
                              f"{s['16']['node']['cpu_ms_per_msg']:.3f} ms)",
                    "reached": cpu <= 0.1})
    for k in res["levels"]:
        r = s[str(k)]
        figs.append(f"Enqueue at {k} in flight: sqlq {r['sqlq_share_of_ceiling']:.0%} of the "
                    f"ceiling ({B.n_(r['ceiling']['msg_s'])} msg/s), Node SDK "
                    f"{r['node_share_of_ceiling']:.0%}; sqlq CPU 1/{1 / r['sqlq_cpu_vs_node']:.0f} "
                    f"of the SDK's; peak RSS {r['sqlq']['rss_mib']:.0f} vs "
                    f"{r['node']['rss_mib']:.0f} MiB")
    return out, figs


def docs(res, args_line):
    s, lv = res["summary"], res["levels"]
    k16 = s.get("16")
    target = ""
    if k16:
        share, cpu = k16["sqlq_share_of_ceiling"], k16["sqlq_cpu_vs_node"]
        target = (f"Targets at 16 in flight: sqlq at **{share:.0%}** of the ceiling (target "
                  f">= 95%: {'reached' if share >= 0.95 else 'not reached'}); CPU per message "
                  f"**1/{1 / cpu:.0f}** of the Node SDK's (target <= 1/10: "
                  f"{'reached' if cpu <= 0.1 else 'not reached'}).")
    st = res["startup"]
    return f"""Scenarios 1 and 2. Azurite's own limit for Put Message on this machine, and sqlq's
enqueue measured against it and against the official Node SDK in the same run: for every
in-flight level and round a fresh in-memory Azurite (warmed up with 1,000 puts) takes
{res['n']:,} messages of {BODY_BYTES} bytes (base64 on the wire) from each client in turn, each
into its own new queue, in an order that rotates between rounds; every queue is checked to
hold exactly {res['n']:,} messages afterwards. Figures are medians over {res['rounds']} rounds;
the share of the ceiling is computed per round (same Azurite, minutes apart) and the per-round
values are shown in brackets.

- **putload**: `bench/putload.c`, libcurl multi, K kept-alive connections, the same prepared
  body POSTed N times to a SAS URL: nothing signed, encoded or parsed per request.
- **wrk**: `wrk -t1 -cK -d{res['wrk_seconds']}s -s bench/put.lua` on the same kind of URL
  (Debian's wrk; a fixed duration rather than a count, so about as many messages).
- **putload SharedKey**: putload again, with one SharedKey `Authorization` computed before the
  run and sent with every (identical) request: Azurite verifies a SharedKey signature per
  request, as for sqlq, while the client signs nothing. Azurite spends less CPU on a SharedKey
  request than on a SAS one, so this is the fair ceiling for a SharedKey client.
- The **ceiling** of a round is the fastest of these three.
- **sqlq**: `sqlq queue put --count N --in-flight K QUEUE < body.json` (SharedKey signing per
  request, base64, response parsing: the same client code the bridge uses).
- **Node SDK**: `bench/node/enqueue.js`, `QueueClient.sendMessage` from K async loops.

{B.facts_lines()}- Command: `{args_line}`

{table(s, lv)}

{target}

CPU is user+system time of the whole client process (from `wait4` in `bench/measure`,
start-up included) per message, and the target compares these; in brackets, the Node SDK's send
loop alone (`process.cpuUsage()` around it: module loading excluded, about 0.3 s per process).
Peak RSS is the process's maximum resident set. The CLI adds little: `sqlq queue put` of one
message takes {st['cpu_ms']:.1f} ms CPU and {st['wall_ms']:.0f} ms wall in all (process start,
configuration, connection), which is
{st['cpu_ms'] / (s['16']['sqlq']['cpu_ms_per_msg'] * res['n']) if '16' in s else 0:.1%} of the
CPU of a {res['n']:,}-message run at 16 in flight: a C driver linking `sqlq_queue` directly
would save no more than that, so the CLI is what is measured.
Client and Azurite share the machine's two cores: every CPU millisecond a client spends is
taken from Azurite, which is why a cheaper client also gets closer to the ceiling here. Against
real Azure the server runs elsewhere and the CPU per message is the figure that carries over.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer messages, rounds and levels")
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--n", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--in-flight", default=None)
    a = ap.parse_args()
    n = a.n or (2000 if a.quick else 5000)
    rounds = a.rounds or (1 if a.quick else 3)
    levels = [int(x) for x in (a.in_flight or ("1,16" if a.quick else "1,4,16,64")).split(",")]
    wrk_secs = max(1, round(n / 2500))  # about as many messages as the other clients
    B.need_tools()
    runs = []
    with B.Workdir("ceiling") as w:
        body, xml = body_files(w.path)
        az = w.add(B.Azurite(w.path / "azurite"))
        az.start()
        startup = startup_cost(az, body)
        qn = 0
        for k in levels:
            for rd in range(rounds):
                az.restart()
                az.warm_up(body)
                clients = ["putload", "sqlq", "wrk", "node", "putload-sk"]
                clients = clients[rd % 5:] + clients[:rd % 5]
                for c in clients:
                    qn += 1
                    r = wrk(az, k, xml, wrk_secs, qn) if c == "wrk" else \
                        one(az, c, k, n, body, xml, qn)
                    r["round"] = rd
                    runs.append(r)
                    B.log(f"K={k} round {rd + 1}: {c:8s} {r['msg_s']:8.0f} msg/s "
                          f"cpu {r['cpu_ms_per_msg']:.3f} ms/msg rss {r['rss_mib']:.1f} MiB "
                          f"azurite {r['azurite_cpu_ms_per_msg']:.3f} ms/msg")
    add_ceilings(runs)
    res = {"n": n, "rounds": rounds, "levels": levels, "wrk_seconds": wrk_secs,
           "startup": startup, "runs": runs, "summary": summarise(runs, levels)}
    res["targets"], res["figures"] = targets(res)
    B.save("ceiling", res)
    print(table(res["summary"], levels))
    if a.write_docs:
        cmd = "bench/ceiling.py" + (" --quick" if a.quick else "") + \
            (f" --n {a.n}" if a.n else "") + (f" --rounds {a.rounds}" if a.rounds else "")
        B.write_docs(TITLE, docs(res, cmd))


if __name__ == "__main__":
    main()
