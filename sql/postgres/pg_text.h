/* pg_text: a PostgreSQL column value as pgoutput sends it (the text of the type's output
 * function) turned into the JSON the trigger source emits for the same value (docs/types.md,
 * "The logical source"). */
#ifndef SQLQ_PG_TEXT_H
#define SQLQ_PG_TEXT_H

#include "buf.h"
#include "column_value.h"
#include "db.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Types with OIDs below this are PostgreSQL's own (pg_type.dat): never domains, the same OID on
 * every server. A type at or above it (information_schema's, an extension's, the user's) is
 * known only by its catalog row: sqlq_pg_text_type_read. */
#define SQLQ_PG_TEXT_FIRST_USER_OID 10000u

/* A column's type as a pgoutput Relation message gives it, completed from the catalog. */
typedef struct sqlq_pg_text_type {
    uint32_t oid;      /* Relation message: the column's type OID */
    int32_t typmod;    /* Relation message: its atttypmod (-1: none); no value depends on it */
    uint32_t base_oid; /* the type under its domains (pg_type.typbasetype, all the way down);
                        * 0: oid itself (right for every type below SQLQ_PG_TEXT_FIRST_USER_OID) */
    char name[64];     /* pg_type.typname of oid (unqualified); "": not read */
} sqlq_pg_text_type;

/* Fill t->base_oid and t->name of t->oid from the catalog: one query for a type at or above
 * SQLQ_PG_TEXT_FIRST_USER_OID, nothing for PostgreSQL's own. A type's base never changes:
 * cache the result by OID. SQLQ_E_NOT_FOUND when no type has that OID (dropped since). */
SQLQ_NODISCARD sqlq_result sqlq_pg_text_type_read(sqlq_db *db, sqlq_pg_text_type *t,
                                                  sqlq_error *err);

/* How one column's text becomes JSON; made once per column of a Relation message. */
typedef struct sqlq_pg_text_column {
    sqlq_value_kind kind; /* the value kind the trigger source gives the column (column_value.h) */
    bool bytea;           /* the text is byteaout's: "\x…" (hex) or the escape format */
    bool by_key;          /* the text is not the trigger source's value: read this column of
                           * the row by key through ODBC instead (type lo: psqlODBC reads the
                           * large object's bytes, pgoutput sends its OID) */
} sqlq_pg_text_column;

/* The column of type t whose type the table's description (sqlq_table, as the trigger source
 * describes it) names declared (sqlq_column.type: format_type(oid, typmod), e.g. "timestamp
 * with time zone", "public.mood"); declared NULL: the name is derived from t (exact for
 * PostgreSQL's own types; a user type by t->name alone). */
void sqlq_pg_text_column_init(sqlq_pg_text_column *c, const sqlq_pg_text_type *t,
                              const char *declared);

/* The JSON value of the column's text (len bytes as pgoutput sent them; NULL text = SQL NULL,
 * JSON null) on a connection made with sqlq_pg_text_options. NULL when out of memory. For a
 * by_key column it is the text as a string, not the trigger source's value. */
json_t *sqlq_pg_text_value(const sqlq_pg_text_column *c, const char *text, size_t len);

/* The settings the output functions' text depends on, as the replication connection's
 * `options` (the PQconnectdbParams keyword; pgoutput runs the output functions in the
 * walsender, with that connection's settings): the ones the trigger source's ODBC session pins
 * (DateStyle ISO, TimeZone UTC: sql/db.c; extra_float_digits 2: psqlODBC; client_encoding UTF8:
 * psqlODBC's Unicode driver), and the ones it inherits from the server, the database and the
 * role, as that session has them: inherited is the row SQLQ_PG_TEXT_INHERITED_SQL gives on it
 * (setting name → value; NULL: inherit them likewise, right when the replication connection
 * logs in as the same role to the same database). Spaces and backslashes in a value are escaped
 * as the server's option parser wants. */
SQLQ_NODISCARD sqlq_result sqlq_pg_text_options(const json_t *inherited, sqlq_buf *out);
/* IntervalStyle: interval; lc_monetary: money; bytea_output: bytea inside arrays and composites
 * (a bytea column arrives as bytes either way); search_path: regclass, regtype, regproc …. */
#define SQLQ_PG_TEXT_INHERITED_SQL                                                                 \
    "SELECT current_setting('IntervalStyle') AS \"IntervalStyle\", "                               \
    "current_setting('lc_monetary') AS lc_monetary, "                                              \
    "current_setting('bytea_output') AS bytea_output, "                                            \
    "current_setting('search_path') AS search_path"
/* sqlq_pg_text_options with the inherited settings read on db, the trigger source's ODBC
 * connection to the same database. */
SQLQ_NODISCARD sqlq_result sqlq_pg_text_options_read(sqlq_db *db, sqlq_buf *out, sqlq_error *err);

#endif
