#!/usr/bin/env bash
# PostgreSQL: a role named like sqlq's schema (sqlq) resolves its unqualified names into that
# schema on the default search_path ("$user", public): sqlq setup warns about it (and does not
# for another role, nor once the role's search_path leaves sqlq out, nor when it refuses and
# creates nothing). sqlq setup --drop with
# other objects left in schema sqlq is not an error: sqlq's own objects go, the schema stays
# and the log says so; an empty schema is dropped.
# Before: no warning, and --drop exited 1 ("cannot drop schema sqlq because other objects
# depend on it") after removing the change log and trigger.
set -euo pipefail
. "$(dirname "$0")/../support/testenv.sh"
tmp=$(mktemp -d)
db="setup_role_$$"
role="app_$$"
cleanup() {
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS ${db}_app" \
        -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/out" >&2 2>/dev/null || true; exit 1; }
run() { # run WANT_RC cmd…: output (stdout and the log) in $tmp/out
    local want=$1 got=0
    shift
    "$@" >"$tmp/out" 2>&1 || got=$?
    [ "$got" = "$want" ] || fail "exit $got, wanted $want: $*"
}

psql_ -d postgres -c "CREATE DATABASE $db" >/dev/null
psql_ -d "$db" -c "CREATE TABLE public.a (id integer PRIMARY KEY, v text)" >/dev/null
conn="${pgodbc}Database=$db;" # the test server's admin role is named sqlq

# A setup that refuses (the table does not exist) creates nothing: no warning about it.
run 1 "$bin" setup --db "$conn" --table public.nosuch
grep -q "role_named_like_schema" "$tmp/out" && fail "setup warns although it refused and created nothing"
[ "$(psql_ -d "$db" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'sqlq'")" = 0 ] \
    || fail "a refused setup created schema sqlq"

run 0 "$bin" setup --db "$conn" --table public.a
grep -q "role_named_like_schema" "$tmp/out" || fail "setup as role sqlq does not warn"

# The cure the warning names, as a new session sees it: no warning once the role's search_path
# leaves out "$user" (before: it warned on the role's name alone, whatever its search_path);
# a search_path that names schema sqlq itself warns again.
psql_ -d postgres -c "ALTER ROLE sqlq IN DATABASE $db SET search_path = public" >/dev/null
run 0 "$bin" setup --db "$conn" --table public.a
grep -q "role_named_like_schema" "$tmp/out" && fail "setup warns after ALTER ROLE sqlq SET search_path = public"
psql_ -d postgres -c "ALTER ROLE sqlq IN DATABASE $db SET search_path = public, \"SQLQ\", Sqlq" >/dev/null
run 0 "$bin" setup --db "$conn" --table public.a
grep -q "role_named_like_schema" "$tmp/out" || fail "setup does not warn for a search_path naming sqlq"
psql_ -d postgres -c "ALTER ROLE sqlq IN DATABASE $db RESET search_path" >/dev/null

# The collision itself: role sqlq's unqualified CREATE TABLE lands in schema sqlq.
psql_ -d "$db" -c "CREATE TABLE mine (x integer)" >/dev/null
[ "$(psql_ -d "$db" -c "SELECT to_regclass('sqlq.mine') IS NOT NULL")" = t ] \
    || fail "expected the unqualified table in schema sqlq (the collision this test is about)"

# --drop with another object in schema sqlq: exit 0, sqlq's objects gone, schema and mine kept.
run 0 "$bin" setup --db "$conn" --table public.a --drop
grep -q "catalog_schema_kept" "$tmp/out" || fail "--drop does not say the schema is kept"
[ "$(psql_ -d "$db" -c "SELECT to_regclass('sqlq.tables') IS NULL AND to_regclass('sqlq.mine') IS NOT NULL")" = t ] \
    || fail "--drop left sqlq's registry or removed another object"

# Once the schema is empty, --drop removes it.
psql_ -d "$db" -c "DROP TABLE sqlq.mine" >/dev/null
run 0 "$bin" setup --db "$conn" --table public.a
run 0 "$bin" setup --db "$conn" --table public.a --drop
grep -q "catalog_schema_kept" "$tmp/out" && fail "--drop kept an empty schema"
[ "$(psql_ -d "$db" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'sqlq'")" = 0 ] \
    || fail "--drop left the empty schema sqlq"

# Another role name: no warning.
psql_ -d postgres -c "CREATE ROLE $role LOGIN" -c "CREATE DATABASE ${db}_app OWNER $role" >/dev/null
psql_ -d "${db}_app" -c "SET ROLE $role" -c "CREATE TABLE public.a (id integer PRIMARY KEY)" >/dev/null
run 0 "$bin" setup --db "${pgodbc/UID=sqlq/UID=$role}Database=${db}_app;" --table public.a
grep -q "role_named_like_schema" "$tmp/out" && fail "setup warns for a role not named sqlq"
echo "setup role: ok"
