/* row_json: the rows of an ODBC result set as JSON objects, typed as docs/types.md says. */
#ifndef SQLQ_ROW_JSON_H
#define SQLQ_ROW_JSON_H

#include "buf.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <sql.h>
#include <stddef.h>

typedef struct sqlq_row_json sqlq_row_json;

/* Describe the result set of an executed statement (SQLNumResultCols + SQLDescribeCol).
 * A statement without a result set gives zero columns. */
SQLQ_NODISCARD sqlq_result sqlq_row_json_create(SQLHSTMT stmt, const sqlq_dialect *dialect,
                                                sqlq_row_json **out, sqlq_error *err);
void sqlq_row_json_destroy(sqlq_row_json *r);
size_t sqlq_row_json_ncols(const sqlq_row_json *r);
const char *sqlq_row_json_name(const sqlq_row_json *r, size_t i);
short sqlq_row_json_sql_type(const sqlq_row_json *r, size_t i);

/* The current row (after SQLFetch succeeded) as a new JSON object keyed by column name,
 * read with SQLGetData column by column, long values in pieces. */
SQLQ_NODISCARD sqlq_result sqlq_row_json_read(sqlq_row_json *r, json_t **out_row, sqlq_error *err);
/* The same values as an array in result-set order: for a result whose names may repeat
 * (`SELECT b.*, r.*`), read by position with sqlq_row_json_name. */
SQLQ_NODISCARD sqlq_result sqlq_row_json_read_values(sqlq_row_json *r, json_t **out_values,
                                                     sqlq_error *err);

/* Exposed for unit tests: the JSON value of one column given its text as the driver returned
 * it (NULL text = SQL NULL) and its ODBC type and declared type name. */
json_t *sqlq_row_json_value(short sql_type, const char *type_name, const sqlq_dialect *dialect,
                            const char *text, size_t len);

/* Columns the ODBC driver cannot read exactly are selected as the server's own text, so every
 * value the database holds arrives as that value (docs/types.md): PostgreSQL date, time, timetz,
 * timestamp and timestamptz go through CAST(col AS text) (DateStyle ISO, TimeZone UTC: the
 * session's, sql/db.c), which row_json turns into the ISO 8601 form to_json(col) writes, byte
 * for byte ("2024-05-01T10:00:00.5+00:00"; "infinity", "-infinity", "0044-03-15 BC",
 * "5874897-12-31" as PostgreSQL writes them; psqlODBC turns those into other dates). */
bool sqlq_row_json_needs_text(const sqlq_dialect *d, const sqlq_column *c);
/* The select (sqlq_row_json_select_sql) puts a NULL column of this name just before such a
 * text column: row_json reads the next column as a PostgreSQL date/time in text and leaves
 * the marker out of the row. */
#define SQLQ_ROW_JSON_TIME_TEXT "__sqlq_pgtime"
/* SQLite: sqliteodbc hands REAL values over as text with 15 significant digits (0.1 + 0.2 would
 * arrive as 0.3). For a column that may hold REALs (any but TEXT affinity) the select also
 * reads the exact text of a REAL value (quote(col), which round-trips) as a column of this name
 * just before it; row_json takes the value of the next column from it and leaves it out of
 * the row. */
#define SQLQ_ROW_JSON_EXACT_COL "__sqlq_exact"

/* Append the select expression of column c, prefixed (prefix"name", e.g. r."at"): the column
 * itself, or its text form when sqlq_row_json_needs_text, preceded by the marker
 * (`NULL AS "__sqlq_pgtime", CAST(r."at" AS text)`); on SQLite preceded by the exact-REAL
 * column (`CASE … END AS "__sqlq_exact", `). The caller adds the alias (needed when
 * sqlq_row_json_needs_text). */
SQLQ_NODISCARD sqlq_result sqlq_row_json_select_sql(const sqlq_dialect *d, const char *prefix,
                                                    const sqlq_column *c, sqlq_buf *out);

/* The capture poll reads the row as r.* (its columns follow ALTER TABLE,
 * capture_table_shape.c) and after it, for each column that needs it, the exact form (sqlq_row_json_fixup_sql: the text
 * of sqlq_row_json_needs_text without a marker, or on SQLite the exact text of a REAL);
 * sqlq_row_json_fixup turns the driver's value v of column c into the exact one, in the same
 * form as sqlq_row_json_select_sql gives (consumes v, returns the result). */
bool sqlq_row_json_needs_fixup(const sqlq_dialect *d, const sqlq_column *c);
SQLQ_NODISCARD sqlq_result sqlq_row_json_fixup_sql(const sqlq_dialect *d, const char *prefix,
                                                   const sqlq_column *c, sqlq_buf *out);
json_t *sqlq_row_json_fixup(const sqlq_dialect *d, const sqlq_column *c, json_t *v,
                            const json_t *fix);

#endif
