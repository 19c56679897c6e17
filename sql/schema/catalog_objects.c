/* catalog_objects: sqlq's shared objects (schema, registry, state table, version and token
 * sources): creating them, the registry rows, dropping them once unused. Half of catalog.h. */
#include "catalog.h"

#include "log.h"
#include "setup_hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared objects ---------------------------------------------------------------------- */

sqlq_result sqlq_catalog_ddl_lock(sqlq_db *db, sqlq_error *err)
{
    const char *sql = sqlq_db_dialect(db)->ddl_lock_sql;
    return sql ? sqlq_db_exec(db, sql, NULL, 0, NULL, err) : SQLQ_OK;
}

static sqlq_result run_all(sqlq_db *db, const char *const *sql, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && sql[i]; i++)
        r = sqlq_db_exec(db, sql[i], NULL, 0, NULL, err);
    return r;
}

/* All shared objects present: then ensure needs no DDL (nor the right to create: PostgreSQL
 * checks CREATE privileges before IF NOT EXISTS, and a bridge may run without them). */
static sqlq_result all_present(sqlq_db *db, bool *out, sqlq_error *err)
{
    /* instances, instance_rates: a catalog made before them is completed by the same
     * statements */
    const char *const objects[] = {"tables", "state", sqlq_db_dialect(db)->catalog_token_object,
                                   "instances", "instance_rates"};
    *out = true;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && *out && i < sizeof(objects) / sizeof(objects[0]); i++)
        r = sqlq_catalog_object_exists(db, objects[i], out, err);
    return r;
}

sqlq_result sqlq_catalog_ensure(sqlq_db *db, sqlq_error *err)
{
    bool present = false;
    sqlq_result r = all_present(db, &present, err);
    if (r != SQLQ_OK || present)
        return r;
    r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK)
        r = run_all(db, sqlq_db_dialect(db)->catalog_create, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    return r;
}

sqlq_result sqlq_catalog_object_exists(sqlq_db *db, const char *bare, bool *out, sqlq_error *err)
{
    *out = false;
    sqlq_param p = sqlq_param_text(bare);
    int64_t n = 0;
    sqlq_result r = sqlq_db_query_int(db, sqlq_db_dialect(db)->object_exists_sql, &p, 1, &n, err);
    *out = r == SQLQ_OK && n > 0;
    return r;
}

sqlq_result sqlq_catalog_exists(sqlq_db *db, bool *out, sqlq_error *err)
{
    bool a = false, b = false;
    sqlq_result r = sqlq_catalog_object_exists(db, "tables", &a, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, "state", &b, err);
    *out = a && b;
    return r;
}

static sqlq_result registry_sql(sqlq_db *db, const char *head, const char *tail, char **out,
                                sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "%s", head);
    sqlq_catalog_object(&q, "tables");
    sqlq_sql_text_add(&q, "%s", tail);
    return sqlq_sql_text_take(&q, out, err);
}

sqlq_result sqlq_catalog_register(sqlq_db *db, const char *kind, const char *bridge,
                                  const char *table_key, const char *object, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    char *sql = NULL;
    sqlq_result r = registry_sql(db, d->registry_upsert_head, d->registry_upsert_tail, &sql, err);
    sqlq_param p[4] = {sqlq_param_text(kind), sqlq_param_text(bridge ? bridge : ""),
                       sqlq_param_text(table_key), sqlq_param_text(object)};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, 4, NULL, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_unregister(sqlq_db *db, const char *kind, const char *bridge,
                                    const char *table_key, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_result r = registry_sql(db, "DELETE FROM ",
                                 " WHERE kind = ? AND bridge_name = ? AND table_name = ?", &sql,
                                 err);
    sqlq_param p[3] = {sqlq_param_text(kind), sqlq_param_text(bridge ? bridge : ""),
                       sqlq_param_text(table_key)};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, 3, NULL, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_list(sqlq_db *db, const char *table_key, json_t **out, sqlq_error *err)
{
    *out = NULL;
    char *sql = NULL;
    sqlq_result r = registry_sql(db, "SELECT kind, bridge_name, table_name, object_name FROM ",
                                 table_key ? " WHERE table_name = ? ORDER BY kind, bridge_name"
                                           : " ORDER BY table_name, kind, bridge_name",
                                 &sql, err);
    sqlq_param p = sqlq_param_text(table_key);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, &p, table_key ? 1 : 0, out, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_find(sqlq_db *db, const char *table_key, const char *kind,
                              const char *bridge, json_t **out, sqlq_error *err)
{
    *out = NULL;
    bool exists = false;
    char *sql = NULL;
    sqlq_result r = sqlq_catalog_exists(db, &exists, err);
    if (r == SQLQ_OK && !exists) {
        *out = json_array();
        return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    if (r == SQLQ_OK)
        r = registry_sql(db, "SELECT kind, bridge_name, table_name, object_name FROM ",
                         bridge ? " WHERE table_name = ? AND kind = ? AND bridge_name = ? "
                                  "ORDER BY bridge_name"
                                : " WHERE table_name = ? AND kind = ? ORDER BY bridge_name",
                         &sql, err);
    sqlq_param p[3] = {sqlq_param_text(table_key), sqlq_param_text(kind),
                       sqlq_param_text(bridge)};
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, p, bridge ? 3 : 2, out, err);
    free(sql);
    return r;
}

static sqlq_result count_rows(sqlq_db *db, const char *bare, int64_t *out, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "SELECT count(*) FROM ");
    sqlq_catalog_object(&q, bare);
    sqlq_result r = sqlq_sql_text_take(&q, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, sql, NULL, 0, out, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_drop_if_unused(sqlq_db *db, bool *out_dropped, sqlq_error *err)
{
    if (out_dropped)
        *out_dropped = false;
    const sqlq_dialect *d = sqlq_db_dialect(db);
    bool exists = false;
    sqlq_result r = sqlq_catalog_exists(db, &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    int64_t registered = 0, states = 0, cursors = 0;
    bool have_cursors = false; /* created by the first cursor source or backfill only */
    r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK)
        r = count_rows(db, "tables", &registered, err);
    if (r == SQLQ_OK)
        r = count_rows(db, "state", &states, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, "cursor_state", &have_cursors, err);
    if (r == SQLQ_OK && have_cursors)
        r = count_rows(db, "cursor_state", &cursors, err);
    bool unused = r == SQLQ_OK && registered == 0 && states == 0 && cursors == 0;
    if (unused)
        r = run_all(db, d->catalog_drop, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        return r;
    }
    if (out_dropped)
        *out_dropped = unused;
    if (unused)
        SQLQ_INFO("catalog_dropped", "reason=unused");
    int64_t kept = 0;
    if (unused && d->schema_exists_sql &&
        sqlq_db_query_int(db, d->schema_exists_sql, NULL, 0, &kept, err) == SQLQ_OK && kept > 0)
        SQLQ_WARN("catalog_schema_kept",
                  "schema=sqlq note=\"sqlq's own objects are removed; the schema is left in place "
                  "because other objects are in it\"");
    return SQLQ_OK;
}

/* ---- one log, one table ------------------------------------------------------------------ */

sqlq_result sqlq_catalog_log_sharer(sqlq_db *db, const char *object, const char *table_key,
                                    char *out, size_t size, sqlq_error *err)
{
    out[0] = '\0';
    bool catalog = false;
    sqlq_result r = sqlq_catalog_exists(db, &catalog, err);
    if (r != SQLQ_OK || !catalog)
        return r;
    char *sql = NULL;
    r = registry_sql(db, "SELECT table_name FROM ",
                     " WHERE kind = 'log' AND object_name = ? AND table_name <> ? "
                     "ORDER BY table_name",
                     &sql, err);
    sqlq_param p[2] = {sqlq_param_text(object), sqlq_param_text(table_key)};
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, p, 2, &rows, err);
    free(sql);
    const char *other = json_string_value(json_object_get(json_array_get(rows, 0), "table_name"));
    if (r == SQLQ_OK && other)
        snprintf(out, size, "%s", other);
    json_decref(rows);
    return r;
}

sqlq_result sqlq_catalog_log_check(sqlq_db *db, const sqlq_catalog_names *n, sqlq_error *err)
{
    char object[128], other[SQLQ_TABLE_KEY_MAX];
    sqlq_catalog_log_display(n, object, sizeof(object));
    sqlq_result r = sqlq_catalog_log_sharer(db, object, n->table_key, other, sizeof(other), err);
    if (r != SQLQ_OK || !other[0])
        return r;
    /* The table that holds the log under a name its own would no longer be is the one that
     * came in: an earlier sqlq named public.orders_aee247e33b26 plainly. */
    sqlq_catalog_names fresh;
    bool mine_legacy = sqlq_catalog_names_make(n->dialect, &n->table, NULL, &fresh, err) ==
                           SQLQ_OK &&
                       strcmp(fresh.log_table, n->log_table) != 0;
    const char *intruder = mine_legacy ? n->table_key : other;
    const char *owner = mine_legacy ? other : n->table_key;
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg_text(intruder, NULL, arg, sizeof arg);
    return sqlq_error_set(err, SQLQ_E_CONFLICT, false,
                          "change log %s of table %s is registered to table %s too: one log for "
                          "two tables mixes their changes. Run `sqlq setup --table %s --drop` "
                          "(the log stays with %s), then `sqlq setup` of both tables again: each "
                          "gets a log of its own (docs/capture.md, Names)",
                          object, n->table_key, other, arg, owner);
}
