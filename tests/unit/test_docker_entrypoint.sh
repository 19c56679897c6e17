#!/usr/bin/env bash
# docker/entrypoint.sh run outside Docker with the arguments `docker run IMAGE ...` would give
# it: each form reaches the right program, with the same output and exit code as calling that
# program directly, and by exec (same PID, so SIGTERM reaches it).
set -euo pipefail

src=${SQLQ_SOURCE_DIR:?}
bin=${SQLQ_BIN:?}
entry=$src/docker/entrypoint.sh
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# run OUT_PREFIX CMD...: stdout, stderr and exit code into $tmp/OUT_PREFIX.{out,err,rc}
run() {
    local name=$1
    shift
    local rc=0
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
    echo "$rc" >"$tmp/$name.rc"
}

# same_as_direct "ENTRYPOINT ARGS" "SQLQ ARGS": the entrypoint gives what sqlq gives.
same_as_direct() {
    local via=$1 direct=$2
    # shellcheck disable=SC2086 # word splitting of the argument lists is intended
    run via env SQLQ_BIN_PATH="$bin" sh "$entry" $via
    # shellcheck disable=SC2086
    run direct "$bin" $direct
    for f in out err rc; do
        cmp -s "$tmp/via.$f" "$tmp/direct.$f" ||
            fail "'$via' differs from 'sqlq $direct' in $f: $(head -c 300 "$tmp/via.$f") vs $(head -c 300 "$tmp/direct.$f")"
    done
    echo "ok: entrypoint $via == sqlq $direct (exit $(cat "$tmp/via.rc"))"
}

same_as_direct "bridge --help" "bridge --help"
same_as_direct "sqlq queue --help" "queue --help"
same_as_direct "sqlq bridge --help" "bridge --help"
same_as_direct "consume --help" "consume --help"
same_as_direct "poison --help" "poison --help"
same_as_direct "--version" "--version"
same_as_direct "sqlq --version" "--version"
same_as_direct "" "--help"
same_as_direct "sqlq" ""
# Not a sqlq command and not an executable: sqlq itself names the unknown command.
same_as_direct "frobnicate" "frobnicate"
grep -q "unknown command 'frobnicate'" "$tmp/via.err" || fail "unknown command not reported"
[ "$(cat "$tmp/via.rc")" = 2 ] || fail "unknown command should exit 2"

# An executable runs as it is.
out=$(SQLQ_BIN_PATH="$bin" sh "$entry" sh -c 'echo hi')
[ "$out" = hi ] || fail "sh -c 'echo hi' gave '$out'"
out=$(SQLQ_BIN_PATH="$bin" sh "$entry" /bin/echo a b)
[ "$out" = "a b" ] || fail "/bin/echo gave '$out'"
echo "ok: executables run unchanged"

# exec, not fork: the program keeps the entrypoint's PID in every branch. A stand-in sqlq
# prints its PID and its arguments.
cat >"$tmp/fake-sqlq" <<'EOF'
#!/bin/sh
echo "$$ $*"
EOF
chmod +x "$tmp/fake-sqlq"
for args in "bridge --once" "sqlq consume q" "--version" "frobnicate x"; do
    # shellcheck disable=SC2086
    SQLQ_BIN_PATH="$tmp/fake-sqlq" sh "$entry" $args >"$tmp/pid.out" &
    pid=$!
    wait "$pid"
    read -r got rest <"$tmp/pid.out"
    [ "$got" = "$pid" ] || fail "'$args': sqlq ran as PID $got, entrypoint was $pid (no exec)"
    want=${args#sqlq }
    [ "$rest" = "$want" ] || fail "'$args': sqlq got arguments '$rest', want '$want'"
done
echo "ok: sqlq is exec'd with the right arguments"

# SIGTERM sent to the entrypoint's PID reaches the program (here sleep) at once.
SQLQ_BIN_PATH="$bin" sh "$entry" sleep 30 &
pid=$!
pids+=("$pid")
sleep 0.3
comm=$(cat "/proc/$pid/comm" 2>/dev/null || echo gone)
[ "$comm" = sleep ] || fail "PID $pid runs $comm, not sleep"
start=$SECONDS
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "sleep ended with $rc after SIGTERM, want 143"
[ $((SECONDS - start)) -lt 5 ] || fail "SIGTERM took too long"
echo "ok: SIGTERM reaches the exec'd program"

if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -s sh "$entry" || fail "shellcheck found problems in docker/entrypoint.sh"
    echo "ok: shellcheck docker/entrypoint.sh"
fi
echo "all entrypoint checks passed"
