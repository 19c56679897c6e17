#include "capture_sql.h"

#include "ct_query.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A statement under construction: text plus the role of each `?`. */
typedef struct builder {
    sqlq_sql_text t;
    sqlq_capture_stmt *st;
    const sqlq_capture_sql *c;
} builder;

void sqlq_capture_stmt_free(sqlq_capture_stmt *s)
{
    if (!s)
        return;
    free(s->sql);
    memset(s, 0, sizeof(*s));
}

static void b_init(builder *b, const sqlq_capture_sql *c, sqlq_capture_stmt *st)
{
    memset(st, 0, sizeof(*st));
    sqlq_sql_text_init(&b->t, c->dialect);
    b->st = st;
    b->c = c;
}

static sqlq_result b_done(builder *b, sqlq_error *err)
{
    return sqlq_sql_text_take(&b->t, &b->st->sql, err);
}

static void param(builder *b, sqlq_capture_param p)
{
    if (b->st->nparams >= SQLQ_CAPTURE_MAX_PARAMS) {
        b->t.rc = b->t.rc ? b->t.rc : SQLQ_E_INVALID;
        return;
    }
    b->st->params[b->st->nparams++] = p;
    sqlq_sql_text_add(&b->t, "?");
}

static bool is_pg(const builder *b) { return b->c->dialect == SQLQ_DIALECT_POSTGRES; }
static bool is_ms(const builder *b) { return b->c->dialect == SQLQ_DIALECT_MSSQL; }
/* The current time in ms. SQLite: a parameter the caller fills from its own clock (the
 * database file is local: same clock), so the two statements of a SQLite poll agree on it. */
static void now(builder *b)
{
    if (b->c->dialect == SQLQ_DIALECT_SQLITE)
        param(b, SQLQ_P_NOW);
    else
        sqlq_sql_text_add(&b->t, "%s", sqlq_dialect_now_ms(b->c->dialect));
}
static const char *key_name(const builder *b, size_t i)
{
    return b->c->table->columns[b->c->table->key[i]].name;
}

static void obj(builder *b, const char *bare) { sqlq_catalog_object(&b->t, bare); }
static void leases(builder *b) { obj(b, b->c->names->leases_table); }

/* Version and operation columns of the changes relation `c`. */
static const char *ver(const builder *b)
{
    return b->c->change_tracking ? "c.SYS_CHANGE_VERSION" : "c." SQLQ_COL_VERSION;
}
static const char *opcol(const builder *b)
{
    return b->c->change_tracking ? "c.SYS_CHANGE_OPERATION" : "c." SQLQ_COL_OP;
}

/* SQL Server: DECLARE @sync from the state row (CHANGETABLE takes a variable, not a query). */
static void ms_declare_sync(builder *b)
{
    sqlq_sql_text_add(&b->t, "SET NOCOUNT ON; DECLARE @sync bigint = (SELECT sync_version FROM ");
    obj(b, "state");
    sqlq_sql_text_add(&b->t, " WHERE bridge_name = ");
    param(b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b->t, " AND table_name = ");
    param(b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b->t, "); ");
}

/* The quoted table name as a string literal (for OBJECT_ID). */
static void table_literal(builder *b)
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

/* Versions after the stored sync version; on PostgreSQL only those of transactions older than
 * every running one (versions are xids: a lower one may still commit). The CHANGETABLE source
 * bounds by @sync itself and adds nothing. */
static void sync_bound(builder *b)
{
    if (b->c->change_tracking) {
        sqlq_sql_text_add(&b->t, "1 = 1");
        return;
    }
    sqlq_sql_text_add(&b->t, "%s > (SELECT sync_version FROM ", ver(b));
    obj(b, "state");
    sqlq_sql_text_add(&b->t, " WHERE bridge_name = ");
    param(b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b->t, " AND table_name = ");
    param(b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b->t, ")");
    if (is_pg(b))
        sqlq_sql_text_add(&b->t, " AND %s < CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) "
                                 "AS text) AS bigint)",
                          ver(b));
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
    sqlq_sql_text_add(&b->t,
                      "%s AS m_v, %s AS m_op, CASE WHEN l." SQLQ_COL_VERSION " = %s AND l."
                      SQLQ_COL_ATTEMPTS " >= %d THEN %d WHEN l." SQLQ_COL_VERSION " = %s THEN l."
                      SQLQ_COL_ATTEMPTS " + 1 ELSE 1 END AS m_att",
                      ver(b), opcol(b), ver(b), m, m + 1, ver(b));
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
    sync_bound(b);
    sqlq_sql_text_add(&b->t, " AND ");
    available(b);
    order_by_changes(b);
    if (!is_ms(b))
        sqlq_sql_text_add(&b->t, " LIMIT %d", b->c->max_batch_size);
}

/* Where the final projection reads the batch from. */
typedef enum { FROM_PG_CTE, FROM_MS_TEMP, FROM_SQLITE_SUBQUERY } batch_from;

/* The final projection: batch columns, m_row and the current row as c0... */
static void batch_with_rows(builder *b, batch_from from)
{
    const sqlq_table *t = b->c->table;
    sqlq_sql_text_add(&b->t, "SELECT b.*, CASE WHEN ");
    sqlq_sql_text_col(&b->t, "r.", key_name(b, 0));
    sqlq_sql_text_add(&b->t, " IS NULL THEN 0 ELSE 1 END AS m_row");
    for (size_t i = 0; i < t->ncolumns; i++) {
        sqlq_sql_text_col(&b->t, ", r.", t->columns[i].name);
        sqlq_sql_text_add(&b->t, " AS c%zu", i);
    }
    sqlq_sql_text_add(&b->t, " FROM ");
    if (from == FROM_PG_CTE) {
        sqlq_sql_text_add(&b->t, "t AS b");
    } else if (from == FROM_MS_TEMP) {
        sqlq_sql_text_add(&b->t, "#sqlq_batch AS b");
    } else {
        sqlq_sql_text_add(&b->t, "(");
        batch_select(b, true, false);
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
    sqlq_sql_text_add(&b->t, " ON CONFLICT (");
    sqlq_catalog_key_list(&b->t, b->c->table, "");
    sqlq_sql_text_add(&b->t, ") DO UPDATE SET ");
    static const char *const cols[] = {SQLQ_COL_VERSION, SQLQ_COL_ATTEMPTS, SQLQ_COL_EXPIRES,
                                       SQLQ_COL_OWNER, SQLQ_COL_TOKEN};
    for (size_t i = 0; i < 5; i++)
        sqlq_sql_text_add(&b->t, "%s%s = %s.%s", i ? ", " : "", cols[i], excluded, cols[i]);
}

static sqlq_result poll_postgres(builder *b, sqlq_error *err)
{
    /* A data-modifying WITH cannot run inside DECLARE CURSOR, which psqlODBC wraps around
     * statements it sees starting with SELECT/WITH when UseDeclareFetch=1; a leading comment
     * keeps it from doing so. */
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

sqlq_result sqlq_capture_sql_poll(const sqlq_capture_sql *c, sqlq_capture_stmt *select,
                                  sqlq_capture_stmt *lease, sqlq_error *err)
{
    builder b;
    memset(lease, 0, sizeof(*lease));
    b_init(&b, c, select);
    if (c->dialect == SQLQ_DIALECT_POSTGRES)
        return poll_postgres(&b, err);
    if (c->dialect == SQLQ_DIALECT_MSSQL)
        return poll_mssql(&b, err);
    batch_with_rows(&b, FROM_SQLITE_SUBQUERY);
    sqlq_result r = b_done(&b, err);
    if (r != SQLQ_OK)
        return r;
    b_init(&b, c, lease);
    sqlq_sql_text_add(&b.t, "INSERT INTO ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " (");
    lease_columns(&b);
    sqlq_sql_text_add(&b.t, ") SELECT ");
    lease_values_from_batch(&b, "b.", true);
    sqlq_sql_text_add(&b.t, " FROM (");
    batch_select(&b, true, false);
    sqlq_sql_text_add(&b.t, ") AS b WHERE 1");
    upsert_tail(&b, "excluded");
    r = b_done(&b, err);
    if (r != SQLQ_OK)
        sqlq_capture_stmt_free(select);
    return r;
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

sqlq_result sqlq_capture_sql_leases_ddl(const sqlq_capture_sql *c, char *const *types,
                                        sqlq_capture_stmt *out_table, sqlq_capture_stmt *out_index,
                                        sqlq_error *err)
{
    builder b;
    b_init(&b, c, out_table);
    memset(out_index, 0, sizeof(*out_index));
    char ix[80];
    snprintf(ix, sizeof(ix), "ix_%s", c->names->leases_table);
    if (is_ms(&b)) {
        sqlq_sql_text_add(&b.t, "IF OBJECT_ID(N'sqlq.%s', N'U') IS NULL BEGIN ",
                          c->names->leases_table);
    }
    sqlq_sql_text_add(&b.t, "CREATE TABLE %s", is_ms(&b) ? "" : "IF NOT EXISTS ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " (");
    sqlq_catalog_key_defs(&b.t, c->table, types);
    sqlq_sql_text_add(&b.t, ", " SQLQ_COL_VERSION " bigint NOT NULL, " SQLQ_COL_ATTEMPTS
                            " integer NOT NULL, " SQLQ_COL_EXPIRES " bigint NULL, " SQLQ_COL_OWNER
                            " %s NULL, " SQLQ_COL_TOKEN " bigint NULL, PRIMARY KEY (",
                      is_ms(&b) ? "nvarchar(256)" : "text");
    sqlq_catalog_key_list(&b.t, c->table, "");
    sqlq_sql_text_add(&b.t, "))");
    if (is_ms(&b)) {
        sqlq_sql_text_add(&b.t, "; CREATE INDEX ");
        sqlq_sql_text_ident(&b.t, ix);
        sqlq_sql_text_add(&b.t, " ON ");
        leases(&b);
        sqlq_sql_text_add(&b.t, " (" SQLQ_COL_TOKEN "); END");
        return b_done(&b, err);
    }
    sqlq_result r = b_done(&b, err);
    if (r != SQLQ_OK)
        return r;
    b_init(&b, c, out_index);
    sqlq_sql_text_add(&b.t, "CREATE INDEX IF NOT EXISTS ");
    if (c->dialect == SQLQ_DIALECT_SQLITE)
        obj(&b, ix);
    else
        sqlq_sql_text_ident(&b.t, ix);
    sqlq_sql_text_add(&b.t, " ON ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " (" SQLQ_COL_TOKEN ")");
    r = b_done(&b, err);
    if (r != SQLQ_OK)
        sqlq_capture_stmt_free(out_table);
    return r;
}

sqlq_result sqlq_capture_sql_lock(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                  sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->dialect == SQLQ_DIALECT_SQLITE) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    if (c->dialect == SQLQ_DIALECT_POSTGRES) {
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
    sync_bound(&b);
    sqlq_sql_text_add(&b.t, " AND ");
    available(&b);
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_advance_scan(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                          sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->change_tracking) {
        ms_declare_sync(&b);
        sqlq_sql_text_add(&b.t, "SELECT @sync AS m_sync");
    } else {
        sqlq_sql_text_add(&b.t, "SELECT (SELECT sync_version FROM ");
        obj(&b, "state");
        sqlq_sql_text_add(&b.t, " WHERE bridge_name = ");
        param(&b, SQLQ_P_BRIDGE);
        sqlq_sql_text_add(&b.t, " AND table_name = ");
        param(&b, SQLQ_P_TABLE);
        sqlq_sql_text_add(&b.t, ") AS m_sync");
    }
    sqlq_sql_text_add(&b.t, ", (SELECT min(%s) FROM ", ver(&b));
    changes_from(&b);
    lease_join(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    sync_bound(&b);
    sqlq_sql_text_add(&b.t, " AND ");
    unprocessed(&b);
    sqlq_sql_text_add(&b.t, ") AS m_unproc, (SELECT max(%s) FROM ", ver(&b));
    changes_from(&b);
    sqlq_sql_text_add(&b.t, " WHERE ");
    sync_bound(&b);
    sqlq_sql_text_add(&b.t, ") AS m_max");
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_set_sync(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                      sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    obj(&b, "state");
    sqlq_sql_text_add(&b.t, " SET sync_version = ");
    param(&b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b.t, ", updated_ms = ");
    now(&b);
    sqlq_sql_text_add(&b.t, " WHERE bridge_name = ");
    param(&b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b.t, " AND table_name = ");
    param(&b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b.t, " AND sync_version < ");
    param(&b, SQLQ_P_VERSION);
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_trim_leases(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                         sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "DELETE FROM ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_VERSION " <= ");
    param(&b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b.t, " AND " SQLQ_COL_EXPIRES " IS NULL");
    return b_done(&b, err);
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
    sqlq_sql_text_add(&b.t, "DELETE FROM ");
    obj(&b, c->names->log_table);
    sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_VERSION " <= (SELECT min(sync_version) FROM ");
    obj(&b, "state");
    sqlq_sql_text_add(&b.t, " WHERE table_name = ");
    param(&b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b.t, ")");
    return b_done(&b, err);
}

static void tokens_match(builder *b)
{
    sqlq_sql_text_add(&b->t, " WHERE " SQLQ_COL_OWNER " = ");
    param(b, SQLQ_P_OWNER);
    sqlq_sql_text_add(&b->t, " AND " SQLQ_COL_TOKEN " IN (");
    if (b->c->dialect == SQLQ_DIALECT_SQLITE) {
        sqlq_sql_text_add(&b->t, "SELECT value FROM json_each(");
        param(b, SQLQ_P_TOKENS);
        sqlq_sql_text_add(&b->t, ")");
    } else if (is_pg(b)) {
        sqlq_sql_text_add(&b->t, "SELECT CAST(jsonb_array_elements_text(CAST(");
        param(b, SQLQ_P_TOKENS);
        sqlq_sql_text_add(&b->t, " AS jsonb)) AS bigint)");
    } else {
        sqlq_sql_text_add(&b->t, "SELECT CAST([value] AS bigint) FROM OPENJSON(");
        param(b, SQLQ_P_TOKENS);
        sqlq_sql_text_add(&b->t, ")");
    }
    sqlq_sql_text_add(&b->t, ")");
}

sqlq_result sqlq_capture_sql_release(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                     sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " SET " SQLQ_COL_ATTEMPTS " = 0, " SQLQ_COL_EXPIRES " = NULL, "
                            SQLQ_COL_OWNER " = NULL");
    tokens_match(&b);
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_renew(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                   sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " SET " SQLQ_COL_EXPIRES " = ");
    now(&b);
    sqlq_sql_text_add(&b.t, " + %lld", (long long)c->lease_s * 1000);
    tokens_match(&b);
    sqlq_sql_text_add(&b.t, " AND " SQLQ_COL_EXPIRES " IS NOT NULL");
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_abandon(const sqlq_capture_sql *c, bool count_attempt,
                                     sqlq_capture_stmt *out, sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    leases(&b);
    /* Expired at once (0, not NULL: NULL with the same version reads as "released"). */
    sqlq_sql_text_add(&b.t, " SET " SQLQ_COL_EXPIRES " = 0, " SQLQ_COL_OWNER " = NULL");
    if (!count_attempt)
        sqlq_sql_text_add(&b.t, ", " SQLQ_COL_ATTEMPTS " = CASE WHEN " SQLQ_COL_ATTEMPTS
                                " > 0 THEN " SQLQ_COL_ATTEMPTS " - 1 ELSE 0 END");
    tokens_match(&b);
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_state_init(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                        sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (is_ms(&b)) {
        sqlq_sql_text_add(&b.t, "SET NOCOUNT ON; DECLARE @b nvarchar(128) = ");
        param(&b, SQLQ_P_BRIDGE);
        sqlq_sql_text_add(&b.t, ", @t nvarchar(300) = ");
        param(&b, SQLQ_P_TABLE);
        sqlq_sql_text_add(&b.t, ", @v bigint = ");
        param(&b, SQLQ_P_VERSION);
        sqlq_sql_text_add(&b.t, "; IF NOT EXISTS (SELECT 1 FROM ");
        obj(&b, "state");
        sqlq_sql_text_add(&b.t, " WITH (UPDLOCK, HOLDLOCK) WHERE bridge_name = @b AND "
                                "table_name = @t) INSERT INTO ");
        obj(&b, "state");
        sqlq_sql_text_add(&b.t, " (bridge_name, table_name, sync_version, updated_ms) "
                                "VALUES (@b, @t, @v, ");
        now(&b);
        sqlq_sql_text_add(&b.t, ");");
        return b_done(&b, err);
    }
    sqlq_sql_text_add(&b.t, "INSERT INTO ");
    obj(&b, "state");
    sqlq_sql_text_add(&b.t, " (bridge_name, table_name, sync_version, updated_ms) VALUES (");
    param(&b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b.t, ", ");
    param(&b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b.t, ", ");
    param(&b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b.t, ", ");
    now(&b);
    sqlq_sql_text_add(&b.t, ") ON CONFLICT (bridge_name, table_name) DO NOTHING");
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_read_sync(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                       sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT sync_version FROM ");
    obj(&b, "state");
    sqlq_sql_text_add(&b.t, " WHERE bridge_name = ");
    param(&b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b.t, " AND table_name = ");
    param(&b, SQLQ_P_TABLE);
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_start_version(const sqlq_capture_sql *c, sqlq_start_from from,
                                           sqlq_capture_stmt *out, sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->change_tracking) {
        if (from == SQLQ_START_NOW) {
            sqlq_sql_text_add(&b.t, "SELECT CHANGE_TRACKING_CURRENT_VERSION()");
        } else {
            sqlq_sql_text_add(&b.t, "SELECT CHANGE_TRACKING_MIN_VALID_VERSION(OBJECT_ID(");
            table_literal(&b);
            sqlq_sql_text_add(&b.t, "))");
        }
    } else if (from == SQLQ_START_BEGINNING) {
        sqlq_sql_text_add(&b.t, "SELECT 0");
    } else if (is_pg(&b)) {
        /* Everything of transactions older than every running one is "before now". */
        sqlq_sql_text_add(&b.t, "SELECT CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS "
                                "text) AS bigint) - 1");
    } else {
        sqlq_sql_text_add(&b.t, "SELECT value FROM ");
        obj(&b, "counter");
        sqlq_sql_text_add(&b.t, " WHERE name = 'version'");
    }
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_owners(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                    sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT " SQLQ_COL_OWNER " AS owner, count(*) AS n FROM ");
    leases(&b);
    sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_EXPIRES " > ");
    now(&b);
    sqlq_sql_text_add(&b.t, " GROUP BY " SQLQ_COL_OWNER);
    return b_done(&b, err);
}
