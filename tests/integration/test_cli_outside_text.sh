#!/usr/bin/env bash
# Text from outside stays text, secrets stay secret:
#  - `sqlq setup`, `status` and `config check` print a table named with ESC, BEL and a newline
#    escaped (\x1b, \x07, \x0a), never raw;
#  - log redaction hides the values of secret keys, not substrings: with PWD=x a driver's
#    "execute" stays "execute", and a table named like the password keeps its name (the keyed
#    redaction itself: tests/unit/test_common.c; long secrets: test_log_secrecy.sh);
#  - a config file that gives a key twice is refused, naming the key (exit 2);
#  - a secret read from the environment is gone from /proc/PID/environ, where an --exec handler
#    of the same user could read it.
set -euo pipefail
: "${SQLQ_BIN:?}" "${SQLQ_TEST_ENV_DIR:?}" "${SQLQ_SOURCE_DIR:?}"
unset SQLQ_CONFIG SQLQ_QUEUE_CONNECTION_FILE AzureWebJobsStorage
conn=$(cat "$SQLQ_TEST_ENV_DIR/azurite/conn")
key=$(echo "$conn" | sed -n 's/.*AccountKey=\([^;]*\).*/\1/p')
export SQLQ_QUEUE_CONNECTION="$conn"
pgport=$(cat "$SQLQ_TEST_ENV_DIR/postgres/port")
pgdb="outside_$$"
work=$(mktemp -d)
q="outside-$$"
cleanup() {
    "$SQLQ_BIN" queue delete "$q" >/dev/null 2>&1 || true
    "$SQLQ_BIN" queue delete "$q-poison" >/dev/null 2>&1 || true
    psql -X -q -h 127.0.0.1 -p "$pgport" -U sqlq -d postgres -c "DROP DATABASE IF EXISTS $pgdb" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "cli_outside_text: $*" >&2; exit 1; }
no_raw_controls() { # FILE WHAT: no C0 but newline and tab, no DEL, no C1 in FILE
    python3 - "$1" <<'PY' || fail "$2: raw control characters reach the terminal: $(od -c "$1" | head -5)"
import re, sys
b = open(sys.argv[1], "rb").read()
sys.exit(1 if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b) else 0)
PY
}

# ---- names with ESC, BEL and a newline: setup, status, config check ----
name=$(printf 't\033]0;owned\007x\ny')
db="$work/n.db"
sqlite3 "$db" "CREATE TABLE \"$name\" (id INTEGER PRIMARY KEY, v TEXT)"
odbc="Driver={SQLite3};Database=$db;"
"$SQLQ_BIN" queue create "$q" >/dev/null
"$SQLQ_BIN" setup --db "$odbc" --table "\"$name\"" >"$work/setup" 2>&1 || fail "setup exit $?: $(cat "$work/setup")"
"$SQLQ_BIN" status --db "$odbc" >"$work/status" 2>&1 || fail "status exit $?: $(cat "$work/status")"
"$SQLQ_BIN" status --db "$odbc" --table "\"$name\"" >"$work/status1" 2>&1 || true
rc=0; "$SQLQ_BIN" config check --db "$odbc" --table "\"$name\"" --queue "$q" >"$work/check" 2>&1 || rc=$?
"$SQLQ_BIN" setup --db "$odbc" --table "\"nope$(printf '\033[2J')\"" >"$work/setup_missing" 2>&1 || true
for f in setup status status1 check setup_missing; do
    no_raw_controls "$work/$f" "$f"
done
for f in setup status check; do
    grep -qF 't\x1b]0;owned\x07x\x0ay' "$work/$f" || fail "$f does not show the name escaped: $(cat "$work/$f")"
done
grep -q '^y' "$work/setup" "$work/status" "$work/check" && fail "a newline in a name started a line of output"
echo "cli_outside_text: setup, status and config check escape a table name's ESC, BEL, newline: ok"

# ---- redaction: values of secret keys, not substrings ----
psql -X -q -h 127.0.0.1 -p "$pgport" -U sqlq -d postgres -c "CREATE DATABASE $pgdb" >/dev/null
psql -X -q -h 127.0.0.1 -p "$pgport" -U sqlq -d "$pgdb" -c "CREATE TABLE orders1 (id int PRIMARY KEY, v text NOT NULL)" >/dev/null
pg="$(cat "$SQLQ_TEST_ENV_DIR/postgres/odbc")Database=$pgdb;"
msg='{"id":"1","op":"insert","table":"orders1","key":{"id":1},"row":{"id":1,"v":null},"version":1,"bridge":"default","ts":"2024-05-01T00:00:00Z"}'
for pwd in x orders1; do
    "$SQLQ_BIN" queue put "$q" "$msg" >/dev/null
    timeout 60 "$SQLQ_BIN" consume "$q" --sql "${pg/PWD=;/PWD=$pwd;}" --table orders1 --exit-when-empty \
        --max-polling-interval-ms 300 >"$work/redact-$pwd" 2>&1 || fail "consume with PWD=$pwd exit $?: $(tail -3 "$work/redact-$pwd")"
    grep -q 'event=consumer.poisoned .*execute' "$work/redact-$pwd" \
        || fail "PWD=$pwd: the poisoning reason lost its words: $(grep consumer.poisoned "$work/redact-$pwd")"
    grep -q 'violates not-null constraint' "$work/redact-$pwd" || fail "PWD=$pwd: the driver's message was mangled"
done
grep -q 'e\*ecute' "$work/redact-x" && fail "PWD=x: 'execute' was redacted to e*ecute"
grep -qF 'relation \"orders1\"' "$work/redact-orders1" \
    || fail "PWD=orders1: the table's name was redacted: $(grep consumer.poisoned "$work/redact-orders1")"
echo "cli_outside_text: redaction hides secret keys' values, not words that contain the password: ok"

# ---- a key given twice in a config file ----
printf '{\n  "batch_size": 4,\n  "noop": true,\n  "batch_size": 8\n}\n' >"$work/dup.json"
rc=0; "$SQLQ_BIN" consume "$q" --config "$work/dup.json" --exit-when-empty >"$work/dup" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a config file with a key twice: exit $rc: $(cat "$work/dup")"
grep -q 'batch_size' "$work/dup" && grep -q 'twice' "$work/dup" || fail "the refusal does not name the key: $(cat "$work/dup")"
echo "cli_outside_text: a config file key given twice is refused, named: ok"

# ---- a secret from the environment is gone from /proc/PID/environ ----
"$SQLQ_BIN" queue clear "$q" >/dev/null
"$SQLQ_BIN" queue put "$q" '{"look":1}' >/dev/null
timeout 60 "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
    --exec "tr '\\0' '\\n' < /proc/\$PPID/environ > '$work/environ'; cat /proc/\$PPID/cmdline > /dev/null" \
    >"$work/env.log" 2>&1 || fail "consume exit $?: $(tail -3 "$work/env.log")"
[ -s "$work/environ" ] || fail "the handler could not read its consumer's environ (test broken)"
grep -q '^PATH=' "$work/environ" || fail "environ read wrong: $(head -3 "$work/environ")"
grep -qF "${key:0:16}" "$work/environ" && fail "the account key is in the consumer's /proc/PID/environ"
grep -q 'AccountKey' "$work/environ" && fail "the connection string is in the consumer's /proc/PID/environ"
echo "cli_outside_text: the queue connection read from the environment is gone from /proc/PID/environ: ok"

# ---- a handler of the consumer's own user cannot read its memory or environment ----
if [ "$(id -u)" = 0 ] && runuser -u nobody -- "$SQLQ_BIN" --version >/dev/null 2>&1; then
    chmod 755 "$work"
    mkdir -m 777 "$work/nobody"
    "$SQLQ_BIN" queue put "$q" '{"look":2}' >/dev/null
    timeout 60 runuser -u nobody -- env SQLQ_QUEUE_CONNECTION="$conn" SQLQ_STATE_DIR=none \
        "$SQLQ_BIN" consume "$q" --exit-when-empty --max-polling-interval-ms 300 \
        --exec "if cat /proc/\$PPID/environ >/dev/null 2>&1; then echo readable; else echo refused; fi > '$work/nobody/environ'; if head -c1 /proc/\$PPID/mem >/dev/null 2>&1; then echo readable; else echo refused; fi > '$work/nobody/mem'" \
        >"$work/nobody.log" 2>&1 || fail "consume as nobody exit $?: $(tail -3 "$work/nobody.log")"
    [ "$(cat "$work/nobody/environ")" = refused ] || fail "a handler of the same user read the consumer's /proc/PID/environ"
    [ "$(cat "$work/nobody/mem")" = refused ] || fail "a handler of the same user read the consumer's /proc/PID/mem"
    echo "cli_outside_text: an --exec handler of the consumer's user cannot read its environ or memory: ok"
else
    echo "cli_outside_text: (not root, or user nobody cannot run sqlq: the same-user check is skipped)"
fi
