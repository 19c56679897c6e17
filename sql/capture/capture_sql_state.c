/* capture_sql_state: statements on sqlq's state and leases tables (DDL, release, renew,
 * abandon, sync version, owners): the half of capture_sql.h that does not read changes. */
#include "capture_sql.h"

#include "capture_sql_builder.h"

#include <stdio.h>

/* The leases this instance holds with one of the tokens of the JSON array SQLQ_P_TOKENS. */
static void tokens_match(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, " WHERE " SQLQ_COL_OWNER " = ");
    sqlq_cb_param(b, SQLQ_P_OWNER);
    sqlq_sql_text_add(&b->t, " AND " SQLQ_COL_TOKEN " ");
    b->c->log_sql->tokens_in(b);
}

void sqlq_cb_leases_columns_ddl(sqlq_capture_builder *b, char *const *types,
                                const char *owner_type)
{
    sqlq_sql_text_add(&b->t, " (");
    sqlq_catalog_key_defs(&b->t, b->c->table, types);
    sqlq_sql_text_add(&b->t, ", " SQLQ_COL_VERSION " bigint NOT NULL, " SQLQ_COL_ATTEMPTS
                             " integer NOT NULL, " SQLQ_COL_EXPIRES " bigint NULL, " SQLQ_COL_OWNER
                             " %s NULL, " SQLQ_COL_TOKEN " bigint NULL, PRIMARY KEY (",
                      owner_type);
    sqlq_catalog_key_list(&b->t, b->c->table, "");
    sqlq_sql_text_add(&b->t, "))");
}

sqlq_result sqlq_capture_sql_leases_ddl(const sqlq_capture_sql *c, char *const *types,
                                        sqlq_capture_stmt *out_table, sqlq_capture_stmt *out_index,
                                        sqlq_error *err)
{
    sqlq_capture_builder b, ix_b;
    sqlq_cb_init(&b, c, out_table);
    sqlq_cb_init(&ix_b, c, out_index);
    if (c->log_sql->leases_ddl)
        return c->log_sql->leases_ddl(&b, &ix_b, types, err);
    char ix[80];
    snprintf(ix, sizeof(ix), "ix_%s", c->names->leases_table);
    sqlq_sql_text_add(&b.t, "CREATE TABLE IF NOT EXISTS ");
    sqlq_cb_leases(&b);
    sqlq_cb_leases_columns_ddl(&b, types, "text");
    sqlq_result r = sqlq_cb_done(&b, err);
    if (r != SQLQ_OK) {
        sqlq_sql_text_free(&ix_b.t);
        return r;
    }
    sqlq_sql_text_add(&ix_b.t, "CREATE INDEX IF NOT EXISTS ");
    if (!c->dialect->schemas) /* one namespace: the index takes sqlq's prefix */
        sqlq_cb_obj(&ix_b, ix);
    else
        sqlq_sql_text_ident(&ix_b.t, ix);
    sqlq_sql_text_add(&ix_b.t, " ON ");
    sqlq_cb_leases(&ix_b);
    sqlq_sql_text_add(&ix_b.t, " (" SQLQ_COL_TOKEN ")");
    r = sqlq_cb_done(&ix_b, err);
    if (r != SQLQ_OK)
        sqlq_capture_stmt_free(out_table);
    return r;
}

sqlq_result sqlq_capture_sql_set_sync(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                      sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    sqlq_cb_obj(&b, "state");
    sqlq_sql_text_add(&b.t, " SET sync_version = ");
    sqlq_cb_param(&b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b.t, ", updated_ms = ");
    sqlq_cb_now(&b);
    sqlq_cb_state_row(&b);
    sqlq_sql_text_add(&b.t, " AND sync_version < ");
    sqlq_cb_param(&b, SQLQ_P_VERSION);
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_trim_leases(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                         sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "DELETE FROM ");
    sqlq_cb_leases(&b);
    sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_VERSION " <= ");
    sqlq_cb_param(&b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b.t, " AND " SQLQ_COL_EXPIRES " IS NULL");
    return sqlq_cb_done(&b, err);
}


sqlq_result sqlq_capture_sql_release(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                     sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    sqlq_cb_leases(&b);
    sqlq_sql_text_add(&b.t, " SET " SQLQ_COL_ATTEMPTS " = 0, " SQLQ_COL_EXPIRES " = NULL, "
                            SQLQ_COL_OWNER " = NULL");
    tokens_match(&b);
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_renew(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                   sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    sqlq_cb_leases(&b);
    sqlq_sql_text_add(&b.t, " SET " SQLQ_COL_EXPIRES " = ");
    sqlq_cb_now(&b);
    sqlq_sql_text_add(&b.t, " + %lld", (long long)c->lease_s * 1000);
    tokens_match(&b);
    sqlq_sql_text_add(&b.t, " AND " SQLQ_COL_EXPIRES " IS NOT NULL");
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_abandon(const sqlq_capture_sql *c, bool count_attempt,
                                     sqlq_capture_stmt *out, sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "UPDATE ");
    sqlq_cb_leases(&b);
    /* Expired at once (0, not NULL: NULL with the same version reads as "released"). */
    sqlq_sql_text_add(&b.t, " SET " SQLQ_COL_EXPIRES " = 0, " SQLQ_COL_OWNER " = NULL");
    if (!count_attempt)
        sqlq_sql_text_add(&b.t, ", " SQLQ_COL_ATTEMPTS " = CASE WHEN " SQLQ_COL_ATTEMPTS
                                " > 0 THEN " SQLQ_COL_ATTEMPTS " - 1 ELSE 0 END");
    tokens_match(&b);
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_state_init(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                        sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (c->log_sql->state_init)
        return c->log_sql->state_init(&b, err);
    sqlq_sql_text_add(&b.t, "INSERT INTO ");
    sqlq_cb_obj(&b, "state");
    sqlq_sql_text_add(&b.t, " (bridge_name, table_name, sync_version, updated_ms) VALUES (");
    sqlq_cb_param(&b, SQLQ_P_BRIDGE);
    sqlq_sql_text_add(&b.t, ", ");
    sqlq_cb_param(&b, SQLQ_P_TABLE);
    sqlq_sql_text_add(&b.t, ", ");
    sqlq_cb_param(&b, SQLQ_P_VERSION);
    sqlq_sql_text_add(&b.t, ", ");
    sqlq_cb_now(&b);
    sqlq_sql_text_add(&b.t, c->log_sql->on_duplicate_key
                                ? ") ON DUPLICATE KEY UPDATE sync_version = sync_version"
                                : ") ON CONFLICT (bridge_name, table_name) DO NOTHING");
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_read_sync(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                       sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT sync_version FROM ");
    sqlq_cb_obj(&b, "state");
    sqlq_cb_state_row(&b);
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_start_version(const sqlq_capture_sql *c, sqlq_start_from from,
                                           sqlq_capture_stmt *out, sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (from == SQLQ_START_NOW)
        c->log_sql->start_now(&b);
    else if (c->log_sql->start_beginning)
        c->log_sql->start_beginning(&b);
    else
        sqlq_sql_text_add(&b.t, "SELECT 0");
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_held(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                  sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT ");
    for (size_t i = 0; i < c->table->nkey; i++) {
        sqlq_sql_text_col(&b.t, "", sqlq_cb_key_name(&b, i));
        sqlq_sql_text_add(&b.t, " AS k%zu, ", i);
    }
    sqlq_sql_text_add(&b.t, SQLQ_COL_TOKEN " AS m_tok FROM ");
    sqlq_cb_leases(&b);
    tokens_match(&b);
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_owners(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                    sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    sqlq_sql_text_add(&b.t, "SELECT " SQLQ_COL_OWNER " AS owner, count(*) AS n FROM ");
    sqlq_cb_leases(&b);
    sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_EXPIRES " > ");
    sqlq_cb_now(&b);
    sqlq_sql_text_add(&b.t, " GROUP BY " SQLQ_COL_OWNER);
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_capture_sql_newest(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                    sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (c->log_sql->tracked) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    sqlq_cb_direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT (SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_cb_obj(&b, c->names->log_table);
    sqlq_sql_text_add(&b.t, ") AS m_newest, ");
    if (c->log_sql->held)
        c->log_sql->held(&b);
    else
        sqlq_sql_text_add(&b.t, "0 AS m_held");
    return sqlq_cb_done(&b, err);
}
