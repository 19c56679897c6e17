#!/usr/bin/env bash
# The sqlq setup commands a logical route's errors tell the operator to run (through sqlq
# status) work when pasted into a shell as printed, for a table whose name has a space and a
# quote and a bridge name that is not "default": the slot dropped by hand (setup creates it
# again), the table taken out of its publication (setup puts it back), the table dropped
# (setup --drop --force removes its slot and publication; sqlq status --table, given the name
# as setup was, says so too). A table keyed by --key-columns without a replica identity is
# refused with DDL that names the key's index and runs as printed.
set -euo pipefail
sqlq=${SQLQ_BIN:?run through ctest}
env_dir=${SQLQ_TEST_ENV_DIR:?}
port=$(cat "$env_dir/postgres/port")
name="lghint_$$_$RANDOM"
conn="$(cat "$env_dir/postgres/odbc")Database=$name;"
export SQLQ_DB_CONNECTION="$conn"
tmp=$(mktemp -d)
psql_() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U sqlq "$@"; }
cleanup() {
    psql_ -d postgres -c "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE database = '$name' AND NOT active" >/dev/null 2>&1 || true
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
slots() { psql_ -d postgres -c "SELECT count(*) FROM pg_replication_slots WHERE database = '$name'"; }
# The command between `sqlq ` and the backquote that ends it, just before TEXT, in the error
# of sqlq status [ARGS...].
hint() {
    local text=$1 why=$2
    shift 2
    "$sqlq" status "$@" >"$tmp/status.out" 2>"$tmp/status.err" && fail "sqlq status $* exited 0 with: $why"
    local cmd
    cmd=$(sed -n "s/.*\`sqlq \\([^\`]*\\)\` $text.*/\\1/p" "$tmp/status.err" | head -1)
    [ -n "$cmd" ] || fail "sqlq status $* names no command ($why): $(cat "$tmp/status.out" "$tmp/status.err")"
    echo "$cmd"
}
paste_run() { # CMD: as an operator pasting it after "sqlq "
    eval "\"\$sqlq\" $1" >"$tmp/paste.out" 2>&1 || fail "pasted \`sqlq $1\` failed: $(cat "$tmp/paste.out")"
}

psql_ -d postgres -c "CREATE DATABASE $name" >/dev/null
psql_ -d "$name" -c "CREATE TABLE public.\"odd 'one'\" (id int PRIMARY KEY, note text)" >/dev/null
# No replica identity: the DDL printed names the key's unique index.
psql_ -d "$name" -c "CREATE TABLE public.\"key less\" (a int NOT NULL, b int NOT NULL, note text);
    CREATE UNIQUE INDEX \"key less ab\" ON public.\"key less\" (a, b)" >/dev/null
"$sqlq" setup --table "key less" --source logical --key-columns a,b >"$tmp/ri.out" 2>&1 &&
    fail "setup of a table without a replica identity passed: $(cat "$tmp/ri.out")"
ddl=$(sed -n 's/.*give it a primary key, or \(ALTER TABLE .*\) (or FULL).*/\1/p' "$tmp/ri.out")
[ -n "$ddl" ] || fail "no ALTER TABLE in the replica identity refusal: $(cat "$tmp/ri.out")"
psql_ -d "$name" -c "$ddl" >"$tmp/ddl.out" 2>&1 || fail "the DDL printed ($ddl) failed: $(cat "$tmp/ddl.out")"
"$sqlq" setup --table "key less" --source logical --key-columns a,b >"$tmp/ri.out" 2>&1 ||
    fail "setup after \"$ddl\": $(cat "$tmp/ri.out")"
"$sqlq" setup --table "key less" --source logical --drop >"$tmp/ri.out" 2>&1 ||
    fail "setup --drop of \"key less\": $(cat "$tmp/ri.out")"

bridge="night shift's"
"$sqlq" setup --table "public.odd 'one'" --source logical --bridge-name "$bridge" \
    >"$tmp/setup.out" 2>&1 || fail "setup: $(cat "$tmp/setup.out")"
[ "$(slots)" = 1 ] || fail "setup made $(slots) slots, wanted 1"
slot=$(psql_ -d postgres -c "SELECT slot_name FROM pg_replication_slots WHERE database = '$name'")
pub=$(psql_ -d "$name" -c "SELECT pubname FROM pg_publication")

# The slot dropped by hand.
psql_ -d postgres -c "SELECT pg_drop_replication_slot('$slot')" >/dev/null
cmd=$(hint "creates it" "the slot is missing")
paste_run "$cmd"
[ "$(slots)" = 1 ] || fail "\`sqlq $cmd\` left $(slots) slots, wanted the route's 1"
[ "$(psql_ -d postgres -c "SELECT slot_name FROM pg_replication_slots WHERE database = '$name'")" = "$slot" ] ||
    fail "\`sqlq $cmd\` made another slot than the route's $slot"
"$sqlq" status >"$tmp/status.out" 2>&1 || fail "status after \`sqlq $cmd\`: $(cat "$tmp/status.out")"

# The table taken out of its publication.
psql_ -d "$name" -c "ALTER PUBLICATION $pub DROP TABLE public.\"odd 'one'\"" >/dev/null
cmd=$(hint "(or ALTER PUBLICATION" "the table is not in its publication")
paste_run "$cmd"
"$sqlq" status >"$tmp/status.out" 2>&1 || fail "status after \`sqlq $cmd\`: $(cat "$tmp/status.out")"
[ "$(slots)" = 1 ] || fail "\`sqlq $cmd\` left $(slots) slots, wanted 1"

# The table dropped for good.
psql_ -d "$name" -c "DROP TABLE public.\"odd 'one'\"" >/dev/null
cmd=$(hint "drops it and the publication" "the table is dropped")
[ "$(hint "drops it and the publication" "the table is dropped" --table "public.odd 'one'")" = "$cmd" ] ||
    fail "sqlq status --table \"public.odd 'one'\" does not print \`sqlq $cmd\`"
paste_run "$cmd"
[ "$(slots)" = 0 ] || fail "\`sqlq $cmd\` left $(slots) slots"
[ -z "$(psql_ -d "$name" -c "SELECT pubname FROM pg_publication")" ] || fail "\`sqlq $cmd\` left the publication"
echo "logical_setup_hints: the slot, publication and drop commands sqlq status printed ran as pasted: ok"
