#!/usr/bin/env bash
# scripts/install-deps.sh --runtime (what the Docker runtime stage runs) on this machine:
# succeeds, is idempotent (a second run installs nothing and is quick), and leaves the three
# ODBC drivers registered and loadable by unixODBC. Where packages are missing the first run
# installs them (root or sudo needed), as it would in the image.
set -euo pipefail

src=${SQLQ_SOURCE_DIR:?}
script=$src/scripts/install-deps.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$script" --help >"$tmp/help" || fail "--help failed"
grep -q -- '--runtime' "$tmp/help" || fail "--help does not mention --runtime"
rc=0
bash "$script" --no-such-option 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "an unknown option should exit 2, got $rc"

bash "$script" --runtime >"$tmp/first" 2>&1 || { cat "$tmp/first" >&2; fail "first --runtime run failed"; }
start=$(date +%s%N)
bash "$script" --runtime >"$tmp/second" 2>&1 || { cat "$tmp/second" >&2; fail "second --runtime run failed"; }
ms=$((($(date +%s%N) - start) / 1000000))
cat "$tmp/second"
grep -q 'installing' "$tmp/second" && fail "second run installed packages again: $(cat "$tmp/second")"
[ "$(tail -1 "$tmp/second")" = "install-deps: ok" ] || fail "second run did not end with 'install-deps: ok'"
[ "$ms" -lt 10000 ] || fail "second run took ${ms} ms; it should only check (under 10 s)"
echo "ok: --runtime is idempotent; the second run took ${ms} ms"

# The drivers the image promises, by the names connection strings use.
drivers=$(odbcinst -q -d)
for d in "PostgreSQL Unicode" "SQLite3" "FreeTDS" "MariaDB Unicode"; do
    echo "$drivers" | grep -qx "\[$d\]" || fail "ODBC driver '$d' is not registered in $(odbcinst -j | grep -i drivers)"
    # unixODBC loads the driver library; a connection to nowhere then fails inside the driver,
    # not with the driver manager's "Can't open lib".
    out=$(timeout 20 isql -v -k "Driver={$d};Server=127.0.0.1;Port=1;Database=$tmp/none/x.db" 2>&1 || true)
    echo "$out" | grep -q "Can't open lib" && fail "driver '$d' is registered but cannot be loaded: $out"
    echo "ok: driver '$d' registered and loadable"
done
echo "all install-deps checks passed"
