#include "status_report.h"

#include "capture.h"
#include "capture_backlog.h"
#include "capture_presence.h"
#include "capture_stop.h"
#include "catalog.h"
#include "change_source.h"
#include "cursor_status.h"
#include "dialect.h"
#include "setup_hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bridge's capture kept open between reads (keep_open). */
typedef struct open_capture {
    char *table;
    char *bridge;
    sqlq_capture *cap;
} open_capture;

struct sqlq_status_report {
    sqlq_db *db;
    bool keep_open;
    open_capture *open;
    size_t nopen;
};

sqlq_result sqlq_status_report_create(sqlq_db *db, bool keep_open, sqlq_status_report **out,
                                      sqlq_error *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    (*out)->db = db;
    (*out)->keep_open = keep_open;
    return SQLQ_OK;
}

static void forget(open_capture *o)
{
    sqlq_capture_close(o->cap);
    free(o->table);
    free(o->bridge);
    memset(o, 0, sizeof(*o));
}

void sqlq_status_report_destroy(sqlq_status_report *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nopen; i++)
        forget(&s->open[i]);
    free(s->open);
    free(s);
}

static void report_error(const sqlq_status_options *o, const char *what, const sqlq_error *err)
{
    if (o->on_error)
        o->on_error(o->error_ctx, what, err);
}

static open_capture *kept(sqlq_status_report *s, const char *table, const char *bridge)
{
    for (size_t i = 0; i < s->nopen; i++)
        if (s->open[i].cap && strcmp(s->open[i].table, table) == 0 &&
            strcmp(s->open[i].bridge, bridge) == 0)
            return &s->open[i];
    return NULL;
}

/* Keep cap for the next read; false (the caller closes it) when out of memory. */
static bool keep(sqlq_status_report *s, const char *table, const char *bridge, sqlq_capture *cap)
{
    open_capture *grown = realloc(s->open, (s->nopen + 1) * sizeof(*grown));
    if (!grown)
        return false;
    s->open = grown;
    open_capture *o = &s->open[s->nopen];
    o->table = strdup(table);
    o->bridge = strdup(bridge);
    o->cap = cap;
    if (!o->table || !o->bridge) {
        o->cap = NULL;
        forget(o);
        return false;
    }
    s->nopen++;
    return true;
}

/* The capture status of one bridge: from a kept capture, else one opened now. */
static sqlq_result read_capture(sqlq_status_report *s, const char *table, const char *bridge,
                                bool slot, sqlq_capture_status *st, sqlq_error *err)
{
    open_capture *o = s->keep_open ? kept(s, table, bridge) : NULL;
    if (o) {
        sqlq_result r = sqlq_capture_status_get(o->cap, st, err);
        if (r != SQLQ_OK)
            forget(o); /* opened afresh next time */
        return r;
    }
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.source = slot ? SQLQ_SOURCE_LOGICAL : SQLQ_SOURCE_AUTO;
    cfg.quiet = slot;
    cfg.table = table;
    cfg.bridge_name = bridge;
    cfg.instance_id = "sqlq-status";
    sqlq_capture *cap = NULL;
    sqlq_result r = sqlq_capture_open(s->db, &cfg, &cap, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_status_get(cap, st, err);
    if (r == SQLQ_OK && s->keep_open && keep(s, table, bridge, cap))
        cap = NULL;
    sqlq_capture_close(cap);
    return r;
}

/* A bridge whose capture cannot open (its key changed, its triggers are gone): why, in b's
 * "stopped", and what waits, read from the change log alone ("counted" false when even that
 * could not be read; "count_error" says why). */
static void stopped_counts(sqlq_db *db, const char *table, const char *bridge,
                           const sqlq_error *why, json_t *b)
{
    sqlq_backlog *bl = NULL;
    sqlq_backlog_counts c;
    sqlq_error err;
    sqlq_error_clear(&err);
    bool counted = sqlq_backlog_open(db, table, bridge, &bl, &err) == SQLQ_OK &&
                   sqlq_backlog_read(bl, 0, &c, &err) == SQLQ_OK;
    sqlq_backlog_close(bl);
    json_object_set_new(b, "stopped", json_string(sqlq_capture_stop_reason(why)));
    json_object_set_new(b, "counted", json_boolean(counted));
    if (!counted) {
        json_object_set_new(b, "count_error", json_string(err.message));
        return;
    }
    json_object_set_new(b, "sync_version", json_integer((json_int_t)c.sync_version));
    json_object_set_new(b, "pending", json_integer((json_int_t)c.pending));
    json_object_set_new(b, "leased", json_integer((json_int_t)c.leased));
}

/* A logical source's slot: what it keeps, how far behind it is, and what the server's
 * settings put at risk (the warnings a bridge logs once). */
static void slot_json(json_t *b, const sqlq_capture_status *st)
{
    json_t *slot = json_pack("{s:s, s:b, s:s, s:I, s:I}", "name", st->slot, "active",
                             st->slot_active, "wal_status", st->wal_status, "retained_wal_bytes",
                             (json_int_t)st->retained_wal_bytes, "lag_bytes",
                             (json_int_t)st->lag_bytes);
    if (slot && json_array_size(st->warnings) > 0)
        json_object_set(slot, "warnings", st->warnings);
    json_object_set_new(b, "slot", slot);
}

/* One bridge of one table (`slot`: its registry row is a logical source's slot), appended to
 * `bridges`; false when it could not be read. */
static bool bridge_status(sqlq_status_report *s, const sqlq_status_options *o, const char *table,
                          const char *bridge, bool slot, json_t *bridges)
{
    sqlq_capture_status st;
    memset(&st, 0, sizeof(st));
    sqlq_error err;
    sqlq_error_clear(&err);
    if (read_capture(s, table, bridge, slot, &st, &err) != SQLQ_OK) {
        char what[600];
        snprintf(what, sizeof(what), "%s, bridge %s", table, bridge);
        report_error(o, what, &err);
        json_t *b = json_pack("{s:s, s:s}", "bridge", bridge, "error", err.message);
        /* a capture stopped for good whose database keeps a change log of sqlq's: its
         * backlog is read from the log alone */
        if (b && !err.transient && err.code != SQLQ_E_UNSUPPORTED && !slot &&
            sqlq_change_source_find(sqlq_db_dialect(s->db), SQLQ_SOURCE_CHANGE_LOG))
            stopped_counts(s->db, table, bridge, &err, b);
        else if (b && !err.transient && err.reason[0]) /* why, without counts of the log */
            json_object_set_new(b, "stopped", json_string(err.reason));
        json_array_append_new(bridges, b);
        return false;
    }
    /* Pending as sqlq_pending_changes counts it: committed changes an open writer of the log
     * holds back (a source that reads up to a horizon) are not delivered either. A logical
     * source's changes wait in the slot's WAL and in the bridge's memory, which the database
     * does not count: pending and leased are null there, the slot's bytes behind the measure. */
    long long pending = st.pending + st.held_back;
    json_t *b = json_pack("{s:s, s:I, s:o, s:o, s:O}", "bridge", bridge, "sync_version",
                          (json_int_t)st.sync_version, "pending",
                          st.logical ? json_null() : json_integer((json_int_t)pending), "leased",
                          st.logical ? json_null() : json_integer((json_int_t)st.leased),
                          "owners", st.owners);
    if (b && s->keep_open && !st.logical)
        json_object_set_new(b, "oldest_pending_age_s", json_real(st.oldest_pending_age_s));
    if (b && st.writers) {
        json_object_set_new(b, "horizon", json_integer((json_int_t)st.horizon));
        json_object_set_new(b, "held_back", json_integer((json_int_t)st.held_back));
        json_object_set(b, "blocking_transactions", st.writers);
    }
    if (b && st.logical)
        slot_json(b, &st);
    json_t *rates = NULL;
    if (b && sqlq_presence_rates(s->db, table, bridge, &rates, &err) == SQLQ_OK) {
        json_object_set_new(b, "instances", rates);
    } else if (b) {
        json_decref(rates);
        report_error(o, "instance rates", &err);
    }
    json_array_append_new(bridges, b);
    sqlq_capture_status_free(&st);
    return true;
}

/* The database's default source, as a key ("change_log", "change_tracking"). */
static const char *source_key(sqlq_db *db)
{
    const sqlq_change_source_ops *s = sqlq_change_source_find(sqlq_db_dialect(db), SQLQ_SOURCE_AUTO);
    return s ? s->name : "change_log";
}

/* Whether registry key k is the table `table` names: the key or its last part as written, or
 * the same schema (when table gives one) and name once both are parsed (public.it's x names
 * public."it's x"). */
static bool key_named(const char *k, const char *table, const sqlq_table_name *parsed)
{
    size_t kl = strlen(k), len = strlen(table);
    if (strcmp(k, table) == 0 ||
        (kl > len && k[kl - len - 1] == '.' && strcmp(k + kl - len, table) == 0))
        return true;
    sqlq_table_name kn;
    sqlq_error e;
    sqlq_error_clear(&e);
    return parsed && sqlq_table_name_parse(k, &kn, &e) == SQLQ_OK &&
           strcmp(kn.name, parsed->name) == 0 &&
           (!parsed->schema[0] || strcmp(kn.schema, parsed->schema) == 0);
}

/* The one table the registry lists as `table` names it (key_named): a table dropped while what
 * sqlq made for it is left; "" when none or more than one. */
static void listed_key(sqlq_db *db, const char *table, char *out, size_t size)
{
    out[0] = '\0';
    sqlq_error e;
    sqlq_error_clear(&e);
    json_t *rows = NULL;
    bool exists = false;
    if (sqlq_catalog_exists(db, &exists, &e) != SQLQ_OK || !exists ||
        sqlq_catalog_list(db, NULL, &rows, &e) != SQLQ_OK)
        return;
    sqlq_table_name parsed;
    bool parses = sqlq_table_name_parse(table, &parsed, &e) == SQLQ_OK;
    size_t i;
    json_t *row;
    bool several = false;
    json_array_foreach(rows, i, row) {
        const char *k = json_string_value(json_object_get(row, "table_name"));
        bool named = k && key_named(k, table, parses ? &parsed : NULL);
        if (named && out[0] && strcmp(out, k) != 0)
            several = true;
        else if (named)
            snprintf(out, size, "%s", k);
    }
    json_decref(rows);
    if (several)
        out[0] = '\0';
}

sqlq_result sqlq_status_table_key(sqlq_db *db, const char *table, char *out, size_t size,
                                  sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    sqlq_error missing;
    sqlq_error_clear(&missing);
    /* the key does not matter here: any table sqlq knows */
    sqlq_result r =
        sqlq_catalog_lookup_keyed(db, table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &n, &missing);
    sqlq_table_free(t);
    if (r == SQLQ_OK)
        snprintf(out, size, "%s", n.table_key);
    if (r == SQLQ_E_NOT_FOUND) /* gone: what the registry still lists for it is shown */
        listed_key(db, table, out, size);
    if (r == SQLQ_E_NOT_FOUND && out[0])
        return SQLQ_OK;
    if (r != SQLQ_OK && err && err->code == SQLQ_OK)
        *err = missing;
    return r;
}

/* A change log the registry lists against another table too is refused: what it holds may be
 * either table's (sqlq_catalog_log_sharer; `sqlq setup` says how to part them). */
static bool log_alone(sqlq_db *db, const sqlq_status_options *o, const char *table,
                      const char *object)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    char other[SQLQ_TABLE_KEY_MAX];
    if (sqlq_catalog_log_sharer(db, object, table, other, sizeof(other), &err) != SQLQ_OK) {
        report_error(o, table, &err);
        return false;
    }
    if (!other[0])
        return true;
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg_text(table, NULL, arg, sizeof arg);
    sqlq_error_set(&err, SQLQ_E_CONFLICT, false,
                   "change log %s is registered to table %s too: its changes may be either "
                   "table's. `sqlq setup --table %s` says how to give each table a log of its own",
                   object, other, arg);
    report_error(o, table, &err);
    return false;
}

/* One registry row into the table entries of `tables` (a new entry when the table changes). */
static bool registry_row(sqlq_status_report *s, const sqlq_status_options *o, json_t *row,
                         json_t *tables)
{
    const char *kind = json_string_value(json_object_get(row, "kind"));
    const char *bridge = json_string_value(json_object_get(row, "bridge_name"));
    const char *table = json_string_value(json_object_get(row, "table_name"));
    const char *object = json_string_value(json_object_get(row, "object_name"));
    if (!kind || !bridge || !table || strcmp(kind, SQLQ_CATALOG_KEY_KIND) == 0)
        return true;
    json_t *entry = json_array_get(tables, json_array_size(tables) - 1);
    const char *current = json_string_value(json_object_get(entry, "table"));
    /* A table whose rows are all slots has the logical source alone. */
    bool slot = strcmp(kind, "slot") == 0;
    if (!current || strcmp(current, table) != 0) {
        entry = json_pack("{s:s, s:s, s:[]}", "table", table, "source",
                          slot ? "logical" : source_key(s->db), "bridges");
        json_array_append_new(tables, entry);
    } else if (!slot) {
        json_object_set_new(entry, "source", json_string(source_key(s->db)));
    }
    if (strcmp(kind, "log") == 0) {
        json_object_set_new(entry, "log", json_string(object ? object : ""));
        return !object || log_alone(s->db, o, table, object);
    }
    if (o->bridge && strcmp(o->bridge, bridge) != 0)
        return true;
    return bridge_status(s, o, table, bridge, slot, json_object_get(entry, "bridges"));
}

/* The tables sqlq set up and their bridges, from the registry. */
static bool read_tables(sqlq_status_report *s, const sqlq_status_options *o, json_t *tables)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    bool exists = false;
    if (sqlq_catalog_exists(s->db, &exists, &err) != SQLQ_OK ||
        (exists && sqlq_catalog_list(s->db, o->table_key, &rows, &err) != SQLQ_OK)) {
        report_error(o, "registry", &err);
        return false;
    }
    bool ok = true;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        if (!registry_row(s, o, row, tables))
            ok = false;
    }
    json_decref(rows);
    return ok;
}

/* Cursor sources (no registry row: they need no sqlq setup) with the rule each reads by. */
static bool read_cursor_sources(sqlq_status_report *s, const sqlq_status_options *o,
                                json_t *kept_rows)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    if (sqlq_cursor_status_list(s->db, &rows, &err) != SQLQ_OK) {
        report_error(o, "cursor sources", &err);
        return false;
    }
    const char *key = o->table_key;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *table = json_string_value(json_object_get(row, "table"));
        const char *bridge = json_string_value(json_object_get(row, "bridge"));
        if (!table || !bridge || (key && strcmp(table, key) != 0) ||
            (key && o->bridge && strcmp(o->bridge, bridge) != 0))
            continue;
        json_array_append(kept_rows, row);
    }
    json_decref(rows);
    return true;
}

sqlq_result sqlq_status_report_read(sqlq_status_report *s, const sqlq_status_options *o,
                                    json_t **out, bool *out_failed, sqlq_error *err)
{
    *out_failed = false;
    *out = json_pack("{s:[], s:[]}", "tables", "cursor_sources");
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (!read_tables(s, o, json_object_get(*out, "tables")))
        *out_failed = true;
    if (!read_cursor_sources(s, o, json_object_get(*out, "cursor_sources")))
        *out_failed = true;
    return SQLQ_OK;
}
