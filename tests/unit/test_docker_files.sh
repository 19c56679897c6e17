#!/usr/bin/env bash
# Static checks of docker/ (no Docker engine is needed, or available on the build machines):
# every file the Dockerfile COPYs exists and is not excluded from the build context, the stages
# and install-deps.sh modes fit together, the image runs as a non-root user behind tini, and
# the compose and Kubernetes files parse and point at files that exist. hadolint is not
# available; this covers the rules of it that matter here.
set -euo pipefail

src=${SQLQ_SOURCE_DIR:?}
df=$src/docker/Dockerfile
ignore=$src/docker/Dockerfile.dockerignore
errors=0
fail() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }
ok() { echo "ok: $*"; }

[ -f "$df" ] || { echo "FAIL: $df missing" >&2; exit 1; }

# Join continuation lines so each instruction is one line.
instructions=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$df" | grep -v '^[[:space:]]*#' | grep -v '^[[:space:]]*$')

# 1. COPY sources exist in the repository and survive the .dockerignore.
stages=$(echo "$instructions" | awk 'toupper($1) == "FROM" && toupper($3) == "AS" {print $4}')
while read -r line; do
    # shellcheck disable=SC2086 # split the instruction into words
    set -- $line
    shift
    from=""
    while [ "${1#--}" != "$1" ]; do
        case "$1" in --from=*) from=${1#--from=} ;; esac
        shift
    done
    args=("$@")
    n=${#args[@]}
    [ "$n" -ge 2 ] || { fail "COPY without a destination: $line"; continue; }
    for ((i = 0; i < n - 1; i++)); do
        s=${args[$i]}
        if [ -n "$from" ]; then
            echo "$stages" | grep -qx "$from" || fail "COPY --from=$from: no stage of that name"
            continue
        fi
        [ "$s" = . ] && continue
        [ -e "$src/$s" ] || fail "COPY source $s does not exist in the repository"
        if [ -f "$ignore" ]; then
            while read -r pat; do
                case "$pat" in '' | '#'*) continue ;; esac
                # shellcheck disable=SC2053 # the pattern is a glob on purpose
                [[ "$s" == $pat || "$s" == $pat/* ]] && fail "COPY source $s is excluded by .dockerignore pattern $pat"
            done <"$ignore"
        fi
    done
done < <(echo "$instructions" | grep -i '^[[:space:]]*COPY[[:space:]]')
ok "COPY sources exist and are in the build context"

# 2. Stages: a build stage and a final runtime stage on Debian 12, no ADD, no :latest base.
echo "$stages" | grep -qx build || fail "no stage named build"
[ "$(echo "$stages" | tail -1)" = runtime ] || fail "the last stage should be runtime"
grep -q '^ARG DEBIAN_IMAGE=debian:bookworm-slim$' "$df" || fail "base image is not debian:bookworm-slim"
echo "$instructions" | grep -qi '^ADD ' && fail "use COPY, not ADD"
echo "$instructions" | grep -i '^FROM' | grep -q ':latest' && fail "a FROM uses :latest"
ok "stages"

# 3. install-deps.sh is the one installer: --build in the build stage, --runtime in runtime,
#    and the script accepts both options.
build_part=$(echo "$instructions" | sed -n '/^FROM .* AS build$/,/^FROM /p')
runtime_part=$(echo "$instructions" | sed -n '/^FROM .* AS runtime$/,$p')
echo "$build_part" | grep -q 'install-deps.sh --build' || fail "build stage does not run install-deps.sh --build"
echo "$runtime_part" | grep -q 'install-deps.sh --runtime' || fail "runtime stage does not run install-deps.sh --runtime"
for opt in --build --runtime; do
    grep -q -- "^ *$opt)" "$src/scripts/install-deps.sh" || fail "install-deps.sh has no $opt option"
done
echo "$build_part" | grep -q 'ctest -L unit' || fail "build stage does not run the unit tests"
ok "install-deps.sh modes"

# 4. apt hygiene: no recommends, lists removed in the same RUN.
while read -r run; do
    if echo "$run" | grep -q 'apt-get install'; then
        echo "$run" | grep -o 'apt-get install[^&;]*' | grep -qv -- '--no-install-recommends' &&
            fail "apt-get install without --no-install-recommends: $run"
        echo "$run" | grep -q 'rm -rf /var/lib/apt/lists' || fail "apt lists not removed: $run"
    fi
done < <(echo "$instructions" | grep '^RUN ')
ok "apt-get usage"

# 5. Runtime: Microsoft's driver only behind MSODBC (default 0), non-root user, tini as PID 1
#    with the entrypoint in exec form, entrypoint installed from docker/entrypoint.sh.
echo "$runtime_part" | grep -q '^ARG MSODBC=0$' || fail "ARG MSODBC=0 missing in runtime stage"
# shellcheck disable=SC2016 # a literal $MSODBC is searched for
echo "$runtime_part" | grep -q 'if \[ "$MSODBC" = 1 \]' || fail "msodbcsql18 not guarded by MSODBC"
echo "$runtime_part" | grep -q 'ACCEPT_EULA=Y apt-get install.*msodbcsql18' || fail "msodbcsql18 install missing"
user=$(echo "$runtime_part" | awk 'toupper($1) == "USER" {u = $2} END {print u}')
case "$user" in '' | root | 0 | 0:* | root:*) fail "runtime stage runs as root (USER '$user')" ;; esac
entry=$(echo "$runtime_part" | grep '^ENTRYPOINT ')
[[ "$entry" == 'ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/sqlq-entrypoint"]' ]] ||
    fail "ENTRYPOINT is not tini + sqlq-entrypoint in exec form: $entry"
echo "$runtime_part" | grep -q '^COPY docker/entrypoint.sh /usr/local/bin/sqlq-entrypoint$' ||
    fail "entrypoint script not copied to /usr/local/bin/sqlq-entrypoint"
echo "$runtime_part" | grep -q '^COPY --from=build /out/bin/sqlq /usr/local/bin/sqlq$' ||
    fail "sqlq binary not copied from the build stage"
echo "$runtime_part" | grep -q 'tini' || fail "tini not installed"
grep -q 'install(TARGETS sqlq RUNTIME DESTINATION bin)' "$src/CMakeLists.txt" ||
    fail "CMake does not install sqlq to bin (the Dockerfile copies /out/bin/sqlq)"
ok "runtime stage: user $user, tini, entrypoint, MSODBC guard"

# 6. Compose and Kubernetes files: parse, services referenced exist, mounted files exist.
if python3 -c 'import yaml' 2>/dev/null; then
    python3 - "$src/docker" <<'EOF' || fail "compose/k8s checks (see above)"
import os, sys, yaml
d = sys.argv[1]
bad = 0
def err(msg):
    global bad
    print("FAIL:", msg, file=sys.stderr)
    bad += 1
for name in ("compose.yaml", "compose.mssql.yaml"):
    path = os.path.join(d, name)
    doc = yaml.safe_load(open(path))
    services = doc.get("services") or {}
    if not services:
        err(f"{name}: no services")
    for sname, svc in services.items():
        deps = svc.get("depends_on") or {}
        for dep in (deps if isinstance(deps, list) else deps.keys()):
            if dep not in services:
                err(f"{name}: {sname} depends on unknown service {dep}")
        for vol in svc.get("volumes") or []:
            host = vol.split(":")[0] if isinstance(vol, str) else vol.get("source", "")
            if host.startswith("."):
                if not os.path.exists(os.path.normpath(os.path.join(d, host))):
                    err(f"{name}: {sname} mounts {host}, which does not exist")
        for port in svc.get("ports") or []: # published on loopback only, never on every interface
            if not str(port).startswith("127.0.0.1:"):
                err(f"{name}: {sname} publishes {port} on every interface (use 127.0.0.1:HOST:CONTAINER)")
        build = svc.get("build")
        if isinstance(build, dict):
            ctx = os.path.normpath(os.path.join(d, build.get("context", ".")))
            if not os.path.exists(os.path.join(ctx, build.get("dockerfile", "Dockerfile"))):
                err(f"{name}: {sname} builds from a missing Dockerfile")
    print(f"ok: {name}: {len(services)} services")
kinds = []
k8s = os.path.join(d, "k8s")
for f in sorted(os.listdir(k8s)):
    if f.endswith(".yaml"):
        for doc in yaml.safe_load_all(open(os.path.join(k8s, f))):
            if doc:
                kinds.append(doc.get("kind"))
                if not doc.get("apiVersion") or not doc.get("metadata", {}).get("name"):
                    err(f"k8s/{f}: a document without apiVersion or metadata.name")
for want in ("Deployment", "ScaledObject", "TriggerAuthentication", "Secret"):
    if want not in kinds:
        err(f"k8s: no {want}")
if kinds.count("Deployment") < 2:
    err("k8s: want a bridge and a consumer Deployment")
print("ok: k8s kinds", ", ".join(sorted(set(k for k in kinds if k))))
sys.exit(1 if bad else 0)
EOF
else
    echo "note: python3 yaml module not installed: compose/k8s parse check skipped"
fi

# 7. Shell scripts pass shellcheck when it is installed.
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -s sh "$src/docker/entrypoint.sh" || fail "shellcheck docker/entrypoint.sh"
    shellcheck "$src/scripts/install-deps.sh" || fail "shellcheck scripts/install-deps.sh"
    ok "shellcheck"
fi

# No example connects as a role named sqlq: on PostgreSQL its default search_path ("$user",
# public) would resolve its unqualified names into sqlq's own schema (docs/capture.md).
if grep -rnE 'UID=sqlq;|_USER: sqlq|-U +sqlq|"-U", "sqlq"' "$src/docker" >&2; then
    fail "an example uses the role name sqlq (the name of sqlq's schema)"
else
    ok "no example role is named sqlq"
fi

if [ "$errors" -gt 0 ]; then
    echo "$errors problem(s)" >&2
    exit 1
fi
echo "all docker file checks passed"
