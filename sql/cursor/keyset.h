/* keyset: "the rows after this (cursor, key) tuple" as SQL for each dialect (keyset pagination). */
#ifndef SQLQ_KEYSET_H
#define SQLQ_KEYSET_H

#include "buf.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the values of a column are compared, carried in a checkpoint and bound back. A
 * checkpoint holds each value in "checkpoint form" (sqlq_keyset_value_sql): an integer, or text
 * that casts back to exactly the same value, so a tuple comparison resumes exactly. */
typedef enum {
    SQLQ_VALUE_INT = 0,     /* integer types: JSON integer, bound as int64 */
    SQLQ_VALUE_TEXT,        /* character types: compared in the column's collation */
    SQLQ_VALUE_EXACT,       /* decimal, uuid, date, time, bool: text cast back to the type */
    SQLQ_VALUE_TIMESTAMP,   /* timestamp without time zone: ISO 8601 text, full precision */
    SQLQ_VALUE_TIMESTAMPTZ, /* timestamp with time zone: ISO 8601 UTC text ending in Z */
    SQLQ_VALUE_ROWVERSION   /* SQL Server rowversion: its 8 bytes as a bigint */
} sqlq_value_class;

const char *sqlq_value_class_name(sqlq_value_class c);

typedef struct sqlq_keyset_col {
    const char *name; /* column name, unquoted */
    const char *type; /* declared type name (lowercase); used for casts on PostgreSQL/SQL Server */
    sqlq_value_class cls;
} sqlq_keyset_col;

/* Whether the column's values can take part in an ordered tuple comparison. False, with *why
 * set to a static explanation, for floating point (rounding breaks equality), binary and
 * document types. */
bool sqlq_keyset_classify(const sqlq_dialect *d, const sqlq_column *c, sqlq_value_class *out,
                          const char **why);

/* The column in checkpoint form, e.g. to_char("ts" AT TIME ZONE 'UTC', …) on PostgreSQL. */
SQLQ_NODISCARD sqlq_result sqlq_keyset_value_sql(const sqlq_dialect *d, const sqlq_keyset_col *c,
                                                 sqlq_buf *out);
/* A placeholder for a checkpoint-form value of the column: "?" or "CAST(? AS timestamptz)". */
SQLQ_NODISCARD sqlq_result sqlq_keyset_param_sql(const sqlq_dialect *d, const sqlq_keyset_col *c,
                                                 sqlq_buf *out);

/* Append the condition "(c1, …, cn) > (?, …, ?)": a row-value comparison on SQLite and
 * PostgreSQL, the expanded form (c1 > ? OR (c1 = ? AND (c2 > ? OR …))) on SQL Server, which has
 * no row values. map[j] receives the index into cols of the value the j-th '?' binds;
 * map_cap must be at least 2n - 1 (the expanded form binds every value but the last twice). */
SQLQ_NODISCARD sqlq_result sqlq_keyset_after_sql(const sqlq_dialect *d, const sqlq_keyset_col *cols,
                                                 size_t n, sqlq_buf *out, size_t *map,
                                                 size_t map_cap, size_t *out_nmap);
/* Append "c1, c2, …" (quoted) for ORDER BY: ascending, tuple order. */
SQLQ_NODISCARD sqlq_result sqlq_keyset_order_sql(const sqlq_dialect *d, const sqlq_keyset_col *cols,
                                                 size_t n, sqlq_buf *out);

/* A checkpoint-form JSON value as a parameter. Text parameters borrow the string from v. */
SQLQ_NODISCARD sqlq_result sqlq_keyset_param(const sqlq_keyset_col *c, const json_t *v,
                                             sqlq_param *out, sqlq_error *err);

/* A checkpoint-form value as stored text (integer digits or the text itself; malloc'd, NULL when
 * v is neither), and back to JSON for column c. */
char *sqlq_keyset_value_text(const json_t *v);
json_t *sqlq_keyset_value_json(const sqlq_keyset_col *c, const char *text);

/* A checkpoint-form value as a message version: integers as they are (also as decimal text),
 * timestamps as microseconds since the epoch (UTC; a timestamp without time zone read as
 * UTC). False when v is neither. The cursor source and backfill both use it, so their
 * versions of one row agree. */
bool sqlq_keyset_version(const sqlq_keyset_col *c, const json_t *v, int64_t *out);

/* Parse ISO 8601 "YYYY-MM-DD[T ]HH:MM[:SS[.fraction]][Z|±HH[:MM]]" (or a bare date) into
 * microseconds since the epoch; text without a zone is read as UTC. False when malformed. */
bool sqlq_keyset_parse_iso(const char *text, int64_t *out_us);

#endif
