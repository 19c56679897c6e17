/* mssql_source: SQL Server change tracking as a change source (change_source.h): the server
 * keeps the changes (CHANGETABLE), capture.c's shared lease machinery reads them with the SQL
 * of mssql_capture_sql.c under an app lock, and each poll first checks the sync version has
 * not fallen behind the retention (ct_query.h). Setup turns change tracking on. */
#include "mssql_internal.h"

#include "capture_internal.h"
#include "ct_query.h"
#include "log.h"
#include "setup_hint.h"
#include "sql_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- around the shared machinery --------------------------------------------------------- */

static sqlq_result check_source(sqlq_capture *cap, const char *user_table, sqlq_error *err)
{
    json_t *rows = NULL;
    sqlq_param p = sqlq_param_text(cap->quoted_table);
    sqlq_result r = sqlq_db_query(cap->db, sqlq_ct_info_sql(), &p, 1, &rows, err);
    int64_t enabled = 0;
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg_text(user_table, NULL, arg, sizeof arg);
    if (r == SQLQ_OK &&
        (!sqlq_json_int64(json_object_get(json_array_get(rows, 0), "enabled"), &enabled) ||
         !enabled))
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                           "change tracking is not enabled on table %s: run `sqlq setup --table "
                           "%s` (or ALTER TABLE … ENABLE CHANGE_TRACKING)",
                           cap->names.table_key, arg);
    json_decref(rows);
    return r;
}

/* The stored sync version must not have fallen behind change-tracking retention. */
static sqlq_result retention(sqlq_capture *cap, sqlq_error *err)
{
    int64_t sync = 0;
    sqlq_result r = sqlq_capture_query_int(cap, &cap->read_sync, NULL, &sync, err);
    sqlq_param p = sqlq_param_text(cap->quoted_table);
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_query(cap->db, sqlq_ct_info_sql(), &p, 1, &rows, err);
    int64_t min_valid = 0, new_sync = sync;
    bool gap = false;
    if (r == SQLQ_OK &&
        !sqlq_json_int64(json_object_get(json_array_get(rows, 0), "min_valid"), &min_valid))
        r = sqlq_error_set(err, SQLQ_E_INVALID, false, "change tracking is not enabled on %s",
                           cap->names.table_key);
    json_decref(rows);
    if (r == SQLQ_OK)
        r = sqlq_ct_retention_check(cap->bridge, cap->names.table_key, sync, min_valid,
                                    cap->allow_gap, &new_sync, &gap, err);
    if (r == SQLQ_OK && gap) {
        SQLQ_WARN("retention_gap", "bridge=%s table=%s sync_version=%" PRId64
                  " min_valid=%" PRId64 " note=\"changes in between were lost\"",
                  cap->bridge, cap->names.table_key, sync, min_valid);
        sqlq_capture_values v = {.version = new_sync};
        r = sqlq_capture_run(cap, &cap->set_sync, &v, NULL, err);
    }
    return r;
}

static sqlq_result poll_lock(sqlq_capture *cap, sqlq_capture_values *v, sqlq_error *err)
{
    sqlq_result r = sqlq_capture_run(cap, &cap->lock, v, NULL, err);
    return r == SQLQ_OK ? retention(cap, err) : r;
}

/* Changed columns need the table tracked WITH (TRACK_COLUMNS_UPDATED = ON); no old values. */
static sqlq_result image_open(sqlq_capture *cap, const sqlq_capture_config *cfg, sqlq_error *err)
{
    if (cfg->before_image)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "key before_image: not available with SQL Server change tracking "
                              "(it keeps no old values)");
    sqlq_param p = sqlq_param_text(cap->quoted_table);
    int64_t tracked = 0;
    sqlq_result r = sqlq_db_query_int(cap->db, sqlq_ct_track_columns_sql(), &p, 1, &tracked, err);
    if (r != SQLQ_OK || tracked < 0) /* -1: change tracking is off; check_source says so */
        return r;
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&cap->names.table, NULL, arg, sizeof arg);
    if (tracked != 1)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "key changed: change tracking on table %s does not track columns "
                              "(TRACK_COLUMNS_UPDATED is off): ALTER TABLE %s DISABLE "
                              "CHANGE_TRACKING, then `sqlq setup --table %s --track-columns` "
                              "(changes not yet delivered are lost: drain them first)",
                              cap->names.table_key, cap->quoted_table, arg);
    cap->spec.changed = true;
    return SQLQ_OK;
}

static bool truthy(const json_t *v)
{
    int64_t n = 0;
    return json_is_true(v) || (sqlq_json_int64(v, &n) && n != 0);
}

/* The columns in SYS_CHANGE_COLUMNS, or every column but the key when it is NULL. */
static json_t *changed_names(const sqlq_capture *cap, const json_t *row)
{
    bool all = truthy(json_object_get(row, SQLQ_CAPTURE_CT_ALL));
    json_t *names = json_array();
    for (size_t i = 0; names && i < cap->table->ncolumns; i++) {
        char alias[32];
        snprintf(alias, sizeof(alias), SQLQ_CAPTURE_CT_COLUMN "%zu", i);
        bool in = all ? !cap->table->columns[i].in_key : truthy(json_object_get(row, alias));
        if (in && json_array_append_new(names, json_string(cap->table->columns[i].name)) != 0) {
            json_decref(names);
            names = NULL;
        }
    }
    return names;
}

static sqlq_result image_read(const sqlq_capture *cap, const json_t *row, sqlq_change *c,
                              sqlq_error *err)
{
    if (cap->spec.changed && c->op == SQLQ_OP_UPDATE && !(c->changed = changed_names(cap, row)))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    return SQLQ_OK;
}

/* ---- setup ------------------------------------------------------------------------------- */

#define NO_BEFORE_IMAGE                                                                            \
    "SQL Server change tracking keeps no old values; before images need a change log "           \
    "(PostgreSQL, SQLite, MariaDB/MySQL)"

/* --track-columns: the table tracked WITH (TRACK_COLUMNS_UPDATED = ON) when setup turns its
 * change tracking on; a table tracked without it stays so, and is an error. */
static sqlq_result track_columns(sqlq_db *db, const sqlq_table *t, sqlq_error *err)
{
    char *sql = NULL, *quoted = NULL;
    sqlq_result r = sqlq_ct_track_columns_enable_sql(&t->name, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, NULL, 0, NULL, err);
    free(sql);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_table(&q, &t->name);
    if (r == SQLQ_OK)
        r = sqlq_sql_text_take(&q, &quoted, err);
    else
        sqlq_sql_text_free(&q);
    sqlq_param p = sqlq_param_text(quoted);
    int64_t tracked = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, sqlq_ct_track_columns_sql(), &p, 1, &tracked, err);
    if (r == SQLQ_OK && tracked != 1)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "--track-columns: change tracking is on for %s without "
                           "TRACK_COLUMNS_UPDATED; turning it on needs ALTER TABLE %s DISABLE "
                           "CHANGE_TRACKING first (changes not yet delivered are lost: drain "
                           "them), then this setup again",
                           t->name.name, quoted);
    free(quoted);
    return r;
}

/* Change tracking on the database (when off) and the table (when off); sqlq's state tables. */
static sqlq_result install(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    sqlq_result r = sqlq_capture_setup_lookup(db, s, s->cfg->key_columns, &t, &n, err);
    if (r != SQLQ_OK)
        return r;
    char *on_db = NULL, *on_table = NULL;
    if (s->options.before_image) {
        s->usage = true;
        r = sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false, "key before_image: " NO_BEFORE_IMAGE);
    }
    if (r == SQLQ_OK)
        r = sqlq_ct_enable_sql(&t->name, s->retention_days, &on_db, &on_table, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, on_db, NULL, 0, NULL, err);
    if (r == SQLQ_OK && s->options.track_columns)
        r = track_columns(db, t, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, on_table, NULL, 0, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_ensure(db, err);
    if (r == SQLQ_OK &&
        !sqlq_source_setup_say(s, "%s: change tracking on (database and table%s); state tables "
                                  "in schema sqlq",
                               n.table_key,
                               s->options.track_columns ? ", tracking columns updated" : ""))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    free(on_db);
    free(on_table);
    sqlq_table_free(t);
    return r;
}

/* Every bridge's state; change tracking itself stays on. */
static sqlq_result drop(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    sqlq_result r = sqlq_capture_drop_leases(db, s, &t, &n, err);
    sqlq_table_free(t);
    if (r != SQLQ_OK || s->cfg->bridge_name)
        return r;
    r = sqlq_catalog_drop_if_unused(db, NULL, err);
    if (!sqlq_source_setup_say(s, "%s: change tracking left on (ALTER TABLE … DISABLE "
                                  "CHANGE_TRACKING turns it off)",
                               n.table_key) &&
        r == SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    return r;
}

/* One below the oldest version change tracking still keeps (what is cleaned up is below it,
 * and change tracking's versions are commit versions), and the version of the row's last
 * tracked change, else that floor; NULL when change tracking is off on the table. */
static sqlq_result backfill_version(sqlq_db *db, const sqlq_catalog_names *names,
                                    const sqlq_table *t, char **out_floor, char **out_version,
                                    bool *out_param, sqlq_error *err)
{
    (void)names;
    *out_floor = *out_version = NULL;
    *out_param = false;
    sqlq_buf name;
    sqlq_buf_init(&name, 0);
    sqlq_result r = sqlq_dialect_quote_table(sqlq_db_dialect(db), &t->name, &name);
    sqlq_param p = sqlq_param_text(sqlq_buf_str(&name));
    int64_t n = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, "SELECT count(*) FROM sys.change_tracking_tables WHERE "
                                  "object_id = OBJECT_ID(?)",
                              &p, 1, &n, err);
    sqlq_sql_text f, q;
    sqlq_sql_text_init(&f, sqlq_db_dialect(db));
    sqlq_sql_text_add(&f, "(CHANGE_TRACKING_MIN_VALID_VERSION(OBJECT_ID(");
    sqlq_sql_text_literal(&f, sqlq_buf_str(&name));
    sqlq_sql_text_add(&f, ")) - 1)");
    sqlq_buf_free(&name);
    if (r != SQLQ_OK || n == 0) {
        sqlq_sql_text_free(&f);
        return r;
    }
    r = sqlq_sql_text_take(&f, out_floor, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "COALESCE((SELECT ct.SYS_CHANGE_VERSION FROM CHANGETABLE(VERSION ");
    sqlq_sql_text_table(&q, &t->name);
    sqlq_sql_text_add(&q, ", (");
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(&q, i ? ", " : "");
        sqlq_sql_text_ident(&q, t->columns[t->key[i]].name);
    }
    sqlq_sql_text_add(&q, "), (");
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(&q, i ? ", " : "");
        sqlq_sql_text_table(&q, &t->name);
        sqlq_sql_text_add(&q, ".");
        sqlq_sql_text_ident(&q, t->columns[t->key[i]].name);
    }
    sqlq_sql_text_add(&q, ")) AS ct), %s)", *out_floor);
    r = sqlq_sql_text_take(&q, out_version, err);
    if (r != SQLQ_OK) {
        free(*out_floor);
        *out_floor = NULL;
    }
    return r;
}

/* ---- the source -------------------------------------------------------------------------- */

static const sqlq_capture_leased leased = {
    .sql = &sqlq_mssql_tracking_sql,
    .lock_by_hash = true,
    .check_source = check_source,
    .image_open = image_open,
    .image_read = image_read,
    .objects_gone = "change tracking is off on it",
    .poll_lock = poll_lock,
};

const sqlq_change_source_ops sqlq_mssql_tracking_source = {
    .name = "change_tracking",
    .title = "change tracking",
    .kind = SQLQ_SOURCE_CHANGE_TRACKING,
    .leased = &leased,
    .install = install,
    .drop = drop,
    .no_before_image = NO_BEFORE_IMAGE,
    .backfill_version = backfill_version,
};
