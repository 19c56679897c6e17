/* cursor_shape: the watched table's shape under the cursor source. The poll names the table's
 * columns, so after each poll query the table is described again: other columns (added,
 * dropped, renamed, retyped) are followed, a changed cursor, key or soft-delete column stops
 * the source (its checkpoint holds their values). */
#ifndef SQLQ_CURSOR_SHAPE_H
#define SQLQ_CURSOR_SHAPE_H

#include "db.h"
#include "keyset.h"
#include "result.h"
#include "table.h"

#include <stdbool.h>
#include <stddef.h>

/* The table as it is now, what the cursor source keeps of it (the caller takes all of it). */
typedef struct sqlq_cursor_shape {
    sqlq_table *table;
    sqlq_keyset_col *order; /* cursor, then key columns (sqlq_cursor_column_check) */
    size_t norder;
    int soft_delete;        /* column index or -1 */
    const char **columns;   /* the table's column names, in table order (borrowed from table) */
} sqlq_cursor_shape;

/* Describe `was` again after a poll query that returned `ran`. The same table: `ran`, and
 * *out_changed false. Other columns, the same cursor, key and soft-delete column: SQLQ_OK,
 * *out_changed and *out (logged as table_shape_changed; err cleared of the query's failure,
 * which came from the old column list). Another key, cursor or soft-delete column: SQLQ_E_INVALID
 * (not transient) naming the table and what to do, logged as table_key_changed. A failed
 * describe: `ran` when the query failed, else its error. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_shape_check(sqlq_db *db, const char *bridge,
                                                   const char *table_key, const sqlq_table *was,
                                                   const sqlq_keyset_col *order, size_t norder,
                                                   int soft_delete, sqlq_result ran,
                                                   bool *out_changed, sqlq_cursor_shape *out,
                                                   sqlq_error *err);

#endif
