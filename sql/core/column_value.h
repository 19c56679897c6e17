/* column_value: the JSON value of one database column, given the text (or bytes) the ODBC
 * driver returned for it and the column's ODBC type and declared type name (docs/types.md).
 * sql/row_json reads result sets with it. */
#ifndef SQLQ_COLUMN_VALUE_H
#define SQLQ_COLUMN_VALUE_H

#include "dialect.h"

#include <jansson.h>
#include <stddef.h>

/* The JSON shape of a column. */
typedef enum {
    SQLQ_VALUE_TEXT,
    SQLQ_VALUE_BOOL,
    SQLQ_VALUE_INT,
    SQLQ_VALUE_DECIMAL,
    SQLQ_VALUE_FLOAT,
    SQLQ_VALUE_BINARY,
    SQLQ_VALUE_DATE,
    SQLQ_VALUE_TIME,
    SQLQ_VALUE_TIMESTAMP,
    SQLQ_VALUE_TIMESTAMP_UTC, /* PostgreSQL timestamptz: psqlODBC drops the offset; the session is
                                 UTC */
    SQLQ_VALUE_GUID,
    SQLQ_VALUE_TIME_TEXT /* a date/time as the server's exact text (exact_time_text dialects:
                          * PostgreSQL; SQLQ_ROW_JSON_TIME_TEXT) */
} sqlq_value_kind;

/* The kind of a column's values: the ODBC type decides, except where the declared type name knows
 * better (sqliteodbc reports NUMERIC/DECIMAL as DOUBLE or VARCHAR; psqlODBC without
 * BoolsAsChar=0 reports booleans as text). */
sqlq_value_kind sqlq_column_value_kind(short sql_type, const char *type_name,
                                       const sqlq_dialect *d);
/* The value of text (len bytes; NULL = SQL NULL, JSON null) in the given shape; NULL when out of
 * memory. */
json_t *sqlq_column_value(sqlq_value_kind kind, const sqlq_dialect *d, const char *text,
                          size_t len);
/* A date/time as the server's own text (exact_time_text dialects, SQLQ_ROW_JSON_TIME_TEXT), in
 * the ISO 8601 form PostgreSQL's to_json() writes; NULL when the text is not one. */
json_t *sqlq_column_value_time_text(const char *text, size_t len);
/* SQLite: the exact text of a REAL (quote(col)) replaces v, the value made of the driver's
 * 15-digit text (consumes v, returns the result). */
json_t *sqlq_column_value_exact(json_t *v, sqlq_value_kind kind, const char *exact);

#endif
