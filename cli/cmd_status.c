/* cmd_status: `sqlq status`: per watched table and bridge, the sync version, changes pending
 * and leases held (by whom), read from sqlq's registry and state tables. */
#include "capture.h"
#include "catalog.h"
#include "change_source.h"
#include "commands.h"
#include "config.h"
#include "cursor_status.h"
#include "db.h"
#include "log.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct status_settings {
    char *db;
    char *table;
    char *bridge_name;
    bool json;
    char *log_level;
    char *log_format;
} status_settings;

#define S status_settings
static const sqlq_setting status_table[] = {
    SQLQ_SETTING_SECRET(S, db, "db", "SQLQ_DB_CONNECTION", NULL,
                        "ODBC connection string of the database"),
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL,
                     "only this table (default: every table sqlq setup prepared)"),
    SQLQ_SETTING_STR(S, bridge_name, "bridge_name", "SQLQ_BRIDGE_NAME", NULL,
                     "only this bridge (default: every bridge; --bridge NAME is accepted too)"),
    SQLQ_SETTING_BOOL(S, json, "json", NULL, "false", "print one JSON document instead of text"),
    SQLQ_SETTING_ENUM(S, log_level, "log_level", "SQLQ_LOG_LEVEL", "warn",
                      "error|warn|info|debug|trace", "log level"),
    SQLQ_SETTING_ENUM(S, log_format, "log_format", "SQLQ_LOG_FORMAT", "text", "text|json",
                      "log line format"),
};
#undef S

static const sqlq_config_spec status_spec = {
    "status",
    "sqlq status --db CONN [--table T] [--bridge-name NAME] [--json]",
    "Show, per table and bridge: the sync version (every change at or below it is delivered),\n"
    "pending changes (not delivered yet, leased ones included, and on PostgreSQL committed\n"
    "changes an open writer of the change log holds back: the backlog an autoscaler reads, as\n"
    "the bridge's sqlq_pending_changes metric counts it),\n"
    "and the leases held now, by owner (host:pid:random of the bridge instance).\n"
    "Exit code 1 when a table asked for is not set up or cannot be read.",
    status_table,
    sizeof(status_table) / sizeof(status_table[0]),
    0,
    0,
};

const sqlq_config_spec *sqlq_cmd_status_spec(void)
{
    return &status_spec;
}

static void print_err(const char *what, const sqlq_error *err)
{
    char line[700];
    sqlq_error_format(err, line, sizeof(line));
    fprintf(stderr, "sqlq status: %s: %s\n", what, line);
}

/* PostgreSQL: the open transactions that wrote the change log and hold delivery back. */
static void print_writers(const sqlq_capture_status *st)
{
    if (json_array_size(st->writers) == 0)
        return;
    printf("    held back: %lld committed change(s) after version %lld wait for open "
           "transactions that wrote the change log:\n",
           st->held_back, (long long)st->horizon);
    size_t i;
    json_t *w;
    json_array_foreach(st->writers, i, w) {
        const char *app = json_string_value(json_object_get(w, "application_name"));
        const char *db = json_string_value(json_object_get(w, "database"));
        const char *state = json_string_value(json_object_get(w, "state"));
        const char *gid = json_string_value(json_object_get(w, "gid"));
        json_int_t pid = json_integer_value(json_object_get(w, "pid"));
        if (gid)
            printf("      prepared transaction gid '%s'", gid);
        else
            printf("      pid %lld", (long long)pid);
        printf(", application_name '%s', database %s, state %s, open %llds, xid %s\n",
               app ? app : "", db ? db : "?", state ? state : "?",
               (long long)json_integer_value(json_object_get(w, "age_s")),
               json_string_value(json_object_get(w, "xid")));
    }
}

/* One bridge of one table; appends to `bridges` (JSON) and prints in text mode. */
/* Source logical: the slot, what it keeps and how far behind it is. */
static void print_slot(const sqlq_capture_status *st)
{
    printf("    replication slot %s: %s, wal_status %s, retains %lld bytes of WAL, %lld bytes "
           "behind\n",
           st->slot, st->slot_active ? "streaming" : "inactive",
           st->wal_status[0] ? st->wal_status : "-", (long long)st->retained_wal_bytes,
           (long long)st->lag_bytes);
}

static void slot_json(json_t *b, const sqlq_capture_status *st)
{
    json_object_set_new(b, "slot", json_pack("{s:s, s:b, s:s, s:I, s:I}", "name", st->slot,
                                             "active", st->slot_active, "wal_status",
                                             st->wal_status, "retained_wal_bytes",
                                             (json_int_t)st->retained_wal_bytes, "lag_bytes",
                                             (json_int_t)st->lag_bytes));
}

static int bridge_status(sqlq_db *db, const char *table_key, const char *bridge, bool logical,
                         bool json, json_t *bridges)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.source = logical ? SQLQ_SOURCE_LOGICAL : SQLQ_SOURCE_AUTO;
    cfg.quiet = logical;
    cfg.table = table_key;
    cfg.bridge_name = bridge;
    cfg.instance_id = "sqlq-status";
    sqlq_capture *cap = NULL;
    sqlq_capture_status st;
    memset(&st, 0, sizeof(st));
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_capture_open(db, &cfg, &cap, &err);
    if (r == SQLQ_OK)
        r = sqlq_capture_status_get(cap, &st, &err);
    sqlq_capture_close(cap);
    if (r != SQLQ_OK) {
        char what[600];
        snprintf(what, sizeof(what), "%s, bridge %s", table_key, bridge);
        print_err(what, &err);
        json_array_append_new(bridges, json_pack("{s:s, s:s}", "bridge", bridge, "error",
                                                 err.message));
        return SQLQ_EXIT_FAILED;
    }
    /* Pending as sqlq_pending_changes counts it: committed changes an open writer of the log
     * holds back (PostgreSQL) are not delivered either. */
    long long pending = st.pending + st.held_back;
    if (json) {
        json_t *b = json_pack("{s:s, s:I, s:I, s:I, s:O}", "bridge", bridge, "sync_version",
                              (json_int_t)st.sync_version, "pending", (json_int_t)pending,
                              "leased", (json_int_t)st.leased, "owners", st.owners);
        if (b && st.writers) {
            json_object_set_new(b, "horizon", json_integer((json_int_t)st.horizon));
            json_object_set_new(b, "held_back", json_integer((json_int_t)st.held_back));
            json_object_set(b, "blocking_transactions", st.writers);
        }
        if (b && st.logical)
            slot_json(b, &st);
        json_array_append_new(bridges, b);
    } else {
        printf("  bridge %s: sync version %lld, pending %lld, leased %lld", bridge,
               (long long)st.sync_version, pending, st.leased);
        const char *owner;
        json_t *n;
        const char *sep = " (";
        json_object_foreach(st.owners, owner, n) {
            printf("%s%s: %lld", sep, owner, (long long)json_integer_value(n));
            sep = ", ";
        }
        printf("%s\n", *sep == ',' ? ")" : "");
        print_writers(&st);
        if (st.logical)
            print_slot(&st);
    }
    sqlq_capture_status_free(&st);
    return SQLQ_EXIT_OK;
}

/* The database's default source, as a key ("change_log") or for people ("change log"). */
static const char *source_name(sqlq_db *db, bool key)
{
    const sqlq_change_source_ops *s = sqlq_change_source_find(sqlq_db_dialect(db), SQLQ_SOURCE_AUTO);
    return s ? (key ? s->name : s->title) : (key ? "change_log" : "change log");
}

static void no_bridge(const status_settings *s)
{
    if (s->bridge_name)
        printf("  bridge %s has not started on this table yet\n", s->bridge_name);
    else
        printf("  no bridge has started on this table yet\n");
}

/* The canonical key of a table the user named (as state and registry rows spell it). */
static bool table_key(sqlq_db *db, const char *table, char *out, size_t size)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    if (sqlq_catalog_lookup_keyed(db, table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &n, &err) !=
        SQLQ_OK) { /* the key does not matter here: any table sqlq knows */
        print_err(table, &err);
        return false;
    }
    sqlq_table_free(t);
    snprintf(out, size, "%s", n.table_key);
    return true;
}

/* A change log the registry lists against another table too is refused: what it holds may be
 * either table's (sqlq_catalog_log_check; `sqlq setup` says how to part them). */
static int shared_log(sqlq_db *db, const char *table, const char *object)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    char other[SQLQ_TABLE_KEY_MAX];
    if (sqlq_catalog_log_sharer(db, object, table, other, sizeof(other), &err) != SQLQ_OK) {
        print_err(table, &err);
        return SQLQ_EXIT_FAILED;
    }
    if (!other[0])
        return SQLQ_EXIT_OK;
    sqlq_error_set(&err, SQLQ_E_CONFLICT, false,
                   "change log %s is registered to table %s too: its changes may be either "
                   "table's. `sqlq setup --table %s` says how to give each table a log of its own",
                   object, other, table);
    print_err(table, &err);
    return SQLQ_EXIT_FAILED;
}

/* Whether a table's registry rows are all of kind "slot" (source logical: no change log). */
static bool logical_only(const json_t *rows, const char *table)
{
    size_t i;
    json_t *row;
    bool slot = false;
    json_array_foreach(rows, i, row) {
        const char *t = json_string_value(json_object_get(row, "table_name"));
        const char *kind = json_string_value(json_object_get(row, "kind"));
        if (!t || !kind || strcmp(t, table) != 0)
            continue;
        if (strcmp(kind, "slot") != 0)
            return false;
        slot = true;
    }
    return slot;
}

/* The tables and bridges to show: registry rows, ordered by table (only `key`'s when set);
 * `*found` says whether there was any. */
static int show(sqlq_db *db, const status_settings *s, const char *key, json_t *doc, bool *found)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    bool exists = false;
    if (sqlq_catalog_exists(db, &exists, &err) != SQLQ_OK ||
        (exists && sqlq_catalog_list(db, key, &rows, &err) != SQLQ_OK)) {
        print_err("registry", &err);
        return SQLQ_EXIT_FAILED;
    }
    int rc = SQLQ_EXIT_OK;
    *found = json_array_size(rows) > 0;
    if (!*found) {
        json_decref(rows);
        return SQLQ_EXIT_OK;
    }
    json_t *tables = json_object_get(doc, "tables");
    const char *current = NULL;
    json_t *entry = NULL;
    size_t shown = 0; /* bridges shown for the current table */
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *kind = json_string_value(json_object_get(row, "kind"));
        const char *bridge = json_string_value(json_object_get(row, "bridge_name"));
        const char *table = json_string_value(json_object_get(row, "table_name"));
        const char *object = json_string_value(json_object_get(row, "object_name"));
        if (!kind || !bridge || !table)
            continue;
        if (!current || strcmp(current, table) != 0) {
            if (current && shown == 0 && !s->json)
                no_bridge(s);
            current = table;
            shown = 0;
            bool lg = logical_only(rows, table);
            entry = json_pack("{s:s, s:s, s:[]}", "table", table, "source",
                              lg ? "logical" : source_name(db, true), "bridges");
            json_array_append_new(tables, entry);
            if (!s->json)
                printf("%s (%s)\n", table, lg ? "logical decoding" : source_name(db, false));
        }
        if (strcmp(kind, "log") == 0) {
            json_object_set_new(entry, "log", json_string(object ? object : ""));
            if (object && shared_log(db, table, object) != SQLQ_EXIT_OK)
                rc = SQLQ_EXIT_FAILED;
            continue;
        }
        if (s->bridge_name && strcmp(s->bridge_name, bridge) != 0)
            continue;
        shown++;
        if (bridge_status(db, table, bridge, strcmp(kind, "slot") == 0, s->json,
                          json_object_get(entry, "bridges")) !=
            SQLQ_EXIT_OK)
            rc = SQLQ_EXIT_FAILED;
    }
    if (current && shown == 0 && !s->json)
        no_bridge(s);
    json_decref(rows);
    return rc;
}

/* Cursor sources (no registry row: they need no sqlq setup) with the rule each reads by; only
 * `key`'s when set; `*found` says whether there was any. */
static int show_cursor_sources(sqlq_db *db, const status_settings *s, const char *key, json_t *doc,
                               bool *found)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    if (sqlq_cursor_status_list(db, &rows, &err) != SQLQ_OK) {
        print_err("cursor sources", &err);
        return SQLQ_EXIT_FAILED;
    }
    json_t *kept = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *table = json_string_value(json_object_get(row, "table"));
        const char *bridge = json_string_value(json_object_get(row, "bridge"));
        if (!table || !bridge || (key && strcmp(table, key) != 0) ||
            (key && s->bridge_name && strcmp(s->bridge_name, bridge) != 0))
            continue;
        const char *owner = json_string_value(json_object_get(row, "owner"));
        const char *rule = json_string_value(json_object_get(row, "rule"));
        if (!s->json)
            printf("%s%s (cursor source, bridge %s): %s; leader %s\n",
                   json_array_size(kept) ? "" : "cursor sources:\n", table, bridge,
                   rule ? rule : "rule not recorded", owner ? owner : "none");
        json_array_append(kept, row);
    }
    json_decref(rows);
    *found = json_array_size(kept) > 0;
    json_object_set_new(doc, "cursor_sources", kept);
    return SQLQ_EXIT_OK;
}

/* Set-up tables, then cursor sources (a --table may be either); says so when there is neither. */
static int show_all(sqlq_db *db, const status_settings *s, json_t *doc)
{
    char key[SQLQ_TABLE_KEY_MAX] = "";
    if (s->table && !table_key(db, s->table, key, sizeof(key)))
        return SQLQ_EXIT_FAILED;
    bool tables = false, cursors = false;
    int rc = show(db, s, s->table ? key : NULL, doc, &tables);
    if (show_cursor_sources(db, s, s->table ? key : NULL, doc, &cursors) != SQLQ_EXIT_OK)
        rc = SQLQ_EXIT_FAILED;
    if (tables || cursors)
        return rc;
    if (s->table) {
        if (!s->json)
            printf("table %s is not set up: run sqlq setup --table %s (or run a bridge on it with "
                   "--source cursor)\n",
                   s->table, s->table);
        return SQLQ_EXIT_FAILED;
    }
    if (!s->json)
        printf("no table is set up: run sqlq setup --table TABLE\n");
    return rc;
}

int sqlq_cmd_status(int argc, char **argv)
{
    char **args = calloc((size_t)argc + 1, sizeof(char *));
    if (!args)
        return SQLQ_EXIT_FAILED;
    char *owned = NULL;
    for (int i = 0; i < argc; i++) {
        args[i] = strcmp(argv[i], "--bridge") == 0 ? "--bridge-name" : argv[i];
        if (strncmp(argv[i], "--bridge=", 9) == 0 && !owned) {
            size_t n = strlen(argv[i]) + 6;
            owned = malloc(n);
            if (owned) {
                snprintf(owned, n, "--bridge-name=%s", argv[i] + 9);
                args[i] = owned;
            }
        }
    }
    status_settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    int rc = sqlq_config_load_or_exit(&status_spec, &s, argc, args, &res);
    if (rc < 0) {
        sqlq_common_settings common = {.log_level = s.log_level, .log_format = s.log_format};
        sqlq_common_settings_apply(&common);
        if (!s.db || !*s.db)
            rc = SQLQ_EXIT_USAGE,
            fprintf(stderr, "sqlq status: no database: give --db CONN or set SQLQ_DB_CONNECTION\n");
    }
    sqlq_db *db = NULL;
    if (rc < 0) {
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_db_connect(s.db, &db, &err) != SQLQ_OK) {
            print_err("cannot connect", &err);
            rc = SQLQ_EXIT_FAILED;
        }
    }
    if (rc < 0) {
        json_t *doc = json_pack("{s:[]}", "tables");
        rc = doc ? show_all(db, &s, doc) : SQLQ_EXIT_FAILED;
        if (doc && s.json) {
            char *text = json_dumps(doc, JSON_INDENT(2) | JSON_ENSURE_ASCII);
            if (text)
                printf("%s\n", text);
            free(text);
        }
        json_decref(doc);
    }
    sqlq_db_close(db);
    sqlq_config_free(&status_spec, &s, &res);
    free(args);
    free(owned);
    return rc;
}
