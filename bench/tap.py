"""A passive tap on the queue service's port: tcpdump writes what passes on the loopback
interface to a file during a run; after it, each HTTP/1.1 exchange is taken out of the capture
(TCP reassembled per connection, requests paired with their responses in order) with the
kernel's timestamp of its first request byte and of its first response byte.

Nothing is added to the path of a request: tcpdump reads copies of the packets from the kernel
(libpcap's memory-mapped ring) and writes them to a file; the cost is tcpdump's own CPU and the
kernel's copy of each packet into the ring, both measured by bench/latency.py (--tap-cost).

Used by bench/latency.py for "visible": a Put Message answered 201 is visible to the next Get
Messages (put with visibility timeout 0), and Azurite writes the 201 after the message is in
its store, so the timestamp of the response's first byte is when the message became visible
(to within Azurite's writing of the answer), late by nothing the tap adds.

  python3 bench/tap.py FILE.pcap PORT   (prints a summary of the exchanges, for checking)
"""
import base64
import bisect
import json
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

STOP_WAIT_S = 2.0  # > tcpdump's ring timeout (1000 ms)
LINKTYPES = {1: 14, 113: 16, 276: 20, 0: 4}  # EN10MB (lo), LINUX_SLL, LINUX_SLL2, NULL


def tcpdump_path():
    return shutil.which("tcpdump") or next(
        (p for p in ("/usr/bin/tcpdump", "/usr/sbin/tcpdump") if Path(p).exists()), None)


class Tap:
    """tcpdump on lo for one TCP port, writing to `path` until stop()."""

    def __init__(self, path, port, buffer_kib=32768):
        self.path, self.port = Path(path), port
        exe = tcpdump_path()
        if not exe:
            raise SystemExit("tcpdump is missing: run bench/setup.sh (apt-get install tcpdump)")
        # -Z root: keep the privileges to write into our work directory; -B: a ring large
        # enough that a burst is not dropped (the drop count is checked at stop); -s 0: whole
        # packets (the request bodies are needed); -n: no name look-ups.
        self.err = open(self.path.with_suffix(".err"), "wb")
        self.proc = subprocess.Popen(
            [exe, "-i", "lo", "-n", "-s", "0", "-B", str(buffer_kib), "-Z", "root", "-w",
             str(self.path), f"tcp port {port}"],
            stdout=subprocess.DEVNULL, stderr=self.err, stdin=subprocess.DEVNULL)
        # tcpdump says "listening on lo" once the capture is open.
        for _ in range(100):
            if b"listening on" in self.path.with_suffix(".err").read_bytes():
                break
            if self.proc.poll() is not None:
                raise RuntimeError("tcpdump exited: "
                                   + self.path.with_suffix(".err").read_text(errors="replace"))
            time.sleep(0.05)
        self.stats = {}

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        """Stop the capture; its counters (captured, dropped by the kernel)."""
        if self.proc.poll() is None:
            # libpcap hands tcpdump the kernel's ring a block at a time, when the block is full
            # or after tcpdump's timeout of 1 s; a block not handed over at SIGINT is lost.
            time.sleep(STOP_WAIT_S)
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        text = self.path.with_suffix(".err").read_text(errors="replace")
        for key, pat in (("captured", r"(\d+) packets? captured"),
                         ("dropped", r"(\d+) packets? dropped by kernel")):
            m = re.search(pat, text)
            self.stats[key] = int(m.group(1)) if m else None
        return self.stats


# ---- reading the capture --------------------------------------------------------------------


def packets(path):
    """(timestamp s, src, sport, dst, dport, seq, flags, payload) of each IPv4 TCP packet."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        return
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError(f"{path}: not a pcap file")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(e + "I", data[20:24])[0] & 0xFFFFFFF
    if linktype not in LINKTYPES:
        raise ValueError(f"{path}: link type {linktype} not handled")
    lh = LINKTYPES[linktype]
    pos, rec = 24, struct.Struct(e + "IIII")
    div = 1e9 if nano else 1e6
    while pos + 16 <= len(data):
        sec, frac, incl, _ = rec.unpack_from(data, pos)
        pkt = data[pos + 16:pos + 16 + incl]
        pos += 16 + incl
        if linktype == 1 and pkt[12:14] != b"\x08\x00":
            continue
        if linktype == 113 and pkt[14:16] != b"\x08\x00":
            continue
        if linktype == 276 and pkt[0:2] != b"\x08\x00":
            continue
        ip = pkt[lh:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        off = (tcp[12] >> 4) * 4
        yield (sec + frac / div, ip[12:16], sport, ip[16:20], dport, seq, tcp[13], tcp[off:])


class Stream:
    """One direction of a TCP connection: its bytes in order, with the capture time of each
    segment (a byte's time is its segment's)."""

    def __init__(self):
        self.base = None
        self.segs = []  # (offset, ts, bytes)

    def add(self, ts, seq, flags, payload):
        if flags & 0x02:  # SYN: data starts at seq + 1
            self.base = (seq + 1) & 0xFFFFFFFF
            return
        if not payload:
            return
        if self.base is None:  # the connection began before the capture
            self.base = seq
        self.segs.append((((seq - self.base) & 0xFFFFFFFF), ts, payload))

    def assemble(self):
        """(bytes, starts, times): the contiguous stream from offset 0; a retransmitted range
        keeps the time it was first seen; the stream ends at the first gap."""
        out, starts, times, end = bytearray(), [], [], 0
        for off, ts, p in sorted(self.segs, key=lambda s: (s[0], s[1])):
            if off > end:
                break  # a gap (lost from the capture): nothing after it is trusted
            if off + len(p) <= end:
                continue
            p = p[end - off:]
            starts.append(end)
            times.append(ts)
            out += p
            end += len(p)
        return bytes(out), starts, times


def _time_at(starts, times, offset):
    return times[bisect.bisect_right(starts, offset) - 1]


def _messages(data, starts, times, requests, methods=None):
    """HTTP/1.1 messages of one direction: dicts with start (first byte's time), end (last
    byte's), first line, headers, body. methods: the requests' methods, for responses (a HEAD
    answer has no body)."""
    out, pos, k = [], 0, 0
    while pos < len(data):
        h_end = data.find(b"\r\n\r\n", pos)
        if h_end < 0:
            break
        head = data[pos:h_end].decode("latin-1").split("\r\n")
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body_at = h_end + 4
        first = head[0]
        status = None
        if not requests:
            parts = first.split(" ", 2)
            status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        no_body = status is not None and (100 <= status < 200 or status in (204, 304) or (
            methods is not None and k < len(methods) and methods[k] == "HEAD"))
        if no_body:
            body, nxt = b"", body_at
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body, p = bytearray(), body_at
            while True:
                le = data.find(b"\r\n", p)
                if le < 0:
                    return out
                size = int(data[p:le].split(b";")[0], 16)
                p = le + 2
                if size == 0:
                    te = data.find(b"\r\n", p)  # no trailers expected
                    if te < 0:
                        return out
                    nxt = te + 2
                    break
                body += data[p:p + size]
                p += size + 2
            body = bytes(body)
        else:
            n = int(headers.get("content-length", "0") or 0)
            if body_at + n > len(data):
                break
            body, nxt = data[body_at:body_at + n], body_at + n
        out.append({"start": _time_at(starts, times, pos),
                    "end": _time_at(starts, times, max(pos, nxt - 1)),
                    "first": first, "status": status, "headers": headers, "body": body})
        if status is None or status >= 200:
            k += 1
        pos = nxt
    return out


def exchanges(path, port):
    """Every request to `port` paired with its final response (1xx skipped): dicts with
    conn (a number per TCP connection, in the order they opened), method, target, body, sent
    (first request byte), answered (first response byte), status. Also the number of requests
    left without an answer in the capture. A client port used again by a later connection (a
    new SYN on the same addresses and ports) starts a new connection."""
    conns, cur = [], {}
    for ts, src, sport, dst, dport, seq, flags, payload in packets(path):
        if dport == port:
            key, up = (src, sport), True
        elif sport == port:
            key, up = (dst, dport), False
        else:
            continue
        if (up and flags & 0x12 == 0x02) or key not in cur:  # the client's SYN: a new one
            cur[key] = (Stream(), Stream())
            conns.append(cur[key])
        cur[key][0 if up else 1].add(ts, seq, flags, payload)
    out, unanswered = [], 0
    for n, (upstream, downstream) in enumerate(conns):
        reqs = _messages(*upstream.assemble(), requests=True)
        methods = [r["first"].split(" ", 1)[0] for r in reqs]
        resps = [r for r in _messages(*downstream.assemble(), requests=False, methods=methods)
                 if r["status"] >= 200]
        unanswered += max(0, len(reqs) - len(resps))
        for q, a in zip(reqs, resps):
            method, _, rest = q["first"].partition(" ")
            out.append({"conn": n, "method": method, "target": rest.rsplit(" ", 1)[0],
                        "body": q["body"], "sent": q["start"], "answered": a["start"],
                        "status": a["status"]})
    out.sort(key=lambda x: x["answered"])
    return out, unanswered


_TEXT = re.compile(rb"<MessageText>(.*?)</MessageText>", re.S)


def put_messages(path, port):
    """The Put Message requests of a capture: one dict per request with its decoded message
    (None when the text is not base64 JSON), sent, answered, status, conn; and how many
    requests were left without an answer in the capture."""
    ex, unanswered = exchanges(path, port)
    puts = []
    for x in ex:
        if x["method"] != "POST" or "/messages" not in x["target"]:
            continue
        m = _TEXT.search(x["body"])
        msg = None
        if m:
            try:
                msg = json.loads(base64.b64decode(m.group(1)))
            except ValueError:
                msg = None
        puts.append({**{k: x[k] for k in ("conn", "sent", "answered", "status")}, "msg": msg})
    return puts, unanswered


if __name__ == "__main__":
    ex, left = exchanges(sys.argv[1], int(sys.argv[2]))
    by = {}
    for x in ex:
        k = (x["method"], re.sub(r"\?.*", "", x["target"]).rsplit("/", 1)[-1], x["status"])
        by.setdefault(k, []).append((x["answered"] - x["sent"]) * 1000)
    for k, v in sorted(by.items()):
        v.sort()
        print(k, len(v), f"median {v[len(v) // 2]:.2f} ms, max {v[-1]:.2f} ms")
    print("requests without an answer in the capture:", left,
          "connections:", len({x["conn"] for x in ex}))
