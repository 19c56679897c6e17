/* capture_setup: opening a capture (checks, leases table, state row, statements), closing it,
 * and forgetting a table's capture state (sqlq setup --drop). */
#include "capture.h"

#include "capture_internal.h"
#include "capture_presence.h"
#include "capture_stop.h"
#include "change_log.h"
#include "clock.h"
#include "instance.h"
#include "log.h"
#include "setup_hint.h"
#include "sql_text.h"
#include "table_key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- open, close ------------------------------------------------------------------------- */

static sqlq_result check_config(const sqlq_capture_config *cfg, sqlq_error *err)
{
    if (!cfg->bridge_name || !cfg->bridge_name[0] ||
        strlen(cfg->bridge_name) > SQLQ_BRIDGE_NAME_MAX)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "bridge name must be 1..%d bytes",
                              SQLQ_BRIDGE_NAME_MAX);
    if (!cfg->table || !cfg->table[0])
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "no table given");
    if (cfg->max_batch_size < 1 || cfg->max_batch_size > 100000)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "max_batch_size %d out of range (allowed 1..100000)",
                              cfg->max_batch_size);
    if (cfg->lease_s < 1 || cfg->lease_s > 7 * 86400)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "lease_s %d out of range (allowed 1..604800)",
                              cfg->lease_s);
    if (cfg->max_attempts < 1 || cfg->max_attempts > 1000)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "max_attempts %d out of range (allowed 1..1000)", cfg->max_attempts);
    return SQLQ_OK;
}

/* The dialect's source of the configured kind (its first for SQLQ_SOURCE_AUTO); else an error
 * naming what this database captures with. */
static sqlq_result select_source(sqlq_db *db, const sqlq_capture_config *cfg,
                                 const sqlq_change_source_ops **out, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    const sqlq_change_source_ops *dflt = sqlq_change_source_find(d, SQLQ_SOURCE_AUTO);
    *out = sqlq_change_source_find(d, cfg->source);
    if (!dflt)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "sqlq cannot capture changes of %s tables", d->title);
    if (*out)
        return SQLQ_OK;
    const sqlq_change_source_ops *home = NULL;
    const char *where = sqlq_change_source_home(cfg->source, &home);
    if (where)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false, "%s is a %s feature; use the %s",
                              home->title, where, dflt->title);
    return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false, "%s tables are captured with %s",
                          d->title, dflt->title);
}

/* host:pid:random when the caller gave no instance id. */
static char *default_instance(void)
{
    char id[200];
    sqlq_instance_id_make(id, sizeof(id));
    return strdup(id);
}

static sqlq_result build_statements(sqlq_capture *cap, sqlq_error *err)
{
    const sqlq_capture_sql *s = &cap->spec;
    sqlq_result r = sqlq_capture_sql_lock(s, &cap->lock, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_poll(s, &cap->poll, &cap->lease, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_poll_resume(s, &cap->poll_resume, &cap->lease_resume, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_newest(s, &cap->newest, err);
    /* Lease tokens from the counter table where the source reserves them (no sequence in a
     * statement that also writes: the poll's lease statement takes them as a parameter) */
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_reserve(s, &cap->bump, &cap->base, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_pending(s, &cap->pending, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_advance_scan(s, &cap->scan, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_advance_scan_resume(s, &cap->scan_resume, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_set_sync(s, &cap->set_sync, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_trim_leases(s, &cap->trim_leases, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_trim_log(s, &cap->trim_log, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_release(s, &cap->release, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_renew(s, &cap->renew, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_abandon(s, true, &cap->abandon_count, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_abandon(s, false, &cap->abandon_free, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_read_sync(s, &cap->read_sync, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_owners(s, &cap->owners, err);
    if (r == SQLQ_OK && cap->leased->confirm_leases)
        r = sqlq_capture_sql_held(s, &cap->held, err);
    return r;
}

sqlq_result sqlq_capture_rebuild_polls(sqlq_capture *cap, sqlq_error *err)
{
    sqlq_capture_stmt_free(&cap->poll);
    sqlq_capture_stmt_free(&cap->lease);
    sqlq_capture_stmt_free(&cap->poll_resume);
    sqlq_capture_stmt_free(&cap->lease_resume);
    sqlq_result r = sqlq_capture_sql_poll(&cap->spec, &cap->poll, &cap->lease, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_poll_resume(&cap->spec, &cap->poll_resume, &cap->lease_resume, err);
    return r;
}

sqlq_result sqlq_capture_check_log(sqlq_capture *cap, const char *user_table, sqlq_error *err)
{
    bool ok = false;
    sqlq_result r = sqlq_change_log_installed(cap->db, cap->table, &ok, err);
    if (r == SQLQ_OK && !ok) {
        char arg[SQLQ_SETUP_ARG_MAX];
        sqlq_setup_table_arg_text(user_table, NULL, arg, sizeof arg);
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                           "the change log of table %s is not installed: run "
                           "`sqlq setup --table %s` first",
                           cap->names.table_key, arg);
        sqlq_error_reason(err, SQLQ_STOP_NOT_SET_UP);
    }
    if (r == SQLQ_OK) /* not a log another table writes to as well */
        r = sqlq_catalog_log_check(cap->db, &cap->names, err);
    return r;
}

/* With require_state: the state row and leases table a running route had are still there;
 * else SQLQ_E_NOT_FOUND, reason state_gone (nothing is created from start_from again). */
static sqlq_result check_state(sqlq_capture *cap, sqlq_error *err)
{
    bool have = false;
    int64_t sync = 0;
    sqlq_result r = sqlq_catalog_object_exists(cap->db, cap->names.leases_table, &have, err);
    if (r == SQLQ_OK && have)
        r = sqlq_capture_query_int(cap, &cap->read_sync, NULL, &sync, err);
    if (r == SQLQ_E_NOT_FOUND || (r == SQLQ_OK && !have)) {
        sqlq_error_clear(err);
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                           "the sync state of bridge %s for table %s is gone (sqlq setup --drop "
                           "removed it): the route stops rather than start again from "
                           "start_from, which would skip or repeat changes. Start the bridge "
                           "again to begin anew",
                           cap->bridge, cap->names.table_key);
        sqlq_error_reason(err, SQLQ_STOP_STATE_GONE);
    }
    return r;
}

/* Leases table, registry row and (when missing) the state row at the start version. */
static sqlq_result init_state(sqlq_capture *cap, sqlq_start_from from, sqlq_error *err)
{
    sqlq_capture_stmt ddl = {0}, ix = {0}, start = {0}, init = {0};
    sqlq_result r = sqlq_capture_sql_leases_ddl(&cap->spec, cap->key_types, &ddl, &ix, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_start_version(&cap->spec, from, &start, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_sql_state_init(&cap->spec, &init, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_ensure(cap->db, err);
    bool have = false; /* existing leases table: no DDL (nor the right to create) needed */
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(cap->db, cap->names.leases_table, &have, err);
    if (have) {
        sqlq_capture_stmt_free(&ddl);
        sqlq_capture_stmt_free(&ix);
    }
    if (r == SQLQ_OK && from == SQLQ_START_NOW && cap->leased->before_start_now)
        r = cap->leased->before_start_now(cap, err);
    bool begun = r == SQLQ_OK && (r = sqlq_db_begin(cap->db, err)) == SQLQ_OK;
    char display[128];
    snprintf(display, sizeof(display), "%s%s", cap->spec.dialect->object_prefix,
             cap->names.leases_table);
    sqlq_capture_values v = {.now = sqlq_clock_wall_ms()};
    if (r == SQLQ_OK && !have)
        r = sqlq_catalog_ddl_lock(cap->db, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_run(cap, &ddl, &v, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_run(cap, &ix, &v, NULL, err);
    if (r == SQLQ_OK && !have)
        r = sqlq_catalog_register(cap->db, "leases", cap->bridge, cap->names.table_key, display,
                                  err);
    if (r == SQLQ_OK)
        r = sqlq_capture_query_int(cap, &start, &v, &v.version, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_run(cap, &init, &v, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(cap->db, err);
    if (r != SQLQ_OK && begun)
        sqlq_db_rollback(cap->db);
    sqlq_capture_stmt_free(&ddl);
    sqlq_capture_stmt_free(&ix);
    sqlq_capture_stmt_free(&start);
    sqlq_capture_stmt_free(&init);
    return r;
}

/* The route's --where compiles against the table: a typo is a clear error at start, not a
 * failing poll. */
static sqlq_result check_where(sqlq_capture *cap, const sqlq_capture_config *cfg, sqlq_error *err)
{
    if (!cfg->where || !cfg->where[0])
        return SQLQ_OK;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(cap->db));
    sqlq_sql_text_add(&q, "SELECT 1 FROM %s AS r WHERE 1 = 0 AND (%s)", cap->quoted_table, cfg->where);
    char *sql = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &sql, err);
    int64_t one = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(cap->db, sql, NULL, 0, &one, err);
    free(sql);
    if (r == SQLQ_E_NOT_FOUND) {
        sqlq_error_clear(err);
        return SQLQ_OK;
    }
    if (r != SQLQ_OK && err && !err->transient) {
        char detail[sizeof(err->message)];
        snprintf(detail, sizeof(detail), "%s", err->message);
        sqlq_error_clear(err);
        r = sqlq_error_set(err, SQLQ_E_INVALID, false, "key where: '%s' is not a predicate on table %s: %s",
                           cfg->where, cfg->table, detail);
    }
    return r;
}

/* A leased source: the table and its key, the statements, the source's checks and state, and
 * (unless check_only) the leases table and state row. */
static sqlq_result open_leased(sqlq_capture *cap, const sqlq_capture_config *cfg, bool check_only,
                               sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(cap->db);
    sqlq_result r = sqlq_catalog_lookup_keyed(cap->db, cfg->table, cap->bridge, cfg->key_columns,
                                              &cap->table, &cap->names, err);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    if (r == SQLQ_OK) {
        sqlq_sql_text_table(&q, &cap->table->name);
        r = sqlq_sql_text_take(&q, &cap->quoted_table, err);
    } else {
        sqlq_sql_text_free(&q);
    }
    if (r == SQLQ_OK)
        r = sqlq_catalog_key_types(cap->db, cap->table, &cap->key_types, err);
    cap->spec = (sqlq_capture_sql){.dialect = d,
                                   .log_sql = cap->leased->sql,
                                   .table = cap->table,
                                   .names = &cap->names,
                                   .max_batch_size = cfg->max_batch_size,
                                   .lease_s = cfg->lease_s,
                                   .max_attempts = cfg->max_attempts,
                                   .key_types = cap->key_types,
                                   .where = cfg->where && cfg->where[0] ? cfg->where : NULL};
    if (r == SQLQ_OK)
        r = check_where(cap, cfg, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_image_open(cap, cfg, err);
    if (r == SQLQ_OK)
        r = build_statements(cap, err);
    if (r == SQLQ_OK && cap->leased->open)
        r = cap->leased->open(cap, err);
    if (r == SQLQ_OK)
        r = cap->leased->check_source(cap, cfg->table, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_table_shape_open(cap, err);
    if (r == SQLQ_OK && !check_only && cfg->require_state)
        r = check_state(cap, err);
    if (r == SQLQ_OK && !check_only)
        r = init_state(cap, cfg->start_from, err);
    return r;
}

sqlq_result sqlq_capture_open(sqlq_db *db, const sqlq_capture_config *cfg, sqlq_capture **out,
                              sqlq_error *err)
{
    *out = NULL;
    sqlq_result r = check_config(cfg, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_capture *cap = calloc(1, sizeof(*cap));
    if (!cap)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    cap->db = db;
    cap->covered = INT64_MIN;
    cap->allow_gap = cfg->allow_retention_gap;
    cap->bridge = strdup(cfg->bridge_name);
    cap->instance = cfg->instance_id && cfg->instance_id[0] ? strdup(cfg->instance_id)
                                                            : default_instance();
    if (!cap->bridge || !cap->instance)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    else
        r = select_source(db, cfg, &cap->ops, err);
    if (r == SQLQ_OK && cap->ops->open)
        r = cap->ops->open(db, cfg, &cap->src, err);
    else if (r == SQLQ_OK)
        cap->leased = cap->ops->leased, r = open_leased(cap, cfg, false, err);
    if (r != SQLQ_OK) {
        sqlq_capture_close(cap);
        return r;
    }
    if (cap->leased && !cfg->quiet)
        SQLQ_INFO("capture_opened", "bridge=%s table=%s source=%s leases=%s instance=%s",
                  cap->bridge, cap->names.table_key, cap->ops->name, cap->names.leases_table,
                  cap->instance);
    *out = cap;
    return SQLQ_OK;
}

sqlq_result sqlq_capture_check(sqlq_db *db, const sqlq_capture_config *cfg, sqlq_error *err)
{
    sqlq_result r = check_config(cfg, err);
    const sqlq_change_source_ops *ops = NULL;
    if (r == SQLQ_OK)
        r = select_source(db, cfg, &ops, err);
    if (r != SQLQ_OK)
        return r;
    if (ops->check)
        return ops->check(db, cfg, NULL, err);
    sqlq_capture *cap = calloc(1, sizeof(*cap));
    if (!cap)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    cap->db = db;
    cap->ops = ops;
    cap->leased = ops->leased;
    cap->bridge = strdup(cfg->bridge_name);
    if (!cap->bridge)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    else
        r = open_leased(cap, cfg, true, err);
    sqlq_capture_close(cap);
    return r;
}

void sqlq_capture_close(sqlq_capture *cap)
{
    if (!cap)
        return;
    if (cap->ops && cap->ops->close)
        cap->ops->close(cap->src);
    if (cap->leased && cap->leased->close)
        cap->leased->close(cap);
    sqlq_capture_image_close(cap);
    sqlq_capture_stmt *all[] = {&cap->lock,          &cap->poll,         &cap->lease,
                                &cap->bump,          &cap->base,         &cap->pending,
                                &cap->scan,          &cap->set_sync,     &cap->trim_leases,
                                &cap->trim_log,      &cap->release,      &cap->renew,
                                &cap->abandon_count, &cap->abandon_free, &cap->read_sync,
                                &cap->owners,        &cap->poll_resume,  &cap->lease_resume,
                                &cap->scan_resume,   &cap->newest,       &cap->held};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        sqlq_capture_stmt_free(all[i]);
    sqlq_capture_table_shape_close(cap);
    if (cap->table)
        sqlq_catalog_key_types_free(cap->key_types, cap->table->nkey);
    json_decref(cap->resume.key);
    json_decref(cap->scan_from.key);
    sqlq_table_free(cap->table);
    free(cap->quoted_table);
    free(cap->bridge);
    free(cap->instance);
    free(cap);
}

/* ---- forget ------------------------------------------------------------------------------ */

static sqlq_result forget_bridge(sqlq_db *db, const sqlq_table *t, const char *bridge,
                                 sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_catalog_names n;
    sqlq_result r = sqlq_catalog_names_make(d, &t->name, bridge, &n, err);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "DROP TABLE IF EXISTS ");
    sqlq_catalog_object(&q, n.leases_table);
    char *drop = NULL, *del = NULL;
    if (r == SQLQ_OK)
        r = sqlq_sql_text_take(&q, &drop, err);
    else
        sqlq_sql_text_free(&q);
    if (!d->drop_if_exists && drop) {
        /* SQL Server 2016+ knows DROP TABLE IF EXISTS; older ones do not: test first. */
        char buf[256];
        snprintf(buf, sizeof(buf), "IF OBJECT_ID(N'sqlq.%s', N'U') IS NOT NULL DROP TABLE "
                 "[sqlq].[%s]", n.leases_table, n.leases_table);
        free(drop);
        drop = strdup(buf);
    }
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "DELETE FROM ");
    sqlq_catalog_object(&q, "state");
    sqlq_sql_text_add(&q, " WHERE bridge_name = ? AND table_name = ?");
    if (r == SQLQ_OK)
        r = sqlq_sql_text_take(&q, &del, err);
    else
        sqlq_sql_text_free(&q);
    sqlq_param p[2] = {sqlq_param_text(bridge), sqlq_param_text(n.table_key)};
    if (r == SQLQ_OK)
        r = drop ? sqlq_db_exec(db, drop, NULL, 0, NULL, err) : SQLQ_E_NOMEM;
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, del, p, 2, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_unregister(db, "leases", bridge, n.table_key, err);
    free(drop);
    free(del);
    return r;
}

static sqlq_result delete_states(sqlq_db *db, const char *table_key, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "DELETE FROM ");
    sqlq_catalog_object(&q, "state");
    sqlq_sql_text_add(&q, " WHERE table_name = ?");
    char *sql = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &sql, err);
    sqlq_param p = sqlq_param_text(table_key);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, &p, 1, NULL, err);
    free(sql);
    return r;
}

sqlq_result sqlq_capture_forget(sqlq_db *db, const char *table, const char *bridge_name,
                                size_t *out_bridges, sqlq_error *err)
{
    if (out_bridges)
        *out_bridges = 0;
    bool exists = false;
    sqlq_result r = sqlq_catalog_exists(db, &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    sqlq_table *t = NULL;
    sqlq_catalog_names names;
    r = sqlq_catalog_lookup_keyed(db, table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &names, err);
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_catalog_find(db, names.table_key, "leases", bridge_name, &rows, err);
    if (r == SQLQ_OK)
        r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK) {
        json_decref(rows);
        sqlq_table_free(t);
        return r;
    }
    r = sqlq_catalog_ddl_lock(db, err);
    size_t i, n = 0;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *bridge = json_string_value(json_object_get(row, "bridge_name"));
        if (r != SQLQ_OK || !bridge)
            continue;
        /* names from the canonical table in `names` (t->name may be spelled differently) */
        sqlq_table canon = *t;
        canon.name = names.table;
        r = forget_bridge(db, &canon, bridge, err);
        n++;
    }
    if (r == SQLQ_OK && !bridge_name)
        r = delete_states(db, names.table_key, err); /* rows no registry entry points at */
    if (r == SQLQ_OK)
        r = sqlq_presence_forget(db, names.table_key, bridge_name, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    json_decref(rows);
    sqlq_table_free(t);
    if (r == SQLQ_OK) {
        SQLQ_INFO("capture_forgotten", "table=%s bridges=%zu", names.table_key, n);
        if (out_bridges)
            *out_bridges = n;
    }
    return r;
}

/* ---- setup ------------------------------------------------------------------------------- */

sqlq_result sqlq_capture_setup_lookup(sqlq_db *db, sqlq_source_setup *s, const char *key_columns,
                                      sqlq_table **out, sqlq_catalog_names *n, sqlq_error *err)
{
    sqlq_result r = sqlq_catalog_lookup_keyed(db, s->cfg->table, NULL, key_columns, out, n, err);
    if (r != SQLQ_OK) { /* no usable key: the user must name one (exit 2, like a usage error) */
        s->usage = r == SQLQ_E_INVALID || r == SQLQ_E_UNSUPPORTED;
        return r;
    }
    snprintf(s->name, sizeof(s->name), "%s", n->table_key);
    if ((*out)->key_index &&
        !sqlq_source_setup_say(s, "%s: keyed by unique index %s", n->table_key,
                               (*out)->key_index))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    return SQLQ_OK;
}

sqlq_result sqlq_capture_drop_leases(sqlq_db *db, sqlq_source_setup *s, sqlq_table **out,
                                     sqlq_catalog_names *n, sqlq_error *err)
{
    const char *bridge = s->cfg->bridge_name;
    size_t forgotten = 0;
    sqlq_result r = sqlq_catalog_lookup_keyed(db, s->cfg->table, NULL, SQLQ_CATALOG_ANY_KEY, out,
                                              n, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_forget(db, s->cfg->table, bridge, &forgotten, err);
    if (r != SQLQ_OK)
        return r;
    snprintf(s->name, sizeof(s->name), "%s", n->table_key);
    bool ok = bridge ? sqlq_source_setup_say(s, "%s: sync state and leases of bridge %s %s",
                                             n->table_key, bridge,
                                             forgotten ? "removed"
                                                       : "not found (nothing to remove)")
                     : sqlq_source_setup_say(s, "%s: sync state and leases of %zu bridge%s removed",
                                             n->table_key, forgotten, forgotten == 1 ? "" : "s");
    return ok ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static sqlq_result setup_source(sqlq_db *db, sqlq_source_setup *s,
                                const sqlq_change_source_ops **out, sqlq_error *err)
{
    s->usage = false;
    s->name[0] = '\0';
    if (!s->lines && !(s->lines = json_array()))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    return select_source(db, s->cfg, out, err);
}

sqlq_result sqlq_capture_install(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    const sqlq_change_source_ops *ops = NULL;
    sqlq_result r = setup_source(db, s, &ops, err);
    if (r == SQLQ_OK && ops->install)
        r = ops->install(db, s, err);
    return r;
}

sqlq_result sqlq_capture_uninstall(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    const sqlq_change_source_ops *ops = NULL;
    sqlq_result r = setup_source(db, s, &ops, err);
    if (r == SQLQ_OK && ops->drop)
        r = ops->drop(db, s, err);
    return r;
}

const char *sqlq_capture_no_before_image(sqlq_db *db, sqlq_source_kind kind)
{
    const sqlq_change_source_ops *ops = sqlq_change_source_find(sqlq_db_dialect(db), kind);
    return ops ? ops->no_before_image : NULL;
}
