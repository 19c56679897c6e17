/* mssql_capture_sql: the SQL of SQL Server change tracking as the shared capture builder
 * writes it (capture_sql.h): the changes are CHANGETABLE(CHANGES t, @sync), @sync declared from
 * the state row first (CHANGETABLE takes a variable, not a query); a poll is one batch through
 * a temporary table; the lock is an app lock; the server keeps (and cleans) the changes. */
#include "mssql_internal.h"

#include "capture_sql_builder.h"
#include "ct_query.h"

#include <stdlib.h>

static void prelude(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "SET NOCOUNT ON; DECLARE @sync bigint = ");
    sqlq_cb_sync_subquery(b);
    sqlq_sql_text_add(&b->t, "; ");
}

static void changes_from(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "CHANGETABLE(CHANGES ");
    sqlq_sql_text_table(&b->t, &b->c->table->name);
    sqlq_sql_text_add(&b->t, ", @sync) AS c");
}

static sqlq_result poll(sqlq_capture_builder *b, sqlq_error *err)
{
    prelude(b);
    sqlq_sql_text_add(&b->t, "DECLARE @owner nvarchar(256) = ");
    sqlq_cb_param(b, SQLQ_P_OWNER);
    sqlq_sql_text_add(&b->t, "; IF OBJECT_ID(N'tempdb..#sqlq_batch') IS NOT NULL "
                             "DROP TABLE #sqlq_batch; ");
    sqlq_cb_batch_select(b, false, ", CAST(NULL AS bigint) AS m_tok INTO #sqlq_batch");
    sqlq_sql_text_add(&b->t, "; UPDATE #sqlq_batch SET m_tok = NEXT VALUE FOR ");
    sqlq_cb_obj(b, "lease_token");
    sqlq_sql_text_add(&b->t, "; MERGE ");
    sqlq_cb_leases(b);
    sqlq_sql_text_add(&b->t, " AS l USING #sqlq_batch AS b ON ");
    sqlq_cb_key_match(b, "l.", "b.", true);
    sqlq_sql_text_add(&b->t, " WHEN MATCHED THEN UPDATE SET " SQLQ_COL_VERSION " = b.m_v, "
                             SQLQ_COL_ATTEMPTS " = b.m_att, " SQLQ_COL_EXPIRES " = ");
    sqlq_cb_now(b);
    sqlq_sql_text_add(&b->t, " + %lld, " SQLQ_COL_OWNER " = @owner, " SQLQ_COL_TOKEN " = b.m_tok "
                             "WHEN NOT MATCHED THEN INSERT (",
                      (long long)b->c->lease_s * 1000);
    sqlq_cb_lease_columns(b);
    sqlq_sql_text_add(&b->t, ") VALUES (");
    sqlq_cb_lease_values_from_batch(b, "b.", false);
    sqlq_sql_text_add(&b->t, "); ");
    sqlq_cb_batch_with_rows(b, "#sqlq_batch AS b");
    sqlq_sql_text_add(&b->t, ";");
    return sqlq_cb_done(b, err);
}

/* sp_getapplock on this (bridge, table)'s resource (ct_query.h). */
static sqlq_result lock(sqlq_capture_builder *b, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_result r = sqlq_ct_applock_sql(30000, &sql, err);
    if (r == SQLQ_OK) {
        sqlq_sql_text_add(&b->t, "%s", sql);
        b->st->params[b->st->nparams++] = SQLQ_P_LOCK; /* its one marker */
        r = sqlq_cb_done(b, err);
    } else {
        sqlq_sql_text_free(&b->t);
    }
    free(sql);
    return r;
}

/* m_sync from @sync, m_unproc = min() over CHANGETABLE. */
static sqlq_result advance_scan(sqlq_capture_builder *b, sqlq_error *err)
{
    prelude(b);
    sqlq_sql_text_add(&b->t, "SELECT @sync AS m_sync, (SELECT min(%s) FROM ", sqlq_cb_ver(b));
    changes_from(b);
    sqlq_cb_lease_join(b);
    sqlq_sql_text_add(&b->t, " WHERE ");
    sqlq_cb_sync_bound(b, false);
    sqlq_sql_text_add(&b->t, " AND ");
    sqlq_cb_unprocessed(b);
    sqlq_sql_text_add(&b->t, ") AS m_unproc, (SELECT max(%s) FROM ", sqlq_cb_ver(b));
    changes_from(b);
    sqlq_sql_text_add(&b->t, " WHERE ");
    sqlq_cb_sync_bound(b, false);
    sqlq_sql_text_add(&b->t, ") AS m_max");
    return sqlq_cb_done(b, err);
}

static void tokens_in(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "IN (SELECT CAST([value] AS bigint) FROM OPENJSON(");
    sqlq_cb_param(b, SQLQ_P_TOKENS);
    sqlq_sql_text_add(&b->t, "))");
}

/* No CREATE TABLE IF NOT EXISTS: tested first; the token index in the same batch. */
static sqlq_result leases_ddl(sqlq_capture_builder *b, sqlq_capture_builder *index,
                              char *const *types, sqlq_error *err)
{
    sqlq_sql_text_free(&index->t);
    const char *leases = b->c->names->leases_table;
    char ix[80];
    snprintf(ix, sizeof(ix), "ix_%s", leases);
    sqlq_sql_text_add(&b->t, "IF OBJECT_ID(N'sqlq.%s', N'U') IS NULL BEGIN ", leases);
    sqlq_sql_text_add(&b->t, "CREATE TABLE ");
    sqlq_cb_leases(b);
    sqlq_cb_leases_columns_ddl(b, types, "nvarchar(256)");
    sqlq_sql_text_add(&b->t, "; CREATE INDEX ");
    sqlq_sql_text_ident(&b->t, ix);
    sqlq_sql_text_add(&b->t, " ON ");
    sqlq_cb_leases(b);
    sqlq_sql_text_add(&b->t, " (" SQLQ_COL_TOKEN "); END");
    return sqlq_cb_done(b, err);
}

static sqlq_result state_init(sqlq_capture_builder *b, sqlq_error *err)
{
    sqlq_sql_text_add(&b->t, "SET NOCOUNT ON; DECLARE @b nvarchar(128) = ");
    sqlq_cb_param(b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b->t, ", @t nvarchar(300) = ");
    sqlq_cb_param(b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b->t, ", @v bigint = ");
    sqlq_cb_param(b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b->t, "; IF NOT EXISTS (SELECT 1 FROM ");
    sqlq_cb_obj(b, "state");
    sqlq_sql_text_add(&b->t, " WITH (UPDLOCK, HOLDLOCK) WHERE bridge_name = @b AND "
                             "table_name = @t) INSERT INTO ");
    sqlq_cb_obj(b, "state");
    sqlq_sql_text_add(&b->t, " (bridge_name, table_name, sync_version, updated_ms) "
                             "VALUES (@b, @t, @v, ");
    sqlq_cb_now(b);
    sqlq_sql_text_add(&b->t, ");");
    return sqlq_cb_done(b, err);
}

static void start_now(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "SELECT CHANGE_TRACKING_CURRENT_VERSION()");
}

static void start_beginning(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "SELECT CHANGE_TRACKING_MIN_VALID_VERSION(OBJECT_ID(");
    sqlq_cb_table_literal(b);
    sqlq_sql_text_add(&b->t, "))");
}

/* "name type(max_length,precision,scale), …" in key order. */
static void key_expr(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT STUFF((SELECT ', ' + c.name + ' ' + TYPE_NAME("
                             "c.user_type_id) + '(' + CAST(c.max_length AS varchar(10)) + ',' + "
                             "CAST(c.precision AS varchar(10)) + ',' + CAST(c.scale AS "
                             "varchar(10)) + ')' FROM sys.indexes i JOIN sys.index_columns ic ON "
                             "ic.object_id = i.object_id AND ic.index_id = i.index_id JOIN "
                             "sys.columns c ON c.object_id = ic.object_id AND c.column_id = "
                             "ic.column_id WHERE i.object_id = OBJECT_ID(");
    sqlq_cb_table_literal(b);
    sqlq_sql_text_add(&b->t, ") AND i.is_primary_key = 1 ORDER BY ic.key_ordinal FOR XML "
                             "PATH('')), 1, 2, ''))");
}

/* Change tracking on the table. */
static void source_objects(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM sys.change_tracking_tables WHERE "
                             "object_id = OBJECT_ID(");
    sqlq_cb_table_literal(b);
    sqlq_sql_text_add(&b->t, "))");
}

/* TRACK_COLUMNS_UPDATED = ON: m_call 1 when SYS_CHANGE_COLUMNS is NULL (every column: an
 * update of them all, or an insert), else per column whether its bit is in the mask, as
 * m_c<i>. The mask covers every change since the sync version. */
static void changed_columns(sqlq_capture_builder *b)
{
    const sqlq_table *t = b->c->table;
    sqlq_sql_text quoted;
    sqlq_sql_text_init(&quoted, b->t.dialect);
    sqlq_sql_text_table(&quoted, &t->name);
    char *name = NULL;
    if (sqlq_sql_text_take(&quoted, &name, NULL) != SQLQ_OK) {
        b->t.rc = b->t.rc ? b->t.rc : SQLQ_E_NOMEM;
        return;
    }
    sqlq_sql_text_add(&b->t, ", CASE WHEN c.SYS_CHANGE_COLUMNS IS NULL THEN 1 ELSE 0 END AS "
                             SQLQ_CAPTURE_CT_ALL);
    for (size_t i = 0; i < t->ncolumns; i++) {
        sqlq_sql_text_add(&b->t, ", CAST(CHANGE_TRACKING_IS_COLUMN_IN_MASK(COLUMNPROPERTY(OBJECT_ID(");
        sqlq_sql_text_literal(&b->t, name);
        sqlq_sql_text_add(&b->t, "), ");
        sqlq_sql_text_literal(&b->t, t->columns[i].name);
        sqlq_sql_text_add(&b->t, ", 'ColumnId'), c.SYS_CHANGE_COLUMNS) AS int) AS "
                                 SQLQ_CAPTURE_CT_COLUMN "%zu", i);
    }
    free(name);
}

const sqlq_capture_log_sql sqlq_mssql_tracking_sql = {
    .version_col = "c.SYS_CHANGE_VERSION",
    .op_col = "c.SYS_CHANGE_OPERATION",
    .changes_from = changes_from,
    .prelude = prelude,
    .tracked = true,
    .direct = "",
    .count_all = "COUNT_BIG(*)",
    .source_objects = 1,
    .poll = poll,
    .lock = lock,
    .advance_scan = advance_scan,
    .tokens_in = tokens_in,
    .leases_ddl = leases_ddl,
    .state_init = state_init,
    .start_now = start_now,
    .start_beginning = start_beginning,
    .key_expr = key_expr,
    .source_objects_expr = source_objects,
    .changed_columns = changed_columns,
};
