#!/usr/bin/env bash
# Consumer benchmark: `sqlq consume --noop` (Get Messages in batches of 16, a handler that does
# nothing, Delete Message; WebJobs concurrency: next batch below 8 in flight) against the
# official Node SDK doing the same (bench/node/consume.js), both draining N messages from a
# private in-memory Azurite in the same run. `sqlq consume --exec true` (one process per
# message) is measured too, on fewer messages, to show what a process per message costs.
# Prints a Markdown table: msg/s, client CPU seconds per 1000 messages (user+system, from
# /usr/bin/time) and Azurite's CPU over the same run (/proc).
# Every run gets a fresh Azurite, warmed up first: Azurite's cost per request grows with the
# number of messages in the queue (5000 deep, the Node SDK drains about 110 msg/s against
# about 350 at 1000 deep), so a deep queue or one Azurite for all runs would measure Azurite.
#
#   bench/consume.sh [N] [--write-docs]     N messages per run (default 2000)
#
# Environment: SQLQ_BIN (default build/cli/sqlq), BODY_BYTES (message body size, default 256).
# --write-docs replaces the "Consumer" section of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=2000
write_docs=0
for a in "$@"; do
    case "$a" in
        --write-docs) write_docs=1 ;;
        ''|*[!0-9]*) echo "usage: bench/consume.sh [N] [--write-docs]" >&2; exit 2 ;;
        *) n=$a ;;
    esac
done
bin=${SQLQ_BIN:-$root/build/cli/sqlq}
[ -x "$bin" ] || { echo "consume.sh: $bin not built (cmake --build build, or set SQLQ_BIN)" >&2; exit 2; }
body_bytes=${BODY_BYTES:-256}
tmp=$(mktemp -d)
az="$tmp/azurite"
cleanup() { "$root/tests/support/azurite.sh" stop "$az" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT

load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
tck=$(getconf CLK_TCK)
start_azurite() {
    "$root/tests/support/azurite.sh" stop "$az" >/dev/null 2>&1 || true
    "$root/tests/support/azurite.sh" start "$az" >/dev/null
    conn=$(cat "$az/conn")
    apid=$(cat "$az/pid")
    export SQLQ_QUEUE_CONNECTION="$conn"
}
start_azurite

# A JSON body like a bridge row change, padded to body_bytes.
node -e '
const n = parseInt(process.argv[1], 10);
const row = {id: "1e5c50425ff0348b102e6f5f282037d3", op: "update", table: "orders",
  key: {id: 42}, row: {id: 42, customer: "Žluťoučký kůň", total: "1234.50", note: ""},
  version: 7, bridge: "default", ts: "2024-05-01T12:00:00.123Z"};
const len = Buffer.byteLength(JSON.stringify(row));
row.row.note = "x".repeat(Math.max(0, n - len));
process.stdout.write(JSON.stringify(row));' "$body_bytes" > "$tmp/body.json"

azurite_ticks() { awk '{print $14 + $15}' "/proc/$apid/stat"; }
count() { "$bin" queue stats "$1" | sed -n 's/.*"approximate_count":\([0-9]*\).*/\1/p'; }

# run LABEL N CMD...: on a fresh, warmed-up Azurite, fill a queue with N messages, drain it
# with CMD (QUEUE and COUNT in CMD are replaced), check it is empty, append a result row.
rows=()
run() {
    local label=$1 m=$2
    shift 2
    start_azurite
    local w="warm-$$"
    "$bin" queue create "$w" >/dev/null
    "$bin" queue put --count 500 --in-flight 16 "$w" < "$tmp/body.json" >/dev/null
    "$bin" consume "$w" --noop --max-messages 500 2>/dev/null
    "$bin" queue delete "$w" >/dev/null
    local q="cbench-$$-${#rows[@]}"
    "$bin" queue create "$q" >/dev/null
    "$bin" queue put --count "$m" --in-flight 16 "$q" < "$tmp/body.json" >/dev/null
    [ "$(count "$q")" = "$m" ] || { echo "consume.sh: could not fill $q" >&2; exit 1; }
    local cmd=("${@/#QUEUE/$q}")
    cmd=("${cmd[@]/#COUNT/$m}")
    cmd=("${cmd[@]/#CONN/$conn}")
    local a0 a1 t0 t1
    a0=$(azurite_ticks)
    t0=$(date +%s%N)
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "${cmd[@]}" > "$tmp/out" 2> "$tmp/err" \
        || { echo "consume.sh: $label failed:" >&2; tail -5 "$tmp/err" >&2; exit 1; }
    t1=$(date +%s%N)
    a1=$(azurite_ticks)
    local left
    left=$(count "$q")
    "$bin" queue delete "$q" >/dev/null
    [ "$left" = 0 ] || { echo "consume.sh: $label left $left of $m messages" >&2; exit 1; }
    read -r _wall user sys < "$tmp/time"
    # Node reports its own loop time and CPU; for sqlq the process is the loop.
    local secs loop_cpu
    secs=$(node -e 'try { console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).seconds) } catch (e) { console.log("") }' "$tmp/out")
    loop_cpu=$(node -e 'try { console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).cpu_s) } catch (e) { console.log("") }' "$tmp/out")
    [ -n "$secs" ] || secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    rows+=("$(awk -v label="$label" -v m="$m" -v secs="$secs" -v user="$user" -v sys="$sys" \
        -v loop="$loop_cpu" -v a0="$a0" -v a1="$a1" -v tck="$tck" 'BEGIN {
            cpu = (user + sys) / m * 1000
            l = loop == "" ? "-" : sprintf("%.3f", loop / m * 1000)
            az = (a1 - a0) / tck / m * 1000
            printf "| %s | %d | %.2f | %.0f | %.3f | %s | %.2f |", label, m, secs, m / secs, cpu, l, az
        }')")
    echo "${rows[-1]}" >&2
}

run "sqlq consume --noop" "$n" "$bin" consume QUEUE --noop --max-messages COUNT
run "Node SDK 12.32" "$n" node "$root/bench/node/consume.js" CONN QUEUE COUNT 16 8
run "sqlq consume --noop" "$n" "$bin" consume QUEUE --noop --max-messages COUNT
run "Node SDK 12.32" "$n" node "$root/bench/node/consume.js" CONN QUEUE COUNT 16 8
m=$(( n / 5 > 0 ? n / 5 : 1 ))
run "sqlq consume --exec true" "$m" "$bin" consume QUEUE --exec true --max-messages COUNT

header="| client | messages | seconds | msg/s | client CPU s / 1000 msgs (process) | client CPU s / 1000 msgs (consume loop) | Azurite CPU s / 1000 msgs |
|---|---:|---:|---:|---:|---:|---:|"
table=$(printf '%s\n' "$header" "${rows[@]}")
echo "$table"

if [ "$write_docs" = 1 ]; then
    machine="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(uname -sr); load average at the start ${load_at_start}"
    versions="sqlq $("$bin" --version | awk '{print $2}'), $(curl --version | head -1 | awk '{print $1" "$2}' | sed 's/curl/libcurl/'), Node $(node --version), @azure/storage-queue $(node -p 'require(process.argv[1]).version' "$root/node_modules/@azure/storage-queue/package.json"), Azurite $(node -p 'require(process.argv[1]).version' "$root/node_modules/azurite/package.json") (queue service only, in memory)"
    SECTION_N="$n" SECTION_BODY="$body_bytes" SECTION_MACHINE="$machine" SECTION_VERSIONS="$versions" \
    SECTION_TABLE="$table" node - "$root/docs/benchmarks.md" <<'JS'
const fs = require("fs");
const file = process.argv[2];
const e = process.env;
const section = `## Consumer

Drain ${e.SECTION_N} messages of ${e.SECTION_BODY} bytes (a bridge row change, base64 on the
wire) from a queue of a private in-memory Azurite (a fresh, warmed-up instance for every run),
the way the Azure Functions queue trigger consumes: Get Messages in batches of 16 with a
10-minute visibility, a handler, Delete Message for each, the next batch as soon as fewer than
8 are running. sqlq: \`sqlq consume QUEUE --noop
--max-messages N\` (a handler that succeeds at once; the whole process, start-up included).
Node: the official SDK doing the same (\`bench/node/consume.js\`, base64-decoding each body as
a Functions host does). Each run is checked: the queue must be empty afterwards. Two rounds,
alternating. The last row runs a real process per message (\`--exec true\`, on a fifth of the
messages) to show what that costs.

- Machine: ${e.SECTION_MACHINE}
- Versions: ${e.SECTION_VERSIONS}
- Date: ${new Date().toISOString().slice(0, 10)}
- Command: \`bench/consume.sh ${e.SECTION_N} --write-docs\` (after \`cmake --build build\`)

${e.SECTION_TABLE}

Client CPU (process) is user+system time of the whole client process from \`/usr/bin/time\`;
Client CPU (consume loop) is Node's \`process.cpuUsage()\` around the consuming alone. Azurite
CPU is the emulator's user+system time during the run. Every message costs a Delete and a
sixteenth of a Get, and client and Azurite share the machine's cores, so msg/s is bounded by
Azurite; CPU per message is the client's own cost and carries over to
real Azure. Azurite's cost per request grows with the depth of the queue (measured here: the
Node SDK drains about 350 msg/s from a queue 1000 deep, about 110 msg/s from one 5000 deep),
and a Get can then take longer than sqlq's 30 s request timeout. Hence 2000 messages per run
and a fresh Azurite each time.
`;
const old = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "# Benchmarks\n";
const pat = /^## Consumer\n[\s\S]*?(?=^## |(?![\s\S]))/m;
const out = pat.test(old) ? old.replace(pat, section + "\n") : old.replace(/\n*$/, "\n\n") + section;
fs.writeFileSync(file, out);
console.error(`wrote ${file}`);
JS
fi
