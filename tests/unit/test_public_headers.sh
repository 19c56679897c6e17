#!/usr/bin/env bash
# Public and private headers. Each library's public set is the links in
# build/include/<library>/ (CMakeLists.txt: sqlq_public_headers). Checks:
# - no internal header (*_internal.h, or one a library lists as private) is in any public set;
# - every public header compiles on its own with only the public sets on the include path, so
#   none leans on another library's internals;
# - <sql.h> and <curl/curl.h> appear only in the public headers listed in docs/architecture.md.
# Usage: test_public_headers.sh BUILD_DIR C_COMPILER
set -euo pipefail

build=${1:?build dir}
cc=${2:?C compiler}
pub=$build/include
src=${SQLQ_SOURCE_DIR:?}
fail() { echo "FAIL: $*" >&2; exit 1; }

[ -d "$pub" ] || fail "$pub missing: configure the build first"
libs=("$pub"/*/)
[ "${#libs[@]}" -ge 8 ] || fail "expected a public header set per library, found ${#libs[@]}"

# The headers a library keeps to itself: *_internal.h and the PRIVATE_HEADERS of its
# sqlq_public_headers call (a library's CMakeLists.txt, or sql/'s, which makes two).
cmakes=$(find "$src" -name CMakeLists.txt -not -path "$src/build*" -not -path "$src/tests/*" \
    -not -path "$src/node_modules/*" -not -path "$src/CMakeLists.txt")
calls=$(python3 - $cmakes <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = re.sub(r"#[^\n]*", "", open(path).read())
    for args in re.findall(r"\bsqlq_public_headers\(([^)]*)\)", text):
        words = args.split()
        priv = words[words.index("PRIVATE_HEADERS") + 1:] if "PRIVATE_HEADERS" in words else []
        print(" ".join([words[0]] + priv))
PY
)
private=()
dirs=()
while read -r target rest; do
    dirs+=("$target")
    for h in $rest; do private+=("$h"); done
done <<<"$calls"
[ "${#dirs[@]}" = "${#libs[@]}" ] || fail "${#dirs[@]} sqlq_public_headers calls but ${#libs[@]} public sets"
while IFS= read -r f; do private+=("$(basename "$f")"); done \
    < <(find "$src"/*/ -name '*_internal.h' -not -path "$src/build*" -not -path "$src/tests/*")
[ "${#private[@]}" -ge 3 ] || fail "found only ${#private[@]} private headers: is the list read right?"
for h in "${private[@]}"; do
    for lib in "${libs[@]}"; do
        [ ! -e "$lib/$h" ] || fail "private header $h is public in $lib"
    done
done

incs=()
for lib in "${libs[@]}"; do incs+=(-I "$lib"); done
# shellcheck disable=SC2207
incs+=($(pkg-config --cflags-only-I jansson odbc libcurl libmicrohttpd 2>/dev/null))

# A private header must not be reachable through the public include path.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "${private[@]}"; do
    printf '#include "%s"\n' "$h" > "$tmp/p.c"
    if "$cc" -std=c11 -D_GNU_SOURCE -fsyntax-only "${incs[@]}" "$tmp/p.c" 2>/dev/null; then
        fail "private header $h is reachable from other libraries' include path"
    fi
done

# Every public header stands alone on public headers.
n=0
for lib in "${libs[@]}"; do
    for h in "$lib"*.h; do
        printf '#include "%s"\n#include "%s"\n' "$(basename "$h")" "$(basename "$h")" > "$tmp/h.c"
        "$cc" -std=c11 -D_GNU_SOURCE -fsyntax-only "${incs[@]}" "$tmp/h.c" \
            || fail "public header $h does not compile on public headers alone"
        n=$((n + 1))
    done
done

# <sql.h> and <curl/curl.h> only where docs/architecture.md says why.
allowed=$(sed -n 's/^- `\([a-z_]*\.h\)` includes `<\(sql\|curl\/curl\)\.h>`.*/\1/p' "$src/docs/architecture.md")
for lib in "${libs[@]}"; do
    for h in $(grep -l '#include <\(sql\|sqlext\|curl/curl\)\.h>' "$lib"*.h 2>/dev/null); do
        b=$(basename "$h")
        grep -qx "$b" <<<"$allowed" || fail "$b includes <sql.h> or <curl/curl.h>: give a handle, or list it and why in docs/architecture.md"
    done
done
echo "ok: $n public headers stand alone; ${#private[@]} private headers out of reach"
