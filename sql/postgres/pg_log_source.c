/* pg_log_source: PostgreSQL's trigger log as a change source (change_source.h): plpgsql
 * triggers write the log with versions from a sequence (pg_change_log.c); capture.c's shared
 * lease machinery reads it with the SQL of pg_capture_sql.c up to the read horizon of the log's
 * open writers (pg_writers.c, pg_horizon.h); the signal is the trigger's NOTIFY, heard on a
 * libpq LISTEN connection while the route waits (pg_listen.h, pg_arm.h). */
#include "pg_internal.h"

#include "capture_internal.h"
#include "change_log.h"
#include "change_log_internal.h"
#include "pg_listen.h"
#include "setup_hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the triggers' opt-in columns -------------------------------------------------------- */

/* Types without an equality operator: compared as text. */
static bool compare_as_text(const char *type)
{
    static const char *const no_eq[] = {"json", "xml",  "point",   "line",  "lseg",
                                        "box",  "path", "polygon", "circle"};
    for (size_t i = 0; i < sizeof(no_eq) / sizeof(no_eq[0]); i++)
        if (type && strncmp(type, no_eq[i], strlen(no_eq[i])) == 0 &&
            (type[strlen(no_eq[i])] == '\0' || type[strlen(no_eq[i])] == '['))
            return true;
    return false;
}

static void differs(sqlq_sql_text *q, const sqlq_column *c)
{
    if (compare_as_text(c->type)) {
        sqlq_sql_text_add(q, "CAST(");
        sqlq_sql_text_col(q, "OLD.", c->name);
        sqlq_sql_text_add(q, " AS text) IS DISTINCT FROM CAST(");
        sqlq_sql_text_col(q, "NEW.", c->name);
        sqlq_sql_text_add(q, " AS text)");
        return;
    }
    sqlq_sql_text_col(q, "OLD.", c->name);
    sqlq_sql_text_add(q, " IS DISTINCT FROM ");
    sqlq_sql_text_col(q, "NEW.", c->name);
}

/* The existing row's map, named by its table, merged with this update's. */
static void merge(sqlq_sql_text *q, const sqlq_table *t, const char *log_name)
{
    (void)t;
    sqlq_sql_text_add(q, ", " SQLQ_COL_CHANGED " = CASE WHEN ");
    sqlq_sql_text_col(q, "", log_name);
    sqlq_sql_text_add(q, "." SQLQ_COL_CHANGED " IS NULL THEN NULL ELSE ");
    sqlq_sql_text_col(q, "", log_name);
    sqlq_sql_text_add(q, "." SQLQ_COL_CHANGED " || excluded." SQLQ_COL_CHANGED " END");
}

/* ALTER COLUMN c TYPE t USING CAST(c AS t). */
static void retype(sqlq_sql_text *q, const char *name, const char *type)
{
    sqlq_sql_text_add(q, " ALTER COLUMN ");
    sqlq_sql_text_ident(q, name);
    sqlq_sql_text_add(q, " TYPE %s USING CAST(", type);
    sqlq_sql_text_ident(q, name);
    sqlq_sql_text_add(q, " AS %s)", type);
}

static const sqlq_change_log_options_sql options = {
    .changed_decl = "jsonb NULL",
    .retype = retype,
    .differs = differs,
    .merge_fn = NULL, /* a chain of || */
    .object_fn = "jsonb_build_object(",
    .empty = "CAST('{}' AS jsonb)",
    .merge = merge,
    .stale_triggers = SQLQ_CHANGE_LOG_TRIGGER_FAILS,
};

/* ---- the change log ---------------------------------------------------------------------- */

/* <trigger>, and inserts captured: by <trigger>_ins, or by an earlier sqlq's <trigger> (tgtype
 * bit 4: INSERT). */
static sqlq_result installed(const sqlq_log_ctx *c, bool *out, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_table(&q, &c->names.table);
    char *quoted = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &quoted, err);
    char ins[72];
    snprintf(ins, sizeof(ins), "%s_ins", c->names.trigger);
    sqlq_param p[4] = {sqlq_param_text(c->names.trigger), sqlq_param_text(quoted),
                       sqlq_param_text(c->names.trigger), sqlq_param_text(ins)};
    int64_t n = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(
            c->db,
            "SELECT CASE WHEN count(*) FILTER (WHERE tgname = CAST(? AS text)) = 1 "
            "AND bool_or((CAST(tgtype AS integer) & 4) <> 0) THEN 1 ELSE 0 END "
            "FROM pg_trigger WHERE tgrelid = to_regclass(CAST(? AS text)) AND "
            "tgname IN (CAST(? AS text), CAST(? AS text))",
            p, 4, &n, err);
    free(quoted);
    *out = r == SQLQ_OK && n == 1;
    return r;
}

/* This table's triggers; with own_only only those, else the log's functions too. */
static sqlq_result drop(const sqlq_log_ctx *c, bool catalog, bool own_only, sqlq_error *err)
{
    (void)catalog;
    return own_only ? sqlq_pg_change_log_trigger(c, false, err) : sqlq_pg_change_log_drop(c, err);
}

static const sqlq_change_log_ops change_log = {
    .lock_table = sqlq_pg_change_log_lock_table,
    .install = sqlq_pg_change_log_install,
    .drop = drop,
    .installed = installed,
    .legacy_index = true,
    .options = &options,
    .backfill_floor_sql = sqlq_pg_backfill_floor_sql,
};

static void describe(const sqlq_dialect *d, const sqlq_catalog_names *n, char *out, size_t size)
{
    char row_fn[72];
    sqlq_pg_change_log_row_function(n, row_fn, sizeof(row_fn));
    snprintf(out, size, "table %s%s, functions %s%s, %s%s, triggers %s, %s_ins", d->object_prefix,
             n->log_table, d->object_prefix, n->log_function, d->object_prefix, row_fn,
             n->trigger, n->trigger);
}

/* ---- the horizon around the shared machinery ---------------------------------------------- */

static sqlq_result open_log(sqlq_capture *cap, sqlq_error *err)
{
    sqlq_pg_log_state *st = calloc(1, sizeof(*st));
    if (!st)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    cap->src = st;
    sqlq_result r = sqlq_pg_capture_sql_bounds(&cap->spec, true, &st->bounds, err);
    if (r == SQLQ_OK)
        r = sqlq_pg_capture_sql_bounds(&cap->spec, false, &st->bounds_sync, err);
    if (r == SQLQ_OK)
        r = sqlq_pg_capture_sql_sequence(&cap->spec, true, &st->seq_lock, err);
    if (r == SQLQ_OK)
        r = sqlq_pg_capture_sql_sequence(&cap->spec, false, &st->seq, err);
    return r;
}

static void close_log(sqlq_capture *cap)
{
    sqlq_pg_log_state *st = cap->src;
    if (!st)
        return;
    sqlq_capture_stmt_free(&st->seq_lock);
    sqlq_capture_stmt_free(&st->seq);
    sqlq_capture_stmt_free(&st->bounds);
    sqlq_capture_stmt_free(&st->bounds_sync);
    sqlq_horizon_free(&st->horizon);
    free(st);
    cap->src = NULL;
}

/* The log, and its version sequence (a log of an earlier sqlq versioned by transaction ids). */
static sqlq_result check_source(sqlq_capture *cap, const char *user_table, sqlq_error *err)
{
    sqlq_result r = sqlq_capture_check_log(cap, user_table, err);
    char seq[72];
    sqlq_pg_change_log_sequence(&cap->names, seq, sizeof(seq));
    bool ok = false;
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg_text(user_table, "public", arg, sizeof arg);
    if (r == SQLQ_OK && (r = sqlq_catalog_object_exists(cap->db, seq, &ok, err)) == SQLQ_OK && !ok)
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                           "the change log of table %s was installed by an earlier sqlq "
                           "(transaction-id versions): run `sqlq setup --table %s` to upgrade it",
                           cap->names.table_key, arg);
    return r;
}

/* The lock, then the horizon observation under it (pg_horizon.h): the poll statement's
 * snapshot comes after both. */
static sqlq_result poll_lock(sqlq_capture *cap, sqlq_capture_values *v, sqlq_error *err)
{
    return sqlq_pg_writers_observe(cap, true, v, err);
}

/* A short poll saw every version up to its horizon that will ever commit (the horizon's
 * guarantee) and took every one of them whose lease was free. */
static void polled(sqlq_capture *cap, const sqlq_capture_values *v, bool covered_all)
{
    sqlq_pg_writers_report(cap, (uint64_t)v->now);
    if (covered_all)
        cap->covered = v->horizon;
}

/* Only versions final at the last observation (none before the first). */
static int64_t horizon(const sqlq_capture *cap)
{
    const sqlq_pg_log_state *st = cap->src;
    return st->horizon.observed ? st->horizon.value : INT64_MIN;
}

/* An observation of its own (a status process never polls). */
static sqlq_result status_begin(sqlq_capture *cap, sqlq_capture_values *v, sqlq_error *err)
{
    return sqlq_pg_writers_observe(cap, false, v, err);
}

static sqlq_result status_end(sqlq_capture *cap, sqlq_capture_values *v, sqlq_capture_status *out,
                              sqlq_error *err)
{
    out->horizon = v->horizon;
    return sqlq_pg_writers_describe(cap, &out->writers, err);
}

/* ---- the signal: LISTEN for the trigger's NOTIFY ------------------------------------------ */

static sqlq_result listen_open(sqlq_capture *cap, const char *db_connection, sqlq_db *db,
                               void **out, sqlq_error *err)
{
    sqlq_catalog_names names;
    char channel[72];
    char *arm = NULL, *peek = NULL;
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_result rc = sqlq_catalog_names_find(db, &sqlq_capture_table(cap)->name, NULL, &names, err);
    if (rc == SQLQ_OK)
        rc = sqlq_pg_change_log_arm_sql(d, &names, true, &arm, err);
    if (rc == SQLQ_OK)
        rc = sqlq_pg_change_log_arm_sql(d, &names, false, &peek, err);
    sqlq_pg_listen *listen = NULL;
    if (rc == SQLQ_OK) {
        sqlq_pg_change_log_channel(&names, channel, sizeof(channel));
        sqlq_pg_listen_sql sql = {.arm = arm, .peek = peek};
        rc = sqlq_pg_listen_create(db_connection, channel, &sql, &listen, err);
    }
    free(arm);
    free(peek);
    *out = listen;
    return rc;
}

static void listen_close(void *sig)
{
    sqlq_pg_listen_destroy(sig);
}

static sqlq_signal_event event_of(sqlq_pg_listen_event e)
{
    return e == SQLQ_PG_LISTEN_NOTIFIED      ? SQLQ_SIGNAL_CHANGED
           : e == SQLQ_PG_LISTEN_UNSIGNALLED ? SQLQ_SIGNAL_CHANGED_BEFORE
                                             : SQLQ_SIGNAL_NONE;
}

static sqlq_signal_event listen_wait(void *sig, sqlq_db *db, const sqlq_clock *clock, uint64_t ms,
                                     int64_t covered)
{
    (void)db;
    (void)clock;
    return event_of(sqlq_pg_listen_wait(sig, ms, covered));
}

static sqlq_signal_event listen_check(void *sig, sqlq_db *db, int64_t covered)
{
    (void)db;
    return event_of(sqlq_pg_listen_check(sig, covered));
}

static void listen_peek(void *sig, int64_t covered)
{
    sqlq_pg_listen_peek(sig, covered);
}

static void listen_consume(void *sig, int64_t covered)
{
    (void)sqlq_pg_listen_check(sig, covered);
}

static const sqlq_change_signal_ops notify = {
    .name = "notify",
    .name_before = "arm",
    .slice_ms = 10,
    .coalesce_ms = 5,
    .open = listen_open,
    .close = listen_close,
    .wait = listen_wait,
    .check = listen_check,
    .peek = listen_peek,
    .consume = listen_consume,
};

/* ---- the source -------------------------------------------------------------------------- */

static const sqlq_capture_leased leased = {
    .sql = &sqlq_pg_log_sql,
    .change_log = &change_log,
    .check_source = check_source,
    .open = open_log,
    .close = close_log,
    .objects_gone = SQLQ_CHANGE_LOG_OBJECTS_GONE,
    .poll_lock = poll_lock,
    .polled = polled,
    .horizon = horizon,
    .status_begin = status_begin,
    .status_end = status_end,
};

const sqlq_change_source_ops sqlq_pg_log_source = {
    SQLQ_CHANGE_LOG_SOURCE,
    .leased = &leased,
    .describe = describe,
    .backfill_floor = sqlq_pg_backfill_floor,
    .signal = &notify,
};
