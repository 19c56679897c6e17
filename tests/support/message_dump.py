#!/usr/bin/env python3
"""Compare what the bridge published in two test runs, message by message.

  message_dump.py normalise DUMP OUTDIR [--distinct PREFIX...] [--form PREFIX...]
      DUMP: the JSON lines the test Azurite wrote under SQLQ_TEST_MESSAGE_DUMP
      (tests/support/azurite_queue.js). Writes OUTDIR/<queue>.txt: each message's text
      (base64 decoded when the route sent base64) with its "ts" member removed, one a line,
      sorted (puts are many in flight, so arrival order is not the bridge's order). Digit runs
      in a queue name (pids, counters, $RANDOM) become '#'. Tests that kill or pause a bridge
      at random moments publish some changes twice, how many depends on timing: a queue whose
      name starts with a --distinct PREFIX keeps each distinct message once (the writes are
      the same every run); with a --form PREFIX (random writes) only the form of each message
      is kept: its members in order with each value's JSON type, each distinct form once.
  message_dump.py compare DIR_A DIR_B
      Exit 0 when both hold the same queues with byte-identical files; else names each
      difference and exits 1.
  message_dump.py check BASE_1 BASE_2 NEW
      Two runs of the old build and one of the new: a queue the old build published the same
      way twice (BASE_1 = BASE_2) must be byte-identical in NEW; a queue whose messages vary
      from run to run on the old build too (times written into rows, lengths of pids in
      reasons, which changes share a batch) must hold no message form the old build did not
      and every form both its runs had (a form: members in order, each value's JSON type).
      Exit 1 on any difference.
"""
import base64
import binascii
import collections
import json
import os
import re
import sys

TS = re.compile(rb',?"ts":"[^"]*"')
VERSION = re.compile(rb'"version":(-?[0-9]+)')
ID = re.compile(rb'"id":"[0-9a-f]{32}"')
BIG_B64 = re.compile(rb'"\$base64":"([A-Za-z0-9+/=]{1000,})"')


def unvary(bodies):
    """Versions to ranks, ids and large base64 masked (see the module's text)."""
    versions = sorted({int(v) for b in bodies for v in VERSION.findall(b)})
    rank = {v: i + 1 for i, v in enumerate(versions)}
    out = []
    for b in bodies:
        b = VERSION.sub(lambda m: b'"version":%d' % rank[int(m.group(1))], b)
        b = ID.sub(b'"id":"<id>"', b)
        b = BIG_B64.sub(lambda m: b'"$base64":"<%d chars>"' % len(m.group(1)), b)
        out.append(b)
    return out


def message_bytes(text):
    raw = text.encode("utf-8")
    if raw[:1] in (b"{", b"["):
        return raw
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw


def form(value):
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + form(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(sorted(set(form(v) for v in value))) + "]"
    return type(value).__name__


def normalise(dump, outdir, distinct_prefixes, form_prefixes):
    queues = collections.defaultdict(list)
    with open(dump, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            name = re.sub(r"[0-9]+", "#", rec["queue"])
            body = TS.sub(b"", message_bytes(rec["text"]))
            if name.startswith(tuple(form_prefixes)):
                try:
                    body = form(json.loads(body, object_pairs_hook=collections.OrderedDict)).encode()
                except ValueError:
                    body = b"(not JSON)"
            queues[name].append(body)
    os.makedirs(outdir, exist_ok=True)
    for name, bodies in queues.items():
        bodies = unvary(bodies)
        if name.startswith(tuple(form_prefixes + distinct_prefixes)):
            bodies = list(set(bodies))
        with open(os.path.join(outdir, name + ".txt"), "wb") as out:
            for b in sorted(bodies):
                out.write(b.replace(b"\n", b"\\n") + b"\n")
    print(f"{sum(len(b) for b in queues.values())} messages in {len(queues)} queues -> {outdir}")


def compare(a, b):
    fa, fb = set(os.listdir(a)), set(os.listdir(b))
    bad = 0
    for name in sorted(fa ^ fb):
        print(f"only in {a if name in fa else b}: {name}")
        bad += 1
    for name in sorted(fa & fb):
        with open(os.path.join(a, name), "rb") as x, open(os.path.join(b, name), "rb") as y:
            if x.read() != y.read():
                print(f"differs: {name}")
                bad += 1
    print(f"{len(fa & fb)} queues compared, {bad} differences")
    return 1 if bad else 0


def file_forms(path):
    forms = set()
    with open(path, "rb") as f:
        for line in f:
            try:
                forms.add(form(json.loads(line, object_pairs_hook=collections.OrderedDict)))
            except ValueError:
                forms.add(line.decode("utf-8", "replace"))
    return forms


def check(base1, base2, new):
    names = set(os.listdir(base1)) | set(os.listdir(base2)) | set(os.listdir(new))
    same = forms = bad = 0
    for name in sorted(names):
        paths = [os.path.join(d, name) for d in (base1, base2, new)]
        if not all(os.path.exists(p) for p in paths):
            print(f"missing in a run: {name}")
            bad += 1
            continue
        b1, b2, n = (open(p, "rb").read() for p in paths)
        if b1 == b2:
            ok = n == b1
            same += ok
        else:
            f1, f2, fn = (file_forms(p) for p in paths)
            ok = fn <= f1 | f2 and f1 & f2 <= fn
            forms += ok
        if not ok:
            print(f"differs: {name} ({'bytes' if b1 == b2 else 'forms'})")
            bad += 1
    print(f"{same} queues byte-identical to the old build's (the same in both its runs), "
          f"{forms} varying on the old build too with the same message forms, {bad} different")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "normalise":
        lists = {"--distinct": [], "--form": []}
        current = None
        for arg in sys.argv[4:]:
            if arg in lists:
                current = lists[arg]
            elif current is None:
                sys.exit(__doc__)
            else:
                current.append(arg)
        normalise(sys.argv[2], sys.argv[3], lists["--distinct"], lists["--form"])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit(__doc__)
