/* cursor_query: the SQL of one cursor poll: rows after the checkpoint, below "now - lag", in
 * (cursor, key) order, per dialect. Pure text building, unit-tested without a database. */
#ifndef SQLQ_CURSOR_QUERY_H
#define SQLQ_CURSOR_QUERY_H

#include "buf.h"
#include "dialect.h"
#include "keyset.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_cursor_query {
    const sqlq_dialect *dialect;
    const sqlq_table_name *table;
    const char *const *columns; /* the columns published, in table order */
    size_t ncolumns;
    const sqlq_column *defs; /* NULL, or ncolumns definitions: some read as text (row_json.h) */
    const sqlq_keyset_col *order; /* the cursor column first, then the key columns */
    size_t norder;
    int safety_lag_ms;
    bool watermark;  /* integer cursor with a lag: bounded by "cursor <= ?" (the watermark) */
    bool after;      /* a checkpoint exists: "(cursor, key) > (?, …)" */
    bool descending; /* the last row instead of the first ones (start_from now) */
    bool count;      /* SELECT count(*) instead of rows (status: pending changes) */
    int limit;
} sqlq_cursor_query;

/* In map: the '?' that binds the watermark. */
#define SQLQ_CURSOR_PARAM_WATERMARK ((size_t)-1)
/* Selected beside the table's columns: the checkpoint form of order[i] as "__sqlq_v<i>". */
#define SQLQ_CURSOR_VALUE_PREFIX "__sqlq_v"

/* The statement. map receives, per '?', an index into order or SQLQ_CURSOR_PARAM_WATERMARK
 * (map_cap >= 2 * norder). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_query_sql(const sqlq_cursor_query *q, sqlq_buf *out,
                                                 size_t *map, size_t map_cap, size_t *out_nmap);

/* The condition "cursor < now - lag" of a timestamp or rowversion cursor, computed by the
 * database: PostgreSQL clock_timestamp(), SQL Server SYSDATETIME()/SYSDATETIMEOFFSET() or
 * MIN_ACTIVE_ROWVERSION() (exact: no lag needed), SQLite julianday('now'). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_bound_sql(const sqlq_dialect *d,
                                                 const sqlq_keyset_col *cursor, int safety_lag_ms,
                                                 sqlq_buf *out);

#endif
