/* capture_sql_state: statements on sqlq's state and leases tables (DDL, release, renew,
 * abandon, sync version, owners): the half of capture_sql.h that does not read changes. */
#include "capture_sql.h"

#include "capture_sql_builder.h"
#include "change_log.h"

#include <stdio.h>

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
    if (!c->dialect->schemas) /* one namespace: the index takes sqlq's prefix */
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
    state_row(&b);
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

static void tokens_match(builder *b)
{
    sqlq_sql_text_add(&b->t, " WHERE " SQLQ_COL_OWNER " = ");
    param(b, SQLQ_P_OWNER);
    if (is_pg(b)) {
        /* = ANY(ARRAY(...)): an index scan on the token. IN (SELECT ...) was a seq scan of
         * the leases table, whose dead rows pile up between autovacuum runs under load. */
        sqlq_sql_text_add(&b->t, " AND " SQLQ_COL_TOKEN " = ANY(ARRAY(SELECT CAST("
                                 "jsonb_array_elements_text(CAST(");
        param(b, SQLQ_P_TOKENS);
        sqlq_sql_text_add(&b->t, " AS jsonb)) AS bigint)))");
        return;
    }
    sqlq_sql_text_add(&b->t, " AND " SQLQ_COL_TOKEN " IN (");
    if (is_my(b)) {
        sqlq_sql_text_add(&b->t, "SELECT j.v FROM JSON_TABLE(");
        param(b, SQLQ_P_TOKENS);
        sqlq_sql_text_add(&b->t, ", '$[*]' COLUMNS (v bigint PATH '$')) AS j");
    } else if (b->c->dialect->capture_shape == SQLQ_CAPTURE_LOG_COUNTER) {
        sqlq_sql_text_add(&b->t, "SELECT value FROM json_each(");
        param(b, SQLQ_P_TOKENS);
        sqlq_sql_text_add(&b->t, ")");
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
    sqlq_sql_text_add(&b.t, is_my(&b) ? ") ON DUPLICATE KEY UPDATE sync_version = sync_version"
                                      : ") ON CONFLICT (bridge_name, table_name) DO NOTHING");
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_read_sync(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                       sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT sync_version FROM ");
    obj(&b, "state");
    state_row(&b);
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
        /* Every version handed out so far is "before now" (a transaction still open with one
         * of them is skipped: it began before the bridge). */
        char seq[72];
        sqlq_change_log_sequence(c->names, seq, sizeof(seq));
        sqlq_sql_text_add(&b.t, "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 "
                                "END FROM ");
        obj(&b, seq);
    } else if (is_my(&b)) {
        sqlq_sql_text_add(&b.t, "SELECT value FROM ");
        obj(&b, "counter");
        sqlq_sql_text_add(&b.t, " WHERE name = 'version'");
    } else {
        /* SQLite: the log's newest version (the triggers take the next one above it or above
         * their floor; an empty log has nothing to skip). */
        sqlq_sql_text_add(&b.t, "SELECT coalesce(max(" SQLQ_COL_VERSION "), 0) FROM ");
        obj(&b, c->names->log_table);
    }
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_held(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                  sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT ");
    for (size_t i = 0; i < c->table->nkey; i++) {
        sqlq_sql_text_col(&b.t, "", key_name(&b, i));
        sqlq_sql_text_add(&b.t, " AS k%zu, ", i);
    }
    sqlq_sql_text_add(&b.t, SQLQ_COL_TOKEN " AS m_tok FROM ");
    leases(&b);
    tokens_match(&b);
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
