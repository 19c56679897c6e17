/* row_json: the rows of an ODBC result set as JSON objects, typed as docs/types.md says. */
#ifndef SQLQ_ROW_JSON_H
#define SQLQ_ROW_JSON_H

#include "db.h"
#include "result.h"

#include <jansson.h>
#include <sql.h>
#include <stddef.h>

typedef struct sqlq_row_json sqlq_row_json;

/* Describe the result set of an executed statement (SQLNumResultCols + SQLDescribeCol).
 * A statement without a result set gives zero columns. */
SQLQ_NODISCARD sqlq_result sqlq_row_json_create(SQLHSTMT stmt, sqlq_dialect_kind dialect,
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
json_t *sqlq_row_json_value(short sql_type, const char *type_name, sqlq_dialect_kind dialect,
                            const char *text, size_t len);

#endif
