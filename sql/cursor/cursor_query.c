/* cursor_query: the SQL of one cursor poll, per dialect. */
#include "cursor_query.h"

#include "row_json.h"

#include <stdio.h>

sqlq_result sqlq_cursor_bound_sql(const sqlq_dialect *d, const sqlq_keyset_col *cursor,
                                  int safety_lag_ms, sqlq_buf *out)
{
    if (safety_lag_ms < 0 || d->lag_syntax == SQLQ_LAG_NONE)
        return SQLQ_E_INVALID;
    bool tz = cursor->cls == SQLQ_VALUE_TIMESTAMPTZ;
    if (cursor->cls != SQLQ_VALUE_TIMESTAMP && !tz &&
        !(cursor->cls == SQLQ_VALUE_ROWVERSION && d->rowversion))
        return SQLQ_E_INVALID;
    sqlq_result r = SQLQ_OK;
    if (d->lag_syntax == SQLQ_LAG_JULIANDAY) {
        /* julianday parses every ISO 8601 form SQLite writes; the comparison stays exact to
         * well under a millisecond. 'now' is UTC, like CURRENT_TIMESTAMP. */
        r = sqlq_buf_adds(out, "julianday(");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, cursor->name, out);
        if (r == SQLQ_OK)
            r = sqlq_buf_printf(out, ") < julianday('now', '-%d.%03d seconds')",
                                safety_lag_ms / 1000, safety_lag_ms % 1000);
        return r;
    }
    r = sqlq_dialect_quote_ident(d, cursor->name, out);
    if (r != SQLQ_OK)
        return r;
    if (d->lag_syntax == SQLQ_LAG_INTERVAL)
        return sqlq_buf_printf(out, " < %s - interval '%d milliseconds'",
                               tz ? "clock_timestamp()" : "CAST(clock_timestamp() AS timestamp)",
                               safety_lag_ms);
    if (d->lag_syntax == SQLQ_LAG_SYSDATE) /* SYSDATE: the real time, in the session's UTC */
        return sqlq_buf_printf(out, " < SYSDATE(6) - INTERVAL %lld MICROSECOND",
                               (long long)safety_lag_ms * 1000);
    if (cursor->cls == SQLQ_VALUE_ROWVERSION)
        return sqlq_buf_adds(out, " < MIN_ACTIVE_ROWVERSION()");
    return sqlq_buf_printf(out, " < DATEADD(millisecond, -%d, %s)", safety_lag_ms,
                           tz ? "SYSDATETIMEOFFSET()" : "SYSDATETIME()");
}

static sqlq_result select_list(const sqlq_cursor_query *q, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    if (q->count)
        return sqlq_buf_adds(out, "count(*)");
    for (size_t i = 0; i < q->ncolumns && r == SQLQ_OK; i++) {
        if (i > 0)
            r = sqlq_buf_adds(out, ", ");
        if (r == SQLQ_OK && q->defs) { /* exact values (row_json.h) */
            r = sqlq_row_json_select_sql(q->dialect, NULL, &q->defs[i], out);
            if (r == SQLQ_OK && sqlq_row_json_needs_text(q->dialect, &q->defs[i]))
                r = sqlq_buf_adds(out, " AS ");
            if (r == SQLQ_OK && sqlq_row_json_needs_text(q->dialect, &q->defs[i]))
                r = sqlq_dialect_quote_ident(q->dialect, q->columns[i], out);
        } else if (r == SQLQ_OK) {
            r = sqlq_dialect_quote_ident(q->dialect, q->columns[i], out);
        }
    }
    for (size_t i = 0; i < q->norder && r == SQLQ_OK; i++) {
        char alias[32];
        snprintf(alias, sizeof(alias), "%s%zu", SQLQ_CURSOR_VALUE_PREFIX, i);
        r = sqlq_buf_adds(out, q->ncolumns > 0 || i > 0 ? ", " : "");
        if (r == SQLQ_OK)
            r = sqlq_keyset_value_sql(q->dialect, &q->order[i], out);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(out, " AS ");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(q->dialect, alias, out);
    }
    return r;
}

static sqlq_result where_clause(const sqlq_cursor_query *q, sqlq_buf *out, size_t *map,
                                size_t map_cap, size_t *nmap)
{
    const sqlq_keyset_col *c = &q->order[0];
    bool timed = c->cls == SQLQ_VALUE_TIMESTAMP || c->cls == SQLQ_VALUE_TIMESTAMPTZ ||
                 (c->cls == SQLQ_VALUE_ROWVERSION && q->dialect->rowversion);
    sqlq_result r = SQLQ_OK;
    const char *joiner = " WHERE ";
    if (timed) {
        r = sqlq_buf_adds(out, joiner);
        if (r == SQLQ_OK)
            r = sqlq_cursor_bound_sql(q->dialect, c, q->safety_lag_ms, out);
        joiner = " AND ";
    } else if (q->watermark) {
        r = sqlq_buf_adds(out, joiner);
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(q->dialect, c->name, out);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(out, " <= ?");
        if (r == SQLQ_OK)
            map[(*nmap)++] = SQLQ_CURSOR_PARAM_WATERMARK;
        joiner = " AND ";
    }
    if (r == SQLQ_OK && q->after) {
        size_t n = 0;
        r = sqlq_buf_adds(out, joiner);
        if (r == SQLQ_OK)
            r = sqlq_keyset_after_sql(q->dialect, q->order, q->norder, out, map + *nmap,
                                      map_cap - *nmap, &n);
        *nmap += n;
    }
    return r;
}

static sqlq_result order_by(const sqlq_cursor_query *q, sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, " ORDER BY ");
    for (size_t i = 0; i < q->norder && r == SQLQ_OK; i++) {
        if (i > 0)
            r = sqlq_buf_adds(out, ", ");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(q->dialect, q->order[i].name, out);
        if (r == SQLQ_OK && q->descending)
            r = sqlq_buf_adds(out, " DESC");
    }
    return r;
}

sqlq_result sqlq_cursor_query_sql(const sqlq_cursor_query *q, sqlq_buf *out, size_t *map,
                                  size_t map_cap, size_t *out_nmap)
{
    *out_nmap = 0;
    if (q->norder == 0 || map_cap < 2 * q->norder || q->limit < 1)
        return SQLQ_E_INVALID;
    bool top = q->dialect->limit_top && !q->count;
    sqlq_result r = sqlq_buf_adds(out, "SELECT ");
    if (r == SQLQ_OK && top)
        r = sqlq_buf_printf(out, "TOP (%d) ", q->limit);
    if (r == SQLQ_OK)
        r = select_list(q, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " FROM ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(q->dialect, q->table, out);
    if (r == SQLQ_OK)
        r = where_clause(q, out, map, map_cap, out_nmap);
    if (r == SQLQ_OK && !q->count)
        r = order_by(q, out);
    if (r == SQLQ_OK && !top && !q->count)
        r = sqlq_buf_printf(out, " LIMIT %d", q->limit);
    return r;
}
