#include "capture_sql.h"

#include "capture_sql_builder.h"
#include "row_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sqlq_capture_stmt_free(sqlq_capture_stmt *s)
{
    if (!s)
        return;
    free(s->sql);
    memset(s, 0, sizeof(*s));
}

void sqlq_cb_changes_from(sqlq_capture_builder *b)
{
    if (sqlq_cb_log(b)->changes_from) {
        sqlq_cb_log(b)->changes_from(b);
        return;
    }
    sqlq_cb_obj(b, b->c->names->log_table);
    sqlq_sql_text_add(&b->t, " AS c");
}

void sqlq_cb_key_match(sqlq_capture_builder *b, const char *left, const char *right,
                       bool right_aliased)
{
    for (size_t i = 0; i < b->c->table->nkey; i++) {
        sqlq_sql_text_add(&b->t, "%s", i ? " AND " : "");
        sqlq_sql_text_col(&b->t, left, sqlq_cb_key_name(b, i));
        if (right_aliased) {
            sqlq_sql_text_add(&b->t, " = %sk%zu", right, i);
        } else {
            sqlq_sql_text_add(&b->t, " = ");
            sqlq_sql_text_col(&b->t, right, sqlq_cb_key_name(b, i));
        }
    }
}

void sqlq_cb_lease_join(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, " LEFT JOIN ");
    sqlq_cb_leases(b);
    sqlq_sql_text_add(&b->t, " AS l ON ");
    sqlq_cb_key_match(b, "l.", "c.", false);
}

/* Versions after the stored sync version; with a horizon only those at or below it
 * (pg_horizon.h: a version above it may still commit), a parameter. A tracked source's
 * relation holds only changes after the sync version and adds nothing. `bound_params`: a
 * sync_param source's poll takes the sync version as a parameter too, read under the lock by
 * the source's own statement (a planner then knows the range). */
void sqlq_cb_sync_bound(sqlq_capture_builder *b, bool bound_params)
{
    const sqlq_capture_log_sql *s = sqlq_cb_log(b);
    if (s->tracked) {
        sqlq_sql_text_add(&b->t, "1 = 1");
        return;
    }
    sqlq_sql_text_add(&b->t, "%s > ", sqlq_cb_ver(b));
    if (bound_params && s->sync_param)
        sqlq_cb_param(b, SQLQ_P_SYNC);
    else
        sqlq_cb_sync_subquery(b);
    if (s->horizon) {
        sqlq_sql_text_add(&b->t, " AND %s <= ", sqlq_cb_ver(b));
        sqlq_cb_param(b, SQLQ_P_HORIZON);
    }
}

/* The operation as change tracking reports it against what this bridge delivered (its sync
 * version, or a released lease of the key at a newer version): a key whose current row was
 * inserted after that is an insert whatever followed; deletes stay deletes (a row created and
 * deleted in between is one delete: it may have been published before its lease was
 * released). Change tracking does this itself. */
static void op_column(sqlq_capture_builder *b)
{
    if (sqlq_cb_log(b)->tracked) {
        sqlq_sql_text_add(&b->t, "%s", sqlq_cb_opcol(b));
        return;
    }
    sqlq_sql_text_add(&b->t, "CASE WHEN c." SQLQ_COL_OP " <> 'U' THEN c." SQLQ_COL_OP
                             " WHEN c." SQLQ_COL_SINCE " > ");
    sqlq_cb_sync_value(b);
    sqlq_sql_text_add(&b->t, " AND (l." SQLQ_COL_VERSION " IS NULL OR l." SQLQ_COL_EXPIRES
                             " IS NOT NULL OR l." SQLQ_COL_VERSION " < c." SQLQ_COL_SINCE
                             ") THEN 'I' ELSE 'U' END");
}

/* Resumed poll: (version, key...) after the bound position, in poll order (a row comparison:
 * an index range on the log's (version, key) index). */
static void resume_bound(sqlq_capture_builder *b, const char *op)
{
    const sqlq_table *t = b->c->table;
    bool typed = sqlq_cb_log(b)->typed_keys;
    sqlq_sql_text_add(&b->t, " AND (%s", sqlq_cb_ver(b));
    for (size_t i = 0; i < t->nkey; i++)
        sqlq_sql_text_col(&b->t, ", c.", sqlq_cb_key_name(b, i));
    sqlq_sql_text_add(&b->t, ") %s (", op);
    sqlq_cb_param(b, SQLQ_P_RESUME_VERSION);
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(&b->t, ", ");
        if (typed)
            sqlq_sql_text_add(&b->t, "CAST(");
        sqlq_cb_param(b, (sqlq_capture_param)(SQLQ_P_RESUME_KEY + i));
        if (typed)
            sqlq_sql_text_add(&b->t, " AS %s)", b->c->key_types[i]);
    }
    sqlq_sql_text_add(&b->t, ")");
}

/* The lower bound of a read that may resume: after the sync version and, resuming, at or
 * after `op` the resume position. resume_max: one scalar lower bound on the version, max() of
 * both, then the row value: with two lower bounds on the column SQLite ranges the index by
 * the first one written (measured: 65 ms from the sync version vs 0.3 ms from max() on a
 * 1M-row log), and it never ranges by a row value. */
static void changes_after(sqlq_capture_builder *b, bool bound_params, bool resume, const char *op)
{
    if (resume && sqlq_cb_log(b)->resume_max) {
        sqlq_sql_text_add(&b->t, "%s >= max(", sqlq_cb_ver(b));
        sqlq_cb_param(b, SQLQ_P_RESUME_VERSION);
        sqlq_sql_text_add(&b->t, ", ");
        sqlq_cb_sync_subquery(b);
        sqlq_sql_text_add(&b->t, " + 1)");
    } else {
        sqlq_cb_sync_bound(b, bound_params);
    }
    if (resume)
        resume_bound(b, op);
}

/* Deliverable now: never leased or released at an older version, or its lease expired. */
static void available(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t,
                      "((l." SQLQ_COL_EXPIRES " IS NULL AND (l." SQLQ_COL_VERSION " IS NULL OR l."
                      SQLQ_COL_VERSION " < %s)) OR l." SQLQ_COL_EXPIRES " < ",
                      sqlq_cb_ver(b));
    sqlq_cb_now(b);
    sqlq_sql_text_add(&b->t, ")");
}

void sqlq_cb_unprocessed(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t,
                      "(l." SQLQ_COL_VERSION " IS NULL OR l." SQLQ_COL_EXPIRES " IS NOT NULL OR l."
                      SQLQ_COL_VERSION " < %s)",
                      sqlq_cb_ver(b));
}

static void order_by_changes(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, " ORDER BY %s", sqlq_cb_ver(b));
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_col(&b->t, ", c.", sqlq_cb_key_name(b, i));
}

static void order_by_batch(sqlq_capture_builder *b, const char *alias)
{
    sqlq_sql_text_add(&b->t, " ORDER BY %sm_v", alias);
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_add(&b->t, ", %sk%zu", alias, i);
}

void sqlq_cb_batch_select(sqlq_capture_builder *b, bool tokens, const char *into)
{
    int m = b->c->max_attempts;
    bool top = b->c->dialect->limit_top;
    const char *ver = sqlq_cb_ver(b);
    sqlq_sql_text_add(&b->t, "SELECT ");
    if (top)
        sqlq_sql_text_add(&b->t, "TOP (%d) ", b->c->max_batch_size);
    for (size_t i = 0; i < b->c->table->nkey; i++) {
        sqlq_sql_text_col(&b->t, "c.", sqlq_cb_key_name(b, i));
        sqlq_sql_text_add(&b->t, " AS k%zu, ", i);
    }
    sqlq_sql_text_add(&b->t, "%s AS m_v, ", ver);
    op_column(b);
    sqlq_sql_text_add(&b->t,
                      " AS m_op, CASE WHEN l." SQLQ_COL_VERSION " = %s AND l." SQLQ_COL_ATTEMPTS
                      " >= %d THEN %d WHEN l." SQLQ_COL_VERSION " = %s THEN l." SQLQ_COL_ATTEMPTS
                      " + 1 ELSE 1 END AS m_att",
                      ver, m, m + 1, ver);
    sqlq_capture_sql_image_columns(b);
    if (tokens) {
        sqlq_sql_text_add(&b->t, ", ");
        sqlq_cb_param(b, SQLQ_P_TOKEN_BASE);
        sqlq_sql_text_add(&b->t, " + row_number() OVER (");
        order_by_changes(b);
        sqlq_sql_text_add(&b->t, ") AS m_tok");
    }
    if (into)
        sqlq_sql_text_add(&b->t, "%s", into);
    sqlq_sql_text_add(&b->t, " FROM ");
    sqlq_cb_changes_from(b);
    sqlq_cb_lease_join(b);
    sqlq_sql_text_add(&b->t, " WHERE ");
    changes_after(b, true, b->resume, ">");
    sqlq_sql_text_add(&b->t, " AND ");
    available(b);
    order_by_changes(b);
    if (!top)
        sqlq_sql_text_add(&b->t, " LIMIT %d", b->c->max_batch_size);
}

/* The batch with lease tokens (base + position), as a derived table's body. A server that
 * computes a window function over every row the WHERE clause passes before LIMIT applies (the
 * whole log past the sync version, sorted, for each poll: MariaDB) has the tokens numbered
 * outside the limited batch (tokens_outside). */
static void batch_with_tokens(sqlq_capture_builder *b)
{
    if (!sqlq_cb_log(b)->tokens_outside) {
        sqlq_cb_batch_select(b, true, NULL);
        return;
    }
    sqlq_sql_text_add(&b->t, "SELECT x.*, ");
    sqlq_cb_param(b, SQLQ_P_TOKEN_BASE);
    sqlq_sql_text_add(&b->t, " + row_number() OVER (ORDER BY x.m_v");
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_add(&b->t, ", x.k%zu", i);
    sqlq_sql_text_add(&b->t, ") AS m_tok FROM (");
    sqlq_cb_batch_select(b, false, NULL);
    sqlq_sql_text_add(&b->t, ") AS x");
}

/* After r.*, the exact form of each described column the driver cannot read exactly
 * (row_json.h: PostgreSQL dates and times as the server's text, SQLite REALs by quote()), as
 * SQLQ_CAPTURE_FIXUP<i> for column i of the description the statement was built from;
 * capture_table_shape.c puts those values in place of the driver's. */
static void fixup_columns(sqlq_capture_builder *b)
{
    const sqlq_table *t = b->c->table;
    for (size_t i = 0; i < t->ncolumns; i++) {
        if (!sqlq_row_json_needs_fixup(b->t.dialect, &t->columns[i]))
            continue;
        sqlq_sql_text_add(&b->t, ", ");
        if (b->t.rc == SQLQ_OK)
            b->t.rc = sqlq_row_json_fixup_sql(b->t.dialect, "r.", &t->columns[i], &b->t.buf);
        sqlq_sql_text_add(&b->t, " AS " SQLQ_CAPTURE_FIXUP "%zu", i);
    }
}

/* The final projection: the batch columns, m_row, m_key (key_expr) and then the current row
 * as r.*: whatever columns the table has when the statement runs, so a column added, dropped,
 * renamed or retyped since the capture opened is read as it is now, never missed and never a
 * failed poll. Read by position (sqlq_db_query_values): a user column may be named like ours. */
void sqlq_cb_batch_with_rows(sqlq_capture_builder *b, const char *from)
{
    const sqlq_table *t = b->c->table;
    sqlq_sql_text_add(&b->t, "SELECT b.*, CASE WHEN ");
    sqlq_sql_text_col(&b->t, "r.", sqlq_cb_key_name(b, 0));
    if (b->c->where) /* the route's --where, as the operator wrote it (a trusted setting) */
        sqlq_sql_text_add(&b->t, " IS NULL THEN 0 WHEN (%s) THEN 1 ELSE 2 END AS m_row, ", b->c->where);
    else
        sqlq_sql_text_add(&b->t, " IS NULL THEN 0 ELSE 1 END AS m_row, ");
    sqlq_capture_sql_key_expr(b);
    sqlq_sql_text_add(&b->t, " AS " SQLQ_CAPTURE_KEY_NOW ", r.*");
    fixup_columns(b);
    sqlq_sql_text_add(&b->t, " FROM ");
    if (from) {
        sqlq_sql_text_add(&b->t, "%s", from);
    } else {
        sqlq_sql_text_add(&b->t, "(");
        batch_with_tokens(b);
        sqlq_sql_text_add(&b->t, ") AS b");
    }
    sqlq_sql_text_add(&b->t, " LEFT JOIN ");
    sqlq_sql_text_table(&b->t, &t->name);
    sqlq_sql_text_add(&b->t, " AS r ON ");
    sqlq_cb_key_match(b, "r.", "b.", true);
    order_by_batch(b, "b.");
}

void sqlq_cb_lease_columns(sqlq_capture_builder *b)
{
    sqlq_catalog_key_list(&b->t, b->c->table, "");
    sqlq_sql_text_add(&b->t, ", " SQLQ_COL_VERSION ", " SQLQ_COL_ATTEMPTS ", " SQLQ_COL_EXPIRES
                             ", " SQLQ_COL_OWNER ", " SQLQ_COL_TOKEN);
}

void sqlq_cb_lease_values_from_batch(sqlq_capture_builder *b, const char *alias,
                                     bool owner_param)
{
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_add(&b->t, "%sk%zu, ", alias, i);
    sqlq_sql_text_add(&b->t, "%sm_v, %sm_att, ", alias, alias);
    sqlq_cb_now(b);
    sqlq_sql_text_add(&b->t, " + %lld, ", (long long)b->c->lease_s * 1000);
    if (owner_param)
        sqlq_cb_param(b, SQLQ_P_OWNER);
    else
        sqlq_sql_text_add(&b->t, "@owner");
    sqlq_sql_text_add(&b->t, ", %sm_tok", alias);
}

void sqlq_cb_upsert_tail(sqlq_capture_builder *b, const char *excluded)
{
    static const char *const cols[] = {SQLQ_COL_VERSION, SQLQ_COL_ATTEMPTS, SQLQ_COL_EXPIRES,
                                       SQLQ_COL_OWNER, SQLQ_COL_TOKEN};
    if (sqlq_cb_log(b)->on_duplicate_key) {
        sqlq_sql_text_add(&b->t, " ON DUPLICATE KEY UPDATE ");
        for (size_t i = 0; i < 5; i++)
            sqlq_sql_text_add(&b->t, "%s%s = VALUES(%s)", i ? ", " : "", cols[i], cols[i]);
        return;
    }
    sqlq_sql_text_add(&b->t, " ON CONFLICT (");
    sqlq_catalog_key_list(&b->t, b->c->table, "");
    sqlq_sql_text_add(&b->t, ") DO UPDATE SET ");
    for (size_t i = 0; i < 5; i++)
        sqlq_sql_text_add(&b->t, "%s%s = %s.%s", i ? ", " : "", cols[i], excluded, cols[i]);
}

/* A resume position can be bound: a log, a key of few parts whose types are known where the
 * source casts them (typed_keys). */
static bool resumable(const sqlq_capture_sql *c)
{
    if (c->log_sql->tracked || c->table->nkey > SQLQ_CAPTURE_RESUME_MAX_KEY)
        return false;
    if (!c->log_sql->typed_keys)
        return true;
    for (size_t i = 0; i < c->table->nkey; i++)
        if (!c->key_types || !c->key_types[i])
            return false;
    return true;
}

/* The poll as the source writes it (one statement), or as a select of the batch and a lease
 * statement over the same rows (same WHERE, same order, under the same lock). */
static sqlq_result poll_sql(const sqlq_capture_sql *c, bool resume, sqlq_capture_stmt *select,
                            sqlq_capture_stmt *lease, sqlq_error *err)
{
    sqlq_capture_builder b;
    memset(lease, 0, sizeof(*lease));
    sqlq_cb_init(&b, c, select);
    b.resume = resume;
    if (c->log_sql->poll)
        return c->log_sql->poll(&b, err);
    sqlq_cb_batch_with_rows(&b, NULL);
    sqlq_result r = sqlq_cb_done(&b, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_cb_init(&b, c, lease);
    b.resume = resume;
    sqlq_sql_text_add(&b.t, "INSERT INTO ");
    sqlq_cb_leases(&b);
    sqlq_sql_text_add(&b.t, " (");
    sqlq_cb_lease_columns(&b);
    sqlq_sql_text_add(&b.t, ") SELECT ");
    sqlq_cb_lease_values_from_batch(&b, "b.", true);
    sqlq_sql_text_add(&b.t, " FROM (");
    batch_with_tokens(&b);
    sqlq_sql_text_add(&b.t, ") AS b WHERE 1");
    sqlq_cb_upsert_tail(&b, "excluded");
    r = sqlq_cb_done(&b, err);
    if (r != SQLQ_OK)
        sqlq_capture_stmt_free(select);
    return r;
}

sqlq_result sqlq_capture_sql_poll(const sqlq_capture_sql *c, sqlq_capture_stmt *select,
                                  sqlq_capture_stmt *lease, sqlq_error *err)
{
    return poll_sql(c, false, select, lease, err);
}

sqlq_result sqlq_capture_sql_poll_resume(const sqlq_capture_sql *c, sqlq_capture_stmt *select,
                                         sqlq_capture_stmt *lease, sqlq_error *err)
{
    memset(select, 0, sizeof(*select));
    memset(lease, 0, sizeof(*lease));
    if (!resumable(c))
        return SQLQ_OK;
    return poll_sql(c, true, select, lease, err);
}

sqlq_result sqlq_capture_sql_reserve(const sqlq_capture_sql *c, sqlq_capture_stmt *bump,
                                     sqlq_capture_stmt *base, sqlq_error *err)
{
    sqlq_capture_builder b;
    memset(base, 0, sizeof(*base));
    sqlq_cb_init(&b, c, bump);
    if (!c->log_sql->reserve_tokens) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    sqlq_sql_text_add(&b.t, "UPDATE ");
    sqlq_cb_obj(&b, "counter");
    sqlq_sql_text_add(&b.t, " SET value = value + %d WHERE name = 'lease_token'",
                      c->max_batch_size);
    sqlq_result r = sqlq_cb_done(&b, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_cb_init(&b, c, base);
    sqlq_sql_text_add(&b.t, "SELECT value - %d FROM ", c->max_batch_size);
    sqlq_cb_obj(&b, "counter");
    sqlq_sql_text_add(&b.t, " WHERE name = 'lease_token'");
    r = sqlq_cb_done(&b, err);
    if (r != SQLQ_OK)
        sqlq_capture_stmt_free(bump);
    return r;
}


sqlq_result sqlq_capture_sql_lock(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                  sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (c->log_sql->lock)
        return c->log_sql->lock(&b, err);
    sqlq_sql_text_free(&b.t);
    return SQLQ_OK;
}

sqlq_result sqlq_capture_sql_pending(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                     sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (c->log_sql->prelude)
        c->log_sql->prelude(&b);
    sqlq_sql_text_add(&b.t, "SELECT %s FROM ", c->log_sql->count_all);
    sqlq_cb_changes_from(&b);
    sqlq_cb_lease_join(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    if (c->log_sql->unstamped) /* committed but not stamped yet (version 0) waits too */
        sqlq_sql_text_add(&b.t, "(%s = 0 OR ", sqlq_cb_ver(&b));
    sqlq_cb_sync_bound(&b, false);
    if (c->log_sql->unstamped)
        sqlq_sql_text_add(&b.t, ")");
    sqlq_sql_text_add(&b.t, " AND ");
    sqlq_cb_unprocessed(&b); /* leased counts: not delivered yet (during an outage the backlog grows) */
    return sqlq_cb_done(&b, err);
}


static sqlq_result advance_scan(const sqlq_capture_sql *c, bool resume, sqlq_capture_stmt *out,
                                sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (c->log_sql->advance_scan)
        return c->log_sql->advance_scan(&b, err);
    sqlq_cb_direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT s.m_sync, u.*, (SELECT max(%s) FROM ", sqlq_cb_ver(&b));
    sqlq_cb_changes_from(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    sqlq_cb_sync_bound(&b, false);
    sqlq_sql_text_add(&b.t, ") AS m_max FROM (SELECT ");
    sqlq_cb_sync_subquery(&b);
    /* The first unprocessed change in index order, not min() over the join: PostgreSQL does
     * not turn min() over a join into an index scan (it hashed the whole backlog). */
    sqlq_sql_text_add(&b.t, " AS m_sync) AS s LEFT JOIN (SELECT %s AS m_unproc", sqlq_cb_ver(&b));
    for (size_t i = 0; i < c->table->nkey; i++) {
        sqlq_sql_text_col(&b.t, ", c.", sqlq_cb_key_name(&b, i));
        sqlq_sql_text_add(&b.t, " AS u%zu", i);
    }
    sqlq_sql_text_add(&b.t, " FROM ");
    sqlq_cb_changes_from(&b);
    sqlq_cb_lease_join(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    changes_after(&b, false, resume, ">=");
    sqlq_sql_text_add(&b.t, " AND ");
    sqlq_cb_unprocessed(&b);
    order_by_changes(&b);
    sqlq_sql_text_add(&b.t, " LIMIT 1) AS u ON 1 = 1");
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_advance_scan(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                          sqlq_error *err)
{
    return advance_scan(c, false, out, err);
}

sqlq_result sqlq_capture_sql_advance_scan_resume(const sqlq_capture_sql *c,
                                                 sqlq_capture_stmt *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!resumable(c))
        return SQLQ_OK;
    return advance_scan(c, true, out, err);
}



sqlq_result sqlq_capture_sql_trim_log(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                      sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (c->log_sql->trim_log)
        return c->log_sql->trim_log(&b, err);
    sqlq_sql_text_free(&b.t); /* nothing to trim: the source cleans up after itself */
    return SQLQ_OK;
}

void sqlq_cb_table_literal(sqlq_capture_builder *b)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, b->c->dialect);
    sqlq_sql_text_table(&q, &b->c->table->name);
    char *name = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &name, NULL);
    if (r != SQLQ_OK) {
        b->t.rc = b->t.rc ? b->t.rc : r;
        return;
    }
    sqlq_sql_text_literal(&b->t, name);
    free(name);
}
