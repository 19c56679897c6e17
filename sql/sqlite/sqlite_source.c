/* sqlite_source: SQLite's counter log as a change source (change_source.h): triggers write the
 * log (sqlite_change_log.c), capture.c's shared lease machinery reads it with the SQL of
 * sqlite_capture_sql.c, and PRAGMA data_version, probed on the route's own connection, is the
 * change signal. */
#include "sqlite_internal.h"

#include "capture_internal.h"
#include "change_log.h"
#include "backfill_version.h"
#include "change_log_internal.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- the triggers' opt-in columns -------------------------------------------------------- */

static void differs(sqlq_sql_text *q, const sqlq_column *c)
{
    sqlq_sql_text_col(q, "OLD.", c->name);
    sqlq_sql_text_add(q, " IS NOT ");
    sqlq_sql_text_col(q, "NEW.", c->name);
}

static void merge(sqlq_sql_text *q, const sqlq_table *t, const char *log_name)
{
    (void)t;
    (void)log_name;
    sqlq_sql_text_add(q, ", " SQLQ_COL_CHANGED " = CASE WHEN " SQLQ_COL_CHANGED " IS NULL THEN "
                         "NULL ELSE json_patch(" SQLQ_COL_CHANGED ", excluded." SQLQ_COL_CHANGED
                         ") END");
}

static const sqlq_change_log_options_sql options = {
    .changed_decl = "text NULL",
    .retype = NULL, /* affinities: a copy of any value fits any column */
    .differs = differs,
    .merge_fn = "json_patch(",
    .object_fn = "json_object(",
    .empty = "'{}'",
    .merge = merge,
    .stale_triggers = "SQLite refuses to DROP a column the triggers name",
};

/* ---- the change log ---------------------------------------------------------------------- */

static sqlq_result installed(const sqlq_log_ctx *c, bool *out, sqlq_error *err)
{
    char names[4][96];
    sqlq_param p[4];
    for (size_t i = 0; i < 4; i++) {
        sqlq_change_log_sqlite_trigger_name(c, i, names[i], sizeof(names[i]));
        p[i] = sqlq_param_text(names[i]);
    }
    int64_t n = 0;
    sqlq_result r = sqlq_db_query_int(
        c->db, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?, ?, ?)",
        p, 4, &n, err);
    *out = r == SQLQ_OK && n == 4;
    return r;
}

/* The log's newest version, or the floor its triggers count from (one writer at a time: every
 * change visible to the page's statement is at or below it, every later one above). */
static void backfill_floor_sql(sqlq_sql_text *q, const sqlq_catalog_names *n, bool *param)
{
    *param = false;
    char row[SQLQ_TABLE_KEY_MAX + 8];
    snprintf(row, sizeof(row), SQLQ_BACKFILL_FLOOR_ROW "%s", n->table_key);
    sqlq_sql_text_add(q, "max(coalesce((SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_catalog_object(q, n->log_table);
    sqlq_sql_text_add(q, "), 0), coalesce((SELECT value FROM ");
    sqlq_catalog_object(q, "counter");
    sqlq_sql_text_add(q, " WHERE name = ");
    sqlq_sql_text_literal(q, row);
    sqlq_sql_text_add(q, "), 0))");
}

static const sqlq_change_log_ops change_log = {
    .install = sqlq_change_log_sqlite_install,
    .drop = sqlq_change_log_sqlite_drop,
    .installed = installed,
    .born_since_null = true,
    .legacy_index = true,
    .options = &options,
    .backfill_floor_sql = backfill_floor_sql,
};

static void describe(const sqlq_dialect *d, const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "table %s%s, triggers %s_ai/_au/_ak/_ad", d->object_prefix, n->log_table,
             n->trigger);
}

/* ---- the signal: PRAGMA data_version ------------------------------------------------------ */

typedef struct probe {
    bool have_version;
    int64_t version;
} probe;

static sqlq_result probe_open(sqlq_capture *cap, const char *db_connection, sqlq_db *db,
                              void **out, sqlq_error *err)
{
    (void)cap;
    (void)db_connection;
    (void)db;
    *out = calloc(1, sizeof(probe));
    return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static void probe_close(void *sig)
{
    free(sig);
}

/* Whether another connection committed since the last probe. The first probe only takes the
 * baseline; a failed one is no hint (the next poll meets the failure). */
static sqlq_signal_event probe_check(void *sig, sqlq_db *db, int64_t covered)
{
    (void)covered;
    probe *p = sig;
    sqlq_error e;
    sqlq_error_clear(&e);
    int64_t v = 0;
    if (sqlq_db_query_int(db, "PRAGMA data_version", NULL, 0, &v, &e) != SQLQ_OK)
        return SQLQ_SIGNAL_NONE;
    bool moved = p->have_version && v != p->version;
    p->version = v;
    p->have_version = true;
    return moved ? SQLQ_SIGNAL_CHANGED : SQLQ_SIGNAL_NONE;
}

static sqlq_signal_event probe_wait(void *sig, sqlq_db *db, const sqlq_clock *clock, uint64_t ms,
                                    int64_t covered)
{
    return sqlq_clock_sleep_ms(clock, ms) ? probe_check(sig, db, covered) : SQLQ_SIGNAL_NONE;
}

static const sqlq_change_signal_ops data_version = {
    .name = "data_version",
    .slice_ms = 10,
    .coalesce_ms = 5,
    .open = probe_open,
    .close = probe_close,
    .wait = probe_wait,
    .check = probe_check,
};

/* ---- the source -------------------------------------------------------------------------- */

static const sqlq_capture_leased leased = {
    .sql = &sqlq_sqlite_log_sql,
    .change_log = &change_log,
    .check_source = sqlq_capture_check_log,
    .objects_gone = SQLQ_CHANGE_LOG_OBJECTS_GONE,
};

const sqlq_change_source_ops sqlq_sqlite_log_source = {
    SQLQ_CHANGE_LOG_SOURCE,
    .leased = &leased,
    .describe = describe,
    .signal = &data_version,
};
