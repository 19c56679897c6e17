#!/usr/bin/env bash
# Enqueue benchmark: sqlq (`sqlq queue put --count N --in-flight K`) against the official Node
# SDK (bench/node/enqueue.js) putting the same messages into a private in-memory Azurite, with
# 1 and 16 requests in flight. Prints a Markdown table: msg/s, client CPU seconds per 1000
# messages (user+system, from /usr/bin/time) and Azurite's CPU over the same run (/proc).
#
#   bench/enqueue.sh [N] [--write-docs]     N messages per run (default 5000)
#
# Environment: SQLQ_BIN (default build/cli/sqlq), BODY_BYTES (message body size, default 256).
# --write-docs replaces the "Enqueue (first benchmark)" section of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=5000
write_docs=0
for a in "$@"; do
    case "$a" in
        --write-docs) write_docs=1 ;;
        ''|*[!0-9]*) echo "usage: bench/enqueue.sh [N] [--write-docs]" >&2; exit 2 ;;
        *) n=$a ;;
    esac
done
bin=${SQLQ_BIN:-$root/build/cli/sqlq}
[ -x "$bin" ] || { echo "enqueue.sh: $bin not built (cmake --build build, or set SQLQ_BIN)" >&2; exit 2; }
body_bytes=${BODY_BYTES:-256}
tmp=$(mktemp -d)
az="$tmp/azurite"
cleanup() { "$root/tests/support/azurite.sh" stop "$az" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT

load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
"$root/tests/support/azurite.sh" start "$az" >/dev/null
conn=$(cat "$az/conn")
apid=$(cat "$az/pid")
export SQLQ_QUEUE_CONNECTION="$conn"
tck=$(getconf CLK_TCK)

# A JSON body like a captured row change, padded to body_bytes.
python3 - "$body_bytes" > "$tmp/body.json" <<'PY'
import json, sys
n = int(sys.argv[1])
row = {"Operation": 1, "Item": {"Id": 42, "Name": "Žluťoučký kůň", "Total": "1234.50", "Note": ""}}
s = json.dumps(row, ensure_ascii=False)
row["Item"]["Note"] = "x" * max(0, n - len(s.encode()))
sys.stdout.write(json.dumps(row, ensure_ascii=False))
PY

azurite_ticks() { awk '{print $14 + $15}' "/proc/$apid/stat"; }
json_field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }

# run LABEL K CMD...: one measured run into a fresh queue (the argument QUEUE in CMD is replaced
# by its name; stdin is the body); appends a result row.
rows=()
run() {
    local label=$1 k=$2
    shift 2
    local q="bench-$$-${#rows[@]}"
    "$bin" queue create "$q" >/dev/null
    local a0 a1
    a0=$(azurite_ticks)
    local cmd=("${@/#QUEUE/$q}")
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "${cmd[@]}" < "$tmp/body.json" > "$tmp/out"
    a1=$(azurite_ticks)
    local stored
    stored=$("$bin" queue stats "$q" | json_field approximate_count)
    "$bin" queue delete "$q" >/dev/null
    [ "$stored" = "$n" ] || { echo "enqueue.sh: $label stored $stored of $n messages" >&2; exit 1; }
    read -r _wall user sys < "$tmp/time"
    local secs loop_cpu
    secs=$(json_field seconds < "$tmp/out")
    loop_cpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("cpu_s", ""))' "$tmp/out")
    rows+=("$(python3 - "$label" "$k" "$n" "$secs" "$user" "$sys" "$loop_cpu" "$a0" "$a1" "$tck" <<'PY'
import sys
label, k, n, secs, user, sys_, loop, a0, a1, tck = sys.argv[1:]
n, secs = int(n), float(secs)
cpu = (float(user) + float(sys_)) / n * 1000
loop = f"{float(loop) / n * 1000:.3f}" if loop else "-"
az = (int(a1) - int(a0)) / int(tck) / n * 1000
print(f"| {label} | {k} | {n} | {secs:.2f} | {n / secs:,.0f} | {cpu:.3f} | {loop} | {az:.2f} |")
PY
)")
    echo "${rows[-1]}" >&2
}


# Warm Azurite up (its JIT) so the first measured client is not penalised.
warm="bench-$$-warm"
"$bin" queue create "$warm" >/dev/null
"$bin" queue put --count 1000 --in-flight 16 "$warm" < "$tmp/body.json" >/dev/null
"$bin" queue delete "$warm" >/dev/null

for k in 1 16; do
    run "sqlq" "$k" "$bin" queue put --count "$n" --in-flight "$k" QUEUE
    run "Node SDK 12.32" "$k" node "$root/bench/node/enqueue.js" "$conn" QUEUE "$n" "$k" "$tmp/body.json"
done

header="| client | in flight | messages | seconds | msg/s | client CPU s / 1000 msgs (process) | client CPU s / 1000 msgs (send loop) | Azurite CPU s / 1000 msgs |
|---|---:|---:|---:|---:|---:|---:|---:|"
table=$(printf '%s\n' "$header" "${rows[@]}")
echo "$table"

if [ "$write_docs" = 1 ]; then
    machine="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(uname -sr); load average at the start ${load_at_start}"
    versions="sqlq $("$bin" --version | awk '{print $2}'), $(curl --version | head -1 | awk '{print $1" "$2}' | sed 's/curl/libcurl/'), $(openssl version | awk '{print $1" "$2}'), Node $(node --version), @azure/storage-queue $(node -p 'require(process.argv[1]).version' "$root/node_modules/@azure/storage-queue/package.json"), Azurite $(node -p 'require(process.argv[1]).version' "$root/node_modules/azurite/package.json") (queue service only, in memory)"
    python3 - "$root/docs/benchmarks.md" "$n" "$body_bytes" "$machine" "$versions" "$table" <<'PY'
import datetime, os, re, sys
path, n, body, machine, versions, table = sys.argv[1:]
section = f"""## Enqueue (first benchmark)

Put {n} messages of {body} bytes (a JSON row change; base64 on the wire, as Azure Functions
expects) into a fresh queue of a private in-memory Azurite, with 1 and 16 requests in flight:
sqlq (`sqlq queue put --count N --in-flight K`, one process, libcurl multi) against the official
Node SDK (`bench/node/enqueue.js`: `QueueClient.sendMessage` from K concurrent async loops).
Each run is checked: the queue must hold exactly N messages afterwards.

- Machine: {machine}
- Versions: {versions}
- Date: {datetime.date.today().isoformat()}
- Command: `bench/enqueue.sh {n} --write-docs` (after `cmake --build build`)

{table}

Client CPU (process) is user+system time of the whole client process from `/usr/bin/time`
(sqlq: start-up included; Node: start-up and module loading included). Client CPU (send loop)
is Node's `process.cpuUsage()` around the sending alone. Azurite CPU is the emulator's
user+system time (`/proc/PID/stat`) during the run. Client and Azurite share the machine's
cores (and the machine is shared with other work: see the load average), so msg/s depends on
how much CPU the client leaves to Azurite; the client's CPU per message is the figure that
carries over to real Azure, where the server runs elsewhere.
"""
old = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
pat = re.compile(r"^## Enqueue \(first benchmark\)\n.*?(?=^## |\Z)", re.S | re.M)
new = pat.sub(lambda m: section + "\n", old) if pat.search(old) else old.rstrip("\n") + "\n\n" + section
open(path, "w").write(new)
print(f"wrote {path}", file=sys.stderr)
PY
fi
