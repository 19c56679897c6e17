/* sqlite_change_log: SQLite's change-log triggers (insert, update, key-changing update,
 * delete) and the version floor they start above (docs/capture.md, Versions). */
#include "change_log.h"
#include "change_log_internal.h"
#include "sqlite_internal.h"

#include "backfill_version.h"
#include "log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQLite's next version: one above the newest version in the log (the top of its (version, key)
 * index: a read, no counter row written per change) and above the floor `floor_v`, fixed when
 * the triggers are created (sqlite_floor). Housekeeping never deletes the log's newest row, so
 * the log's top never goes down: versions only grow (docs/capture.md, Versions). */
static sqlq_result sqlite_version_sql(const sqlq_log_ctx *c, int64_t floor_v, char **out,
                                      sqlq_error *err)
{
    char name[96];
    const sqlq_dialect *d = sqlq_db_dialect(c->db);
    snprintf(name, sizeof(name), "%s%s", d->object_prefix, c->names.log_table);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "(max(coalesce((SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_sql_text_ident(&q, name); /* trigger bodies take unqualified names only */
    sqlq_sql_text_add(&q, "), 0), %lld) + 1)", (long long)floor_v);
    return sqlq_sql_text_take(&q, out, err);
}

static const char *const SQLITE_TRIGGERS[] = {"_ai", "_au", "_ak", "_ad"};

void sqlq_change_log_sqlite_trigger_name(const sqlq_log_ctx *c, size_t i, char *out, size_t size)
{
    snprintf(out, size, "%s%s", c->names.trigger, SQLITE_TRIGGERS[i]);
}

static sqlq_result sqlite_trigger_sql(const sqlq_log_ctx *c, size_t i, int64_t floor_v, char **out,
                                      sqlq_error *err)
{
    static const char *const events[] = {"INSERT", "UPDATE", "UPDATE", "DELETE"};
    char *v = NULL;
    sqlq_result r = sqlite_version_sql(c, floor_v, &v, err);
    if (r != SQLQ_OK)
        return r;
    char name[96];
    sqlq_change_log_sqlite_trigger_name(c, i, name, sizeof(name));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "CREATE TRIGGER ");
    sqlq_sql_text_ident(&q, name);
    sqlq_sql_text_add(&q, " AFTER %s ON ", events[i]);
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_sql_text_add(&q, " FOR EACH ROW ");
    if (i == 1 || i == 2) {
        sqlq_sql_text_add(&q, "WHEN %s(", i == 2 ? "NOT " : "");
        sqlq_change_log_same_key(&q, c);
        sqlq_sql_text_add(&q, ") ");
    }
    sqlq_sql_text_add(&q, "BEGIN ");
    if (i == 0)
        sqlq_change_log_upsert(&q, c, "NEW.", 'I', v);
    else if (i == 1)
        sqlq_change_log_upsert(&q, c, "NEW.", 'U', v);
    else
        sqlq_change_log_upsert(&q, c, "OLD.", 'D', v);
    if (i == 2) { /* the second read sees the delete's row: the insert's version is above it */
        sqlq_sql_text_add(&q, " ");
        sqlq_change_log_upsert(&q, c, "NEW.", 'I', v);
    }
    sqlq_sql_text_add(&q, " END");
    free(v);
    return sqlq_sql_text_take(&q, out, err);
}

static sqlq_result sqlite_drop_triggers(const sqlq_log_ctx *c, bool own_only, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < 4; i++) {
        char name[96];
        sqlq_change_log_sqlite_trigger_name(c, i, name, sizeof(name));
        sqlq_param p[2] = {sqlq_param_text(name), sqlq_param_text(c->names.table.name)};
        int64_t other = 0;
        if (own_only)
            r = sqlq_db_query_int(c->db,
                                  "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND "
                                  "name = ? AND tbl_name <> ? COLLATE NOCASE",
                                  p, 2, &other, err);
        if (r != SQLQ_OK || other > 0)
            continue;
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
        sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
        sqlq_sql_text_ident(&q, name);
        r = sqlq_change_log_exec(c->db, &q, err);
    }
    return r;
}

/* Raises the counter row 'version' to the log's newest version (and, with `syncs`, to every
 * bridge's sync version of the table) and reads it back into *floor_v. The counter only grows:
 * the triggers of an earlier sqlq bumped it per change, and a floor taken from it at a later
 * setup or after a drop is never below one taken before. */
static sqlq_result sqlite_floor(const sqlq_log_ctx *c, bool syncs, int64_t *floor_v,
                                sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "UPDATE ");
    sqlq_catalog_object(&q, "counter");
    sqlq_sql_text_add(&q,
                      " SET value = max(value, coalesce((SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, "), 0)");
    if (syncs) {
        sqlq_sql_text_add(&q, ", coalesce((SELECT max(sync_version) FROM ");
        sqlq_catalog_object(&q, "state");
        sqlq_sql_text_add(&q, " WHERE table_name = ");
        sqlq_sql_text_literal(&q, c->names.table_key);
        sqlq_sql_text_add(&q, "), 0)");
    }
    sqlq_sql_text_add(&q, ") WHERE name = 'version'");
    sqlq_result r = sqlq_change_log_exec(c->db, &q, err);
    if (r == SQLQ_OK && floor_v)
        r = sqlq_db_query_int(c->db, "SELECT value FROM sqlq_counter WHERE name = 'version'", NULL,
                              0, floor_v, err);
    return r;
}

/* The floor the triggers count from, as the counter row 'floor:<table key>' (or gone with
 * `floor_v` < 0): what a backfill gives a row no logged change holds while the log is empty
 * (backfill_version.h). */
static sqlq_result record_floor(const sqlq_log_ctx *c, int64_t floor_v, sqlq_error *err)
{
    char row[SQLQ_TABLE_KEY_MAX + 8];
    snprintf(row, sizeof(row), SQLQ_BACKFILL_FLOOR_ROW "%s", c->names.table_key);
    sqlq_param p[2] = {sqlq_param_text(row), sqlq_param_int(floor_v)};
    return floor_v < 0 ? sqlq_db_exec(c->db, "DELETE FROM sqlq_counter WHERE name = ?", p, 1,
                                      NULL, err)
                       : sqlq_db_exec(c->db, "INSERT OR REPLACE INTO sqlq_counter (name, value) "
                                             "VALUES (?, ?)", p, 2, NULL, err);
}

/* The triggers, and before the log goes the floor is raised to its newest version: a log set up
 * again later starts above every version this one handed out. */
sqlq_result sqlq_change_log_sqlite_drop(const sqlq_log_ctx *c, bool catalog, bool own_only,
                                        sqlq_error *err)
{
    bool log = false;
    sqlq_result r = sqlite_drop_triggers(c, own_only, err);
    if (r == SQLQ_OK && catalog && !own_only)
        r = sqlq_catalog_object_exists(c->db, c->names.log_table, &log, err);
    if (r == SQLQ_OK && log)
        r = sqlite_floor(c, false, NULL, err);
    if (r == SQLQ_OK && log)
        r = record_floor(c, -1, err);
    return r;
}

sqlq_result sqlq_change_log_sqlite_install(const sqlq_log_ctx *c, sqlq_error *err)
{
    int64_t floor_v = 0;
    sqlq_result r = sqlite_floor(c, true, &floor_v, err);
    if (r == SQLQ_OK)
        r = record_floor(c, floor_v, err);
    if (r == SQLQ_OK)
        r = sqlite_drop_triggers(c, false, err);
    for (size_t i = 0; r == SQLQ_OK && i < 4; i++) {
        char *sql = NULL;
        r = sqlite_trigger_sql(c, i, floor_v, &sql, err);
        if (r == SQLQ_OK)
            r = sqlq_db_exec(c->db, sql, NULL, 0, NULL, err);
        free(sql);
    }
    return r;
}
