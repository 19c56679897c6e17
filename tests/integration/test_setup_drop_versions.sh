#!/usr/bin/env bash
# The version contract across `sqlq setup --drop` and `sqlq setup` (the documented way to change
# a key), on one change-log database (argument: sqlite, postgres or mariadb): a change made
# after the drop and the new setup is published with a version above every version published
# before, so a consumer that keeps the greatest version per key (sqlq consume --sql) applies it.
# The table is the only one set up, so the drop removes all of sqlq's objects, as in a fresh
# database. PostgreSQL's earlier history is made long with setval (a table that took more
# changes than the cluster has transaction ids). docs/messages.md "Versions", docs/capture.md.
set -euo pipefail
kind=${1:?usage: test_setup_drop_versions.sh sqlite|postgres|mariadb}
fail() { echo "FAIL: $kind: $*" >&2; exit 1; }
unset SQLQ_DB_CONNECTION AzureWebJobsStorage SQLQ_CONFIG || true

prefix=dropver
. "$(dirname "$0")/../support/change_log_db.sh"

# versions QUEUE: the versions of the messages in QUEUE, one a line, ascending.
versions() {
    { "$sqlq" queue peek "$1" --limit 32 || fail "peek $1"; } |
        { grep -o 'version\\*":[0-9]*' || true; } | cut -d: -f2 | sort -n
}
publish() { # publish QUEUE: what is pending, once
    queues+=("$1")
    timeout 120 "$sqlq" bridge --db "$conn" --table acct --queue "$1" --once \
        --polling-interval-ms 100 2>"$tmp/bridge.log" || fail "bridge exited $?: $(tail -3 "$tmp/bridge.log")"
}

sql "CREATE TABLE acct (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL)"
sql "INSERT INTO acct VALUES (1, 0)"
"$sqlq" setup --db "$conn" --table acct >/dev/null
[ "$kind" = postgres ] && sql "SELECT setval('sqlq.ver_acct', 5000000000)"
for i in $(seq 1 10); do sql "UPDATE acct SET bal = $i WHERE id = 1"; done
q1="dropver-a-$kind-$$"
publish "$q1"
before=$(versions "$q1" | tail -1)
[ -n "$before" ] || fail "nothing was published before the drop"

"$sqlq" setup --db "$conn" --table acct --drop >"$tmp/drop.out" 2>&1 || fail "drop: $(cat "$tmp/drop.out")"
"$sqlq" setup --db "$conn" --table acct >/dev/null
sql "UPDATE acct SET bal = 999 WHERE id = 1"
q2="dropver-b-$kind-$$"
publish "$q2"
after=$(versions "$q2" | head -1)
[ -n "$after" ] || fail "nothing was published after drop and setup"
[ "$after" -gt "$before" ] ||
    fail "the change after drop + setup has version $after, not above $before published before"
[ "$after" -lt 9007199254740992 ] || fail "version $after is beyond 2^53"
echo "$kind: drop + setup: the next version ($after) is above every earlier one ($before): ok"

# Setup again over the log and a second drop + setup: still only upwards.
"$sqlq" setup --db "$conn" --table acct >/dev/null
sql "UPDATE acct SET bal = 1000 WHERE id = 1"
# (the change just made is not delivered: --force discards it, as a key change would)
"$sqlq" setup --db "$conn" --table acct --drop --force >/dev/null 2>&1 || fail "second drop failed"
"$sqlq" setup --db "$conn" --table acct >/dev/null
sql "UPDATE acct SET bal = 1001 WHERE id = 1"
q3="dropver-c-$kind-$$"
publish "$q3"
again=$(versions "$q3" | head -1)
[ -n "$again" ] && [ "$again" -gt "$after" ] || fail "second drop + setup: version $again, not above $after"
echo "$kind: a second drop + setup: $again > $after: ok"
