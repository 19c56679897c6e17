#!/usr/bin/env bash
# Install everything sqlq needs to build, test and run: Debian packages, then the pinned npm
# packages (Azurite, @azure/storage-queue, playwright-core) from package-lock.json. Used by the README, by
# .ci/run and by docker/Dockerfile. Idempotent: a second run only checks.
#   scripts/install-deps.sh            build + test + run (default)
#   scripts/install-deps.sh --runtime  only what the sqlq binary needs at run time
#   scripts/install-deps.sh --build    build + unit tests, no test servers (Docker build stage)
#   scripts/install-deps.sh --no-npm   skip the npm packages
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
mode=all
npm=yes
for arg in "$@"; do
    case "$arg" in
        --runtime) mode=runtime; npm=no ;;
        --build) mode=build; npm=no ;;
        --no-npm) npm=no ;;
        -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
        *) echo "install-deps: unknown option $arg" >&2; exit 2 ;;
    esac
done

runtime_pkgs=(libcurl4 libssl3 libjansson4 libexpat1 libmicrohttpd12 libpq5 unixodbc odbc-postgresql
    libsqliteodbc tdsodbc odbc-mariadb ca-certificates)
# cmocka is here, not in test_pkgs: CMake builds the unit tests by default (SQLQ_BUILD_TESTS).
build_pkgs=(build-essential cmake pkg-config libcurl4-openssl-dev libssl-dev libjansson-dev
    libexpat1-dev libmicrohttpd-dev libpq-dev unixodbc-dev libcmocka-dev)
# clang + its sanitizer/libFuzzer runtime: scripts/fuzz.sh (run by scripts/test.sh after ctest).
# chromium: the browser the console tests drive (playwright-core, pinned in package-lock.json,
# never downloads one); prometheus: promtool checks the alert rules in docker/monitoring/;
# python3-yaml: the KEDA objects' structural check (tests/support/keda_check.py).
test_pkgs=(postgresql mariadb-server sqlite3 nodejs npm curl procps clang libclang-rt-14-dev
    chromium prometheus python3-yaml)

case "$mode" in
    runtime) pkgs=("${runtime_pkgs[@]}") ;;
    build) pkgs=("${runtime_pkgs[@]}" "${build_pkgs[@]}") ;;
    all) pkgs=("${runtime_pkgs[@]}" "${build_pkgs[@]}" "${test_pkgs[@]}") ;;
esac

missing=()
for p in "${pkgs[@]}"; do
    # nodejs/npm may come from elsewhere (nvm, the image): only ask apt when the command is absent.
    case "$p" in
        nodejs) command -v node >/dev/null 2>&1 && continue ;;
        npm) command -v npm >/dev/null 2>&1 && continue ;;
    esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "install-deps: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# odbc-mariadb registers its driver as "MariaDB Unicode" when installed; register it by that
# name if it is not (an image that cleaned /etc/odbcinst.ini, a package without the hook).
if ! odbcinst -q -d -n "MariaDB Unicode" >/dev/null 2>&1; then
    lib=$(dpkg -L odbc-mariadb 2>/dev/null | grep '/libmaodbc\.so$' | head -1 || true)
    if [ -n "$lib" ]; then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        printf '[MariaDB Unicode]\nDescription=MariaDB Connector/ODBC (Unicode)\nDriver=%s\n' "$lib" \
            >"${TMPDIR:-/tmp}/sqlq-maodbc.ini"
        echo "install-deps: registering ODBC driver MariaDB Unicode ($lib)"
        $sudo odbcinst -i -d -f "${TMPDIR:-/tmp}/sqlq-maodbc.ini" >/dev/null
        rm -f "${TMPDIR:-/tmp}/sqlq-maodbc.ini"
    fi
fi

if [ "$npm" = yes ]; then
    # The stamp holds the hash of the lock file node_modules was installed from: a content check,
    # so a fresh clone (whose files are all new) does not reinstall what is already there.
    want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
    stamp="$here/node_modules/.sqlq-lock-sha256"
    if [ ! -x "$here/node_modules/.bin/azurite-queue" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "install-deps: npm ci (azurite, @azure/storage-queue, playwright-core, pinned by package-lock.json)"
        (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
        echo "$want" >"$stamp"
    fi
fi
echo "install-deps: ok"
