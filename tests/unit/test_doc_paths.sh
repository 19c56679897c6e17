#!/usr/bin/env bash
# Every source path a document names (`sql/core/db.c`, `sql/capture/capture*.c`) exists in the tree, so a
# moved file cannot leave the docs pointing at its old place. Usage: test_doc_paths.sh ROOT DOC...
set -euo pipefail
root=${1:?}
shift
status=0
for doc in "$@"; do
    paths=$(grep -o '\b\(bench\|bridge\|cli\|common\|consumer\|docker\|health\|message\|queue\|retry\|scripts\|sql\|tests\)/[A-Za-z0-9_*./-]*\.\(c\|h\|sh\|py\|cmake\|md\)\b' \
        "$root/$doc" | sort -u)
    for p in $paths; do
        # shellcheck disable=SC2086 # a glob such as sql/capture/capture*.c must match something
        if ! compgen -G "$root/$p" >/dev/null; then
            echo "$doc names $p, which does not exist" >&2
            status=1
        fi
    done
done
exit $status
