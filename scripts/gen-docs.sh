#!/usr/bin/env bash
# Regenerate the documents that are produced by the binary (docs/configuration.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sqlq=${SQLQ_BIN:-$root/build/cli/sqlq}
[ -x "$sqlq" ] || { echo "gen-docs: build sqlq first (cmake --build build)" >&2; exit 1; }
"$sqlq" config markdown >"$root/docs/configuration.md"
echo "wrote docs/configuration.md"
