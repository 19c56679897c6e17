#!/usr/bin/env bash
# What only one database needs lives in that database's folder (sql/sqlite, sql/postgres,
# sql/mariadb, sql/mssql): no other product file (common/ message/ retry/ queue/ sql/ bridge/
# consumer/ health/ cli/, *.c and *.h) names a database in its code or tests a dialect.
#
# The rule, on each file with its comments taken out (comments may explain a database's ways):
# - no identifier has a database's name as one of its _-separated parts: sqlite, sqlite3,
#   postgres, postgresql, pg, mariadb, mysql, mssql, sqlserver (is_pg, change_log_pg,
#   SQLQ_PG_WAKE_CLASS, sqlite_infinity: such code belongs in the folder, or is named for the
#   feature it serves);
# - no string literal holds a dialect's name in lower case (sqlite, postgres, postgresql,
#   mariadb, mysql, mssql, as a word): that is how a dialect is tested (strcmp(d->name, …)) or a
#   driver's name matched;
# - no string literal names a database for people (SQLite, PostgreSQL, MariaDB, MySQL,
#   SQL Server): messages, help and logs that need one take it from the dialect (title) or from
#   text the database's folder provides (a source's title, a dialect's config_doc).
# One exception: the dialect registry, sql/core/dialect.c and sql/core/dialect.h, lists the
# registered dialect tables by their names (sqlq_dialect_<database>).
# Usage: test_database_names.sh ROOT
set -euo pipefail
root=${1:?usage: test_database_names.sh ROOT}
python3 - "$root" <<'PY'
import os
import re
import sys

root = sys.argv[1]
ROOMS = "common message retry queue sql bridge consumer health cli".split()
DATABASE_FOLDERS = ("sql/sqlite/", "sql/postgres/", "sql/mariadb/", "sql/mssql/")
REGISTRY = {"sql/core/dialect.c", "sql/core/dialect.h"}
PART = re.compile(r"^(?:sqlite3?|postgres(?:ql)?|pg|mariadb|mysql|mssql|sqlserver)$", re.I)
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
REGISTERED = re.compile(r"^sqlq_dialect_(?:sqlite|postgres|mariadb|mssql)$")
DIALECT_NAME = re.compile(r"\b(?:sqlite|postgres|postgresql|mariadb|mysql|mssql)\b")
TITLE = re.compile(r"\b(?:SQLite|PostgreSQL|MariaDB|MySQL|SQL Server)\b")


def code_and_strings(text):
    """The text without comments, with each string or character literal between NULs."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append("\0" + text[i:j + 1] + "\0")
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


found = []
for room in ROOMS:
    for folder, _, files in os.walk(os.path.join(root, room)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if not name.endswith((".c", ".h")) or rel.startswith(DATABASE_FOLDERS):
                continue
            with open(path, encoding="utf-8") as f:
                text = code_and_strings(f.read())
            for number, line in enumerate(text.split("\n"), 1):
                for k, piece in enumerate(line.split("\0")):
                    if k % 2:  # a literal
                        m = DIALECT_NAME.search(piece) or TITLE.search(piece)
                        if m:
                            found.append(f"{rel}:{number}: string names {m.group(0)}: {piece[:80]}")
                        continue
                    for ident in IDENT.findall(piece):
                        if rel in REGISTRY and REGISTERED.match(ident):
                            continue
                        if any(PART.match(p) for p in ident.split("_")):
                            found.append(f"{rel}:{number}: identifier {ident}")
for line in found:
    print(line)
if found:
    print(f"FAIL: {len(found)} places outside the database folders name a database; move the "
          "code into the folder, or take the name from the dialect or source", file=sys.stderr)
    sys.exit(1)
print("ok: no product file outside sql/<database>/ names a database or tests a dialect")
PY
