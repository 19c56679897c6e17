/* cursor_column: whether a column can serve as a cursor (with the primary key as tiebreaker),
 * and the reason, in words a user can act on, when it cannot. */
#ifndef SQLQ_CURSOR_COLUMN_H
#define SQLQ_CURSOR_COLUMN_H

#include "db.h"
#include "keyset.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Check the cursor column (and soft-delete column, may be NULL) of t and return the order
 * columns: the cursor first, then the key columns other than the cursor (names borrowed from
 * t; free the array with sqlq_cursor_column_free). *out_soft_delete: column index or -1.
 * SQLQ_E_INVALID with the reason for: a missing column, a nullable cursor, floating point,
 * text, date, decimal, binary; on SQLite also stored values that do not fit the declared type. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_column_check(sqlq_db *db, const sqlq_table *t,
                                                    const char *cursor, const char *soft_delete,
                                                    sqlq_keyset_col **out_order, size_t *out_norder,
                                                    int *out_soft_delete, sqlq_error *err);
void sqlq_cursor_column_free(sqlq_keyset_col *order, size_t n);

/* Pure part of the check: NULL when c can be a cursor (class in *out), else why not. */
const char *sqlq_cursor_column_unsafe(const sqlq_dialect *d, const sqlq_column *c,
                                      sqlq_value_class *out);

/* Whether a soft-delete column's value marks the row deleted: anything but NULL, false, 0,
 * "0", "false", "f" and "". */
bool sqlq_cursor_column_soft_deleted(const json_t *v);

#endif
