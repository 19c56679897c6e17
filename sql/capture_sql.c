#include "capture_sql.h"

#include "capture_sql_builder.h"
#include "ct_query.h"
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

/* SQL Server: DECLARE @sync from the state row (CHANGETABLE takes a variable, not a query). */
static void ms_declare_sync(builder *b)
{
    sqlq_sql_text_add(&b->t, "SET NOCOUNT ON; DECLARE @sync bigint = ");
    sync_subquery(b);
    sqlq_sql_text_add(&b->t, "; ");
}

static void changes_from(builder *b)
{
    if (b->c->change_tracking) {
        sqlq_sql_text_add(&b->t, "CHANGETABLE(CHANGES ");
        sqlq_sql_text_table(&b->t, &b->c->table->name);
        sqlq_sql_text_add(&b->t, ", @sync) AS c");
    } else {
        obj(b, b->c->names->log_table);
        sqlq_sql_text_add(&b->t, " AS c");
    }
}

static void key_match(builder *b, const char *left, const char *right, bool right_aliased)
{
    for (size_t i = 0; i < b->c->table->nkey; i++) {
        sqlq_sql_text_add(&b->t, "%s", i ? " AND " : "");
        sqlq_sql_text_col(&b->t, left, key_name(b, i));
        if (right_aliased) {
            sqlq_sql_text_add(&b->t, " = %sk%zu", right, i);
        } else {
            sqlq_sql_text_add(&b->t, " = ");
            sqlq_sql_text_col(&b->t, right, key_name(b, i));
        }
    }
}

static void lease_join(builder *b)
{
    sqlq_sql_text_add(&b->t, " LEFT JOIN ");
    leases(b);
    sqlq_sql_text_add(&b->t, " AS l ON ");
    key_match(b, "l.", "c.", false);
}

/* Versions after the stored sync version; on PostgreSQL only those at or below the horizon
 * (capture_horizon.h: a version above it may still commit), a parameter. The CHANGETABLE
 * source bounds by @sync itself and adds nothing. `bound_params`: PostgreSQL's poll takes the
 * sync version as a parameter too, read by sqlq_capture_sql_bounds (see there why). */
static void sync_bound(builder *b, bool bound_params)
{
    if (b->c->change_tracking) {
        sqlq_sql_text_add(&b->t, "1 = 1");
        return;
    }
    if (bound_params && is_pg(b)) {
        sqlq_sql_text_add(&b->t, "%s > ", ver(b));
        param(b, SQLQ_P_SYNC);
        sqlq_sql_text_add(&b->t, " AND %s <= ", ver(b));
        param(b, SQLQ_P_HORIZON);
        return;
    }
    sqlq_sql_text_add(&b->t, "%s > ", ver(b));
    sync_subquery(b);
    if (is_pg(b)) {
        sqlq_sql_text_add(&b->t, " AND %s <= ", ver(b));
        param(b, SQLQ_P_HORIZON);
    }
}

/* The operation as change tracking reports it against what this bridge delivered (its sync
 * version, or a released lease of the key at a newer version): a key whose current row was
 * inserted after that is an insert whatever followed; deletes stay deletes (a row created and
 * deleted in between is one delete: it may have been published before its lease was
 * released). Change tracking does this itself. */
static void op_column(builder *b)
{
    if (b->c->change_tracking) {
        sqlq_sql_text_add(&b->t, "%s", opcol(b));
        return;
    }
    sqlq_sql_text_add(&b->t, "CASE WHEN c." SQLQ_COL_OP " <> 'U' THEN c." SQLQ_COL_OP
                             " WHEN c." SQLQ_COL_SINCE " > ");
    if (is_pg(b))
        param(b, SQLQ_P_SYNC);
    else
        sync_subquery(b);
    sqlq_sql_text_add(&b->t, " AND (l." SQLQ_COL_VERSION " IS NULL OR l." SQLQ_COL_EXPIRES
                             " IS NOT NULL OR l." SQLQ_COL_VERSION " < c." SQLQ_COL_SINCE
                             ") THEN 'I' ELSE 'U' END");
}

/* Resumed poll: (version, key...) after the bound position, in poll order (a row comparison:
 * an index range on the log's (version, key) index). */
static void resume_bound(builder *b, const char *op)
{
    const sqlq_table *t = b->c->table;
    sqlq_sql_text_add(&b->t, " AND (%s", ver(b));
    for (size_t i = 0; i < t->nkey; i++)
        sqlq_sql_text_col(&b->t, ", c.", key_name(b, i));
    sqlq_sql_text_add(&b->t, ") %s (", op);
    param(b, SQLQ_P_RESUME_VERSION);
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(&b->t, ", ");
        if (is_pg(b))
            sqlq_sql_text_add(&b->t, "CAST(");
        param(b, (sqlq_capture_param)(SQLQ_P_RESUME_KEY + i));
        if (is_pg(b))
            sqlq_sql_text_add(&b->t, " AS %s)", b->c->key_types[i]);
    }
    sqlq_sql_text_add(&b->t, ")");
}

/* The lower bound of a read that may resume: after the sync version and, resuming, at or
 * after `op` the resume position. SQLite: one scalar lower bound on the version, max() of
 * both, then the row value: with two lower bounds on the column SQLite ranges the index by
 * the first one written (measured: 65 ms from the sync version vs 0.3 ms from max() on a
 * 1M-row log), and it never ranges by a row value. */
static void changes_after(builder *b, bool bound_params, bool resume, const char *op)
{
    if (resume && b->c->dialect->capture_shape == SQLQ_CAPTURE_LOG_COUNTER) {
        sqlq_sql_text_add(&b->t, "%s >= max(", ver(b));
        param(b, SQLQ_P_RESUME_VERSION);
        sqlq_sql_text_add(&b->t, ", ");
        sync_subquery(b);
        sqlq_sql_text_add(&b->t, " + 1)");
    } else {
        sync_bound(b, bound_params);
    }
    if (resume)
        resume_bound(b, op);
}

/* Deliverable now: never leased or released at an older version, or its lease expired. */
static void available(builder *b)
{
    sqlq_sql_text_add(&b->t,
                      "((l." SQLQ_COL_EXPIRES " IS NULL AND (l." SQLQ_COL_VERSION " IS NULL OR l."
                      SQLQ_COL_VERSION " < %s)) OR l." SQLQ_COL_EXPIRES " < ",
                      ver(b));
    now(b);
    sqlq_sql_text_add(&b->t, ")");
}

/* Not yet delivered: no lease, a lease in flight (or abandoned), or released at an older
 * version. */
static void unprocessed(builder *b)
{
    sqlq_sql_text_add(&b->t,
                      "(l." SQLQ_COL_VERSION " IS NULL OR l." SQLQ_COL_EXPIRES " IS NOT NULL OR l."
                      SQLQ_COL_VERSION " < %s)",
                      ver(b));
}

static void order_by_changes(builder *b)
{
    sqlq_sql_text_add(&b->t, " ORDER BY %s", ver(b));
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_col(&b->t, ", c.", key_name(b, i));
}

static void order_by_batch(builder *b, const char *alias)
{
    sqlq_sql_text_add(&b->t, " ORDER BY %sm_v", alias);
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_add(&b->t, ", %sk%zu", alias, i);
}

/* SELECT of the next batch: k0.., m_v, m_op, m_att[, m_tok]. */
static void batch_select(builder *b, bool sqlite_tokens, bool ms_into)
{
    int m = b->c->max_attempts;
    sqlq_sql_text_add(&b->t, "SELECT ");
    if (is_ms(b))
        sqlq_sql_text_add(&b->t, "TOP (%d) ", b->c->max_batch_size);
    for (size_t i = 0; i < b->c->table->nkey; i++) {
        sqlq_sql_text_col(&b->t, "c.", key_name(b, i));
        sqlq_sql_text_add(&b->t, " AS k%zu, ", i);
    }
    sqlq_sql_text_add(&b->t, "%s AS m_v, ", ver(b));
    op_column(b);
    sqlq_sql_text_add(&b->t,
                      " AS m_op, CASE WHEN l." SQLQ_COL_VERSION " = %s AND l." SQLQ_COL_ATTEMPTS
                      " >= %d THEN %d WHEN l." SQLQ_COL_VERSION " = %s THEN l." SQLQ_COL_ATTEMPTS
                      " + 1 ELSE 1 END AS m_att",
                      ver(b), m, m + 1, ver(b));
    sqlq_capture_sql_image_columns(b);
    if (sqlite_tokens) {
        sqlq_sql_text_add(&b->t, ", ");
        param(b, SQLQ_P_TOKEN_BASE);
        sqlq_sql_text_add(&b->t, " + row_number() OVER (");
        order_by_changes(b);
        sqlq_sql_text_add(&b->t, ") AS m_tok");
    }
    if (ms_into)
        sqlq_sql_text_add(&b->t, ", CAST(NULL AS bigint) AS m_tok INTO #sqlq_batch");
    sqlq_sql_text_add(&b->t, " FROM ");
    changes_from(b);
    lease_join(b);
    sqlq_sql_text_add(&b->t, " WHERE ");
    changes_after(b, true, b->resume, ">");
    sqlq_sql_text_add(&b->t, " AND ");
    available(b);
    order_by_changes(b);
    if (!is_ms(b))
        sqlq_sql_text_add(&b->t, " LIMIT %d", b->c->max_batch_size);
}

/* The batch with lease tokens (base + position), as a derived table's body. MariaDB computes
 * a window function over every row the WHERE clause passes before LIMIT applies (the whole
 * log past the sync version, sorted, for each poll): there the tokens are numbered outside
 * the limited batch. */
static void batch_with_tokens(builder *b)
{
    if (!is_my(b)) {
        batch_select(b, true, false);
        return;
    }
    sqlq_sql_text_add(&b->t, "SELECT x.*, ");
    param(b, SQLQ_P_TOKEN_BASE);
    sqlq_sql_text_add(&b->t, " + row_number() OVER (ORDER BY x.m_v");
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_add(&b->t, ", x.k%zu", i);
    sqlq_sql_text_add(&b->t, ") AS m_tok FROM (");
    batch_select(b, false, false);
    sqlq_sql_text_add(&b->t, ") AS x");
}

/* Where the final projection reads the batch from. */
typedef enum { FROM_PG_CTE, FROM_MS_TEMP, FROM_SQLITE_SUBQUERY } batch_from;

/* After r.*, the exact form of each described column the driver cannot read exactly
 * (row_json.h: PostgreSQL dates and times as the server's text, SQLite REALs by quote()), as
 * SQLQ_CAPTURE_FIXUP<i> for column i of the description the statement was built from;
 * capture_shape.c puts those values in place of the driver's. */
static void fixup_columns(builder *b)
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

/* The final projection: the batch columns, m_row, m_key (key_shape) and then the current row
 * as r.*: whatever columns the table has when the statement runs, so a column added, dropped,
 * renamed or retyped since the capture opened is read as it is now, never missed and never a
 * failed poll. Read by position (sqlq_db_query_values): a user column may be named like ours. */
static void batch_with_rows(builder *b, batch_from from)
{
    const sqlq_table *t = b->c->table;
    sqlq_sql_text_add(&b->t, "SELECT b.*, CASE WHEN ");
    sqlq_sql_text_col(&b->t, "r.", key_name(b, 0));
    if (b->c->where) /* the route's --where, as the operator wrote it (a trusted setting) */
        sqlq_sql_text_add(&b->t, " IS NULL THEN 0 WHEN (%s) THEN 1 ELSE 2 END AS m_row, ", b->c->where);
    else
        sqlq_sql_text_add(&b->t, " IS NULL THEN 0 ELSE 1 END AS m_row, ");
    sqlq_capture_sql_key_shape_expr(b);
    sqlq_sql_text_add(&b->t, " AS " SQLQ_CAPTURE_KEY_SHAPE ", r.*");
    fixup_columns(b);
    sqlq_sql_text_add(&b->t, " FROM ");
    if (from == FROM_PG_CTE) {
        sqlq_sql_text_add(&b->t, "t AS b");
    } else if (from == FROM_MS_TEMP) {
        sqlq_sql_text_add(&b->t, "#sqlq_batch AS b");
    } else {
        sqlq_sql_text_add(&b->t, "(");
        batch_with_tokens(b);
        sqlq_sql_text_add(&b->t, ") AS b");
    }
    sqlq_sql_text_add(&b->t, " LEFT JOIN ");
    sqlq_sql_text_table(&b->t, &t->name);
    sqlq_sql_text_add(&b->t, " AS r ON ");
    key_match(b, "r.", "b.", true);
    order_by_batch(b, "b.");
}

static void lease_columns(builder *b)
{
    sqlq_catalog_key_list(&b->t, b->c->table, "");
    sqlq_sql_text_add(&b->t, ", " SQLQ_COL_VERSION ", " SQLQ_COL_ATTEMPTS ", " SQLQ_COL_EXPIRES
                             ", " SQLQ_COL_OWNER ", " SQLQ_COL_TOKEN);
}

static void lease_values_from_batch(builder *b, const char *alias, bool owner_param)
{
    for (size_t i = 0; i < b->c->table->nkey; i++)
        sqlq_sql_text_add(&b->t, "%sk%zu, ", alias, i);
    sqlq_sql_text_add(&b->t, "%sm_v, %sm_att, ", alias, alias);
    now(b);
    sqlq_sql_text_add(&b->t, " + %lld, ", (long long)b->c->lease_s * 1000);
    if (owner_param)
        param(b, SQLQ_P_OWNER);
    else
        sqlq_sql_text_add(&b->t, "@owner");
    sqlq_sql_text_add(&b->t, ", %sm_tok", alias);
}

static void upsert_tail(builder *b, const char *excluded)
{
    static const char *const cols[] = {SQLQ_COL_VERSION, SQLQ_COL_ATTEMPTS, SQLQ_COL_EXPIRES,
                                       SQLQ_COL_OWNER, SQLQ_COL_TOKEN};
    if (is_my(b)) {
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

static sqlq_result poll_postgres(builder *b, sqlq_error *err)
{
    /* A data-modifying WITH cannot run inside DECLARE CURSOR (see direct()). */
    sqlq_sql_text_add(&b->t, "/* sqlq poll */ WITH b AS (");
    batch_select(b, false, false);
    sqlq_sql_text_add(&b->t, "), t AS (SELECT b.*, nextval('sqlq.lease_token') AS m_tok FROM b), "
                             "ins AS (INSERT INTO ");
    leases(b);
    sqlq_sql_text_add(&b->t, " AS l (");
    lease_columns(b);
    sqlq_sql_text_add(&b->t, ") SELECT ");
    lease_values_from_batch(b, "t.", true);
    sqlq_sql_text_add(&b->t, " FROM t");
    upsert_tail(b, "EXCLUDED");
    sqlq_sql_text_add(&b->t, ") ");
    batch_with_rows(b, FROM_PG_CTE);
    return b_done(b, err);
}

static sqlq_result poll_mssql(builder *b, sqlq_error *err)
{
    ms_declare_sync(b);
    sqlq_sql_text_add(&b->t, "DECLARE @owner nvarchar(256) = ");
    param(b, SQLQ_P_OWNER);
    sqlq_sql_text_add(&b->t, "; IF OBJECT_ID(N'tempdb..#sqlq_batch') IS NOT NULL "
                             "DROP TABLE #sqlq_batch; ");
    batch_select(b, false, true);
    sqlq_sql_text_add(&b->t, "; UPDATE #sqlq_batch SET m_tok = NEXT VALUE FOR ");
    obj(b, "lease_token");
    sqlq_sql_text_add(&b->t, "; MERGE ");
    leases(b);
    sqlq_sql_text_add(&b->t, " AS l USING #sqlq_batch AS b ON ");
    key_match(b, "l.", "b.", true);
    sqlq_sql_text_add(&b->t, " WHEN MATCHED THEN UPDATE SET " SQLQ_COL_VERSION " = b.m_v, "
                             SQLQ_COL_ATTEMPTS " = b.m_att, " SQLQ_COL_EXPIRES " = ");
    now(b);
    sqlq_sql_text_add(&b->t, " + %lld, " SQLQ_COL_OWNER " = @owner, " SQLQ_COL_TOKEN " = b.m_tok "
                             "WHEN NOT MATCHED THEN INSERT (",
                      (long long)b->c->lease_s * 1000);
    lease_columns(b);
    sqlq_sql_text_add(&b->t, ") VALUES (");
    lease_values_from_batch(b, "b.", false);
    sqlq_sql_text_add(&b->t, "); ");
    batch_with_rows(b, FROM_MS_TEMP);
    sqlq_sql_text_add(&b->t, ";");
    return b_done(b, err);
}

/* A resume position can be bound: change log, a key of few parts whose types are known where
 * PostgreSQL needs them for the casts. */
static bool resumable(const sqlq_capture_sql *c)
{
    if (c->change_tracking || c->table->nkey > SQLQ_CAPTURE_RESUME_MAX_KEY)
        return false;
    if (c->dialect->capture_shape != SQLQ_CAPTURE_LOG_SEQUENCE)
        return true;
    for (size_t i = 0; i < c->table->nkey; i++)
        if (!c->key_types || !c->key_types[i])
            return false;
    return true;
}

static sqlq_result poll_sql(const sqlq_capture_sql *c, bool resume, sqlq_capture_stmt *select,
                            sqlq_capture_stmt *lease, sqlq_error *err)
{
    builder b;
    memset(lease, 0, sizeof(*lease));
    b_init(&b, c, select);
    b.resume = resume;
    if (c->dialect->capture_shape == SQLQ_CAPTURE_LOG_SEQUENCE)
        return poll_postgres(&b, err);
    if (c->dialect->capture_shape == SQLQ_CAPTURE_CHANGE_TRACKING)
        return poll_mssql(&b, err);
    batch_with_rows(&b, FROM_SQLITE_SUBQUERY);
    sqlq_result r = b_done(&b, err);
    if (r != SQLQ_OK)
        return r;
    b_init(&b, c, lease);
    b.resume = resume;
    sqlq_sql_text_add(&b.t, "INSERT INTO ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " (");
    lease_columns(&b);
    sqlq_sql_text_add(&b.t, ") SELECT ");
    lease_values_from_batch(&b, "b.", true);
    sqlq_sql_text_add(&b.t, " FROM (");
    batch_with_tokens(&b);
    sqlq_sql_text_add(&b.t, ") AS b WHERE 1");
    upsert_tail(&b, "excluded");
    r = b_done(&b, err);
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
    builder b;
    b_init(&b, c, bump);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    obj(&b, "counter");
    sqlq_sql_text_add(&b.t, " SET value = value + %d WHERE name = 'lease_token'",
                      c->max_batch_size);
    sqlq_result r = b_done(&b, err);
    if (r != SQLQ_OK)
        return r;
    b_init(&b, c, base);
    sqlq_sql_text_add(&b.t, "SELECT value - %d FROM ", c->max_batch_size);
    obj(&b, "counter");
    sqlq_sql_text_add(&b.t, " WHERE name = 'lease_token'");
    r = b_done(&b, err);
    if (r != SQLQ_OK)
        sqlq_capture_stmt_free(bump);
    return r;
}

sqlq_result sqlq_capture_sql_lock(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                  sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->dialect->capture_shape == SQLQ_CAPTURE_LOG_COUNTER) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    if (c->dialect->capture_shape == SQLQ_CAPTURE_LOG_STAMPED) {
        /* This bridge's state row: one poll per bridge and table at a time; and the version
         * counter's row: no stamp commits between the poll's read and its leases (both read
         * the same stamped rows). Stamps wait for the poll, a short transaction. */
        sqlq_sql_text_add(&b.t, "SELECT s.sync_version, k.value FROM ");
        obj(&b, "state");
        sqlq_sql_text_add(&b.t, " AS s, ");
        obj(&b, "counter");
        sqlq_sql_text_add(&b.t, " AS k WHERE s.bridge_name = ");
        param(&b, SQLQ_P_BRIDGE);
        sqlq_sql_text_add(&b.t, " AND s.table_name = ");
        param(&b, SQLQ_P_TABLE);
        sqlq_sql_text_add(&b.t, " AND k.name = 'version' FOR UPDATE");
        return b_done(&b, err);
    }
    if (c->dialect->capture_shape == SQLQ_CAPTURE_LOG_SEQUENCE) {
        direct(&b);
        sqlq_sql_text_add(&b.t, "SELECT pg_advisory_xact_lock(hashtextextended(CAST(");
        param(&b, SQLQ_P_LOCK);
        sqlq_sql_text_add(&b.t, " AS text), 0))");
        return b_done(&b, err);
    }
    sqlq_sql_text_free(&b.t);
    char *sql = NULL;
    sqlq_result r = sqlq_ct_applock_sql(30000, &sql, err);
    if (r != SQLQ_OK)
        return r;
    out->sql = sql;
    out->params[0] = SQLQ_P_LOCK;
    out->nparams = 1;
    return SQLQ_OK;
}

sqlq_result sqlq_capture_sql_pending(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                     sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->change_tracking)
        ms_declare_sync(&b);
    sqlq_sql_text_add(&b.t, "SELECT %s FROM ", is_ms(&b) ? "COUNT_BIG(*)" : "count(*)");
    changes_from(&b);
    lease_join(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    if (is_my(&b)) /* committed but not stamped yet (version 0) waits too */
        sqlq_sql_text_add(&b.t, "(%s = 0 OR ", ver(&b));
    sync_bound(&b, false);
    if (is_my(&b))
        sqlq_sql_text_add(&b.t, ")");
    sqlq_sql_text_add(&b.t, " AND ");
    unprocessed(&b); /* leased counts: not delivered yet (during an outage the backlog grows) */
    return b_done(&b, err);
}

/* SQL Server change tracking: m_sync from @sync, m_unproc = min() over CHANGETABLE. */
static sqlq_result advance_scan_ct(builder *b, sqlq_error *err)
{
    ms_declare_sync(b);
    sqlq_sql_text_add(&b->t, "SELECT @sync AS m_sync, (SELECT min(%s) FROM ", ver(b));
    changes_from(b);
    lease_join(b);
    sqlq_sql_text_add(&b->t, " WHERE ");
    sync_bound(b, false);
    sqlq_sql_text_add(&b->t, " AND ");
    unprocessed(b);
    sqlq_sql_text_add(&b->t, ") AS m_unproc, (SELECT max(%s) FROM ", ver(b));
    changes_from(b);
    sqlq_sql_text_add(&b->t, " WHERE ");
    sync_bound(b, false);
    sqlq_sql_text_add(&b->t, ") AS m_max");
    return b_done(b, err);
}

static sqlq_result advance_scan(const sqlq_capture_sql *c, bool resume, sqlq_capture_stmt *out,
                                sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->change_tracking)
        return advance_scan_ct(&b, err);
    direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT s.m_sync, u.*, (SELECT max(%s) FROM ", ver(&b));
    changes_from(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    sync_bound(&b, false);
    sqlq_sql_text_add(&b.t, ") AS m_max FROM (SELECT ");
    sync_subquery(&b);
    /* The first unprocessed change in index order, not min() over the join: PostgreSQL does
     * not turn min() over a join into an index scan (it hashed the whole backlog). */
    sqlq_sql_text_add(&b.t, " AS m_sync) AS s LEFT JOIN (SELECT %s AS m_unproc", ver(&b));
    for (size_t i = 0; i < c->table->nkey; i++) {
        sqlq_sql_text_col(&b.t, ", c.", key_name(&b, i));
        sqlq_sql_text_add(&b.t, " AS u%zu", i);
    }
    sqlq_sql_text_add(&b.t, " FROM ");
    changes_from(&b);
    lease_join(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    changes_after(&b, false, resume, ">=");
    sqlq_sql_text_add(&b.t, " AND ");
    unprocessed(&b);
    order_by_changes(&b);
    sqlq_sql_text_add(&b.t, " LIMIT 1) AS u ON 1 = 1");
    return b_done(&b, err);
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
    builder b;
    b_init(&b, c, out);
    if (c->change_tracking) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK; /* change tracking cleans up after itself */
    }
    if (is_my(&b)) {
        /* Stamped rows only (0: not stamped yet), and none a user transaction holds: the
         * same derived table of SKIP LOCKED keys as the stamp (change_log_stamped.c). */
        sqlq_sql_text_add(&b.t, "DELETE l FROM (SELECT ");
        sqlq_catalog_key_list(&b.t, c->table, "");
        sqlq_sql_text_add(&b.t, " FROM ");
        obj(&b, c->names->log_table);
        sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_VERSION " > 0 AND " SQLQ_COL_VERSION
                                " <= (SELECT min(sync_version) FROM ");
        obj(&b, "state");
        sqlq_sql_text_add(&b.t, " WHERE table_name = ");
        param(&b, SQLQ_P_TABLE);
        sqlq_sql_text_add(&b.t, ") FOR UPDATE SKIP LOCKED) p STRAIGHT_JOIN ");
        obj(&b, c->names->log_table);
        sqlq_sql_text_add(&b.t, " l FORCE INDEX (PRIMARY) ON ");
        key_match(&b, "l.", "p.", false);
        return b_done(&b, err);
    }
    sqlq_sql_text_add(&b.t, "DELETE FROM ");
    obj(&b, c->names->log_table);
    if (is_pg(&b)) {
        /* Skip rows a user transaction holds (its trigger is moving them to a newer version):
         * waiting for them could deadlock that transaction against this housekeeping. */
        sqlq_sql_text_add(&b.t, " WHERE ctid = ANY(ARRAY(SELECT ctid FROM ");
        obj(&b, c->names->log_table);
    }
    sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_VERSION " <= (SELECT min(sync_version) FROM ");
    obj(&b, "state");
    sqlq_sql_text_add(&b.t, " WHERE table_name = ");
    param(&b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b.t, ")%s", is_pg(&b) ? " FOR UPDATE SKIP LOCKED))" : "");
    if (!is_pg(&b)) {
        /* SQLite: the newest row stays; the triggers take the next version above it. */
        sqlq_sql_text_add(&b.t, " AND " SQLQ_COL_VERSION " < (SELECT max(" SQLQ_COL_VERSION
                                ") FROM ");
        obj(&b, c->names->log_table);
        sqlq_sql_text_add(&b.t, ")");
    }
    return b_done(&b, err);
}

