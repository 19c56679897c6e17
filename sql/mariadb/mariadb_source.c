/* mariadb_source: the MariaDB/MySQL stamped log as a change source (change_source.h): triggers
 * write unversioned rows (mariadb_change_log.c), each poll first stamps the committed ones in
 * a transaction of its own, and capture.c's shared lease machinery reads them with the SQL of
 * mariadb_capture_sql.c. No change signal: the route polls at its interval. */
#include "mariadb_internal.h"

#include "capture_internal.h"
#include "change_log.h"
#include "change_log_internal.h"
#include "mariadb_change_log.h"

#include <stdio.h>

/* ---- the triggers' opt-in columns -------------------------------------------------------- */

static void differs(sqlq_sql_text *q, const sqlq_column *c)
{
    sqlq_sql_text_add(q, "NOT (");
    sqlq_sql_text_col(q, "OLD.", c->name);
    sqlq_sql_text_add(q, " <=> ");
    sqlq_sql_text_col(q, "NEW.", c->name);
    sqlq_sql_text_add(q, ")");
}

/* The JSON path of a column's entry in the map: $."name". */
static void json_path_literal(sqlq_sql_text *q, const char *name)
{
    char path[300];
    size_t n = 0;
    path[n++] = '$';
    path[n++] = '.';
    path[n++] = '"';
    for (const char *p = name; *p && n + 4 < sizeof(path); p++) {
        if (*p == '"' || *p == '\\')
            path[n++] = '\\';
        path[n++] = *p;
    }
    path[n++] = '"';
    path[n] = '\0';
    sqlq_sql_text_literal(q, path);
}

/* The map with the entries of the last change (0) given its version, once that change is
 * stamped (the log row's version is not 0): a new unstamped change writes 0 again. */
static void stamped_map(sqlq_sql_text *q, const sqlq_table *t)
{
    sqlq_sql_text_add(q, "IF(" SQLQ_COL_VERSION " = 0, " SQLQ_COL_CHANGED
                         ", JSON_REPLACE(" SQLQ_COL_CHANGED);
    for (size_t i = 0; i < t->ncolumns; i++) {
        sqlq_sql_text_add(q, ", ");
        json_path_literal(q, t->columns[i].name);
        sqlq_sql_text_add(q, ", IF(JSON_EXTRACT(" SQLQ_COL_CHANGED ", ");
        json_path_literal(q, t->columns[i].name);
        sqlq_sql_text_add(q, ") = 0, sqlq_version, CAST(JSON_EXTRACT(" SQLQ_COL_CHANGED ", ");
        json_path_literal(q, t->columns[i].name);
        sqlq_sql_text_add(q, ") AS SIGNED))");
    }
    sqlq_sql_text_add(q, "))");
}

static void merge(sqlq_sql_text *q, const sqlq_table *t, const char *log_name)
{
    (void)log_name;
    sqlq_sql_text_add(q, SQLQ_COL_CHANGED " = IF(" SQLQ_COL_CHANGED " IS NULL, NULL, "
                                          "JSON_MERGE_PATCH(");
    stamped_map(q, t);
    sqlq_sql_text_add(q, ", VALUES(" SQLQ_COL_CHANGED "))), ");
}

/* MODIFY c t NULL. */
static void retype(sqlq_sql_text *q, const char *name, const char *type)
{
    sqlq_sql_text_add(q, " MODIFY ");
    sqlq_sql_text_ident(q, name);
    sqlq_sql_text_add(q, " %s NULL", type);
}

static const sqlq_change_log_options_sql options = {
    .changed_decl = "longtext NULL",
    .retype = retype,
    .differs = differs,
    .merge_fn = "JSON_MERGE_PATCH(",
    .object_fn = "json_object(",
    .empty = "'{}'",
    .merge = merge,
    .stale_triggers = SQLQ_CHANGE_LOG_TRIGGER_FAILS,
    .on_duplicate_key = true,
};

/* ---- the change log ---------------------------------------------------------------------- */

static sqlq_result install(const sqlq_log_ctx *c, sqlq_error *err)
{
    return sqlq_change_log_stamped_install(c->db, c->t, &c->names, &c->opts, err);
}

/* The triggers live in the table's database, named by its own hash: its own only. */
static sqlq_result drop(const sqlq_log_ctx *c, bool catalog, bool own_only, sqlq_error *err)
{
    (void)catalog;
    (void)own_only;
    return sqlq_change_log_stamped_drop(c->db, &c->names, err);
}

static sqlq_result installed(const sqlq_log_ctx *c, bool *out, sqlq_error *err)
{
    return sqlq_change_log_stamped_installed(c->db, &c->names, out, err);
}

/* A version of its own from the stamp counter, taken in the page's transaction
 * (backfill_floor), which holds the counter's lock to its end: above every stamped version,
 * below every later stamp (also for a change committed but not stamped yet). */
static void backfill_floor_sql(sqlq_sql_text *q, const sqlq_catalog_names *n, bool *param)
{
    (void)n;
    *param = true;
    sqlq_sql_text_add(q, "CAST(? AS SIGNED)");
}

static sqlq_result backfill_floor(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out,
                                  bool *out_txn, sqlq_error *err)
{
    (void)n;
    sqlq_result r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    *out_txn = true;
    r = sqlq_db_exec(db, "UPDATE sqlq.counter SET value = LAST_INSERT_ID(value + 1) WHERE "
                         "name = 'version'", NULL, 0, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, "SELECT LAST_INSERT_ID()", NULL, 0, out, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        *out_txn = false;
    }
    return r;
}

static const sqlq_change_log_ops change_log = {
    .install = install,
    .drop = drop,
    .installed = installed,
    .legacy_index = false, /* no log of an earlier sqlq */
    .options = &options,
    .backfill_floor_sql = backfill_floor_sql,
};

static void describe(const sqlq_dialect *d, const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "table %s%s, triggers sqlq_%s_ai/_au/_ad", d->object_prefix, n->log_table,
             n->log_table);
}

/* ---- the source -------------------------------------------------------------------------- */

/* Committed changes not stamped yet get their version first, in a transaction of their own
 * (mariadb_change_log.h); up to 16 batches' worth per poll. */
static sqlq_result stamp(sqlq_capture *cap, sqlq_error *err)
{
    long long n = 0;
    int64_t version = 0;
    return sqlq_change_log_stamp(cap->db, cap->table, &cap->names, cap->spec.max_batch_size * 16,
                                 &n, &version, err);
}

/* start_from now: every change committed so far is stamped, so that the counter it starts
 * from is above it (an unstamped one would get a version above the start and be delivered). */
static sqlq_result stamp_all(sqlq_capture *cap, sqlq_error *err)
{
    int limit = cap->spec.max_batch_size * 16;
    long long n = limit;
    int64_t version = 0;
    sqlq_result r = SQLQ_OK;
    while (r == SQLQ_OK && n >= limit)
        r = sqlq_change_log_stamp(cap->db, cap->table, &cap->names, limit, &n, &version, err);
    return r;
}

static const sqlq_capture_leased leased = {
    .sql = &sqlq_mariadb_log_sql,
    .change_log = &change_log,
    .check_source = sqlq_capture_check_log,
    .objects_gone = SQLQ_CHANGE_LOG_OBJECTS_GONE,
    .before_poll = stamp,
    .before_start_now = stamp_all,
    .confirm_leases = true,
};

const sqlq_change_source_ops sqlq_mariadb_log_source = {
    SQLQ_CHANGE_LOG_SOURCE,
    .leased = &leased,
    .describe = describe,
    .backfill_floor = backfill_floor,
};
