/* cmd_status: `sqlq status`: per watched table and bridge, the sync version, changes pending
 * and leases held (by whom), as sql/status_report reads them, printed as text or JSON. */
#include "catalog.h"
#include "commands.h"
#include "config.h"
#include "db.h"
#include "log.h"
#include "setup_hint.h"
#include "status_report.h"
#include "term_text.h"

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
    "pending changes (not delivered yet, leased ones included, and where the source reads up to\n"
    "a horizon committed changes an open writer of the change log holds back: the backlog an\n"
    "autoscaler reads, as the bridge's sqlq_pending_changes metric counts it; a logical\n"
    "source's are not counted here: they wait in its replication slot and the bridge's memory,\n"
    "so pending is `not counted` (--json: null) and the slot's bytes behind are the measure),\n"
    "the leases held now, by owner (host:pid:random of the bridge instance), and what each\n"
    "running instance published lately (changes/s over its last 5 s sample, per queue of a\n"
    "shard set; an instance that reported nothing for 30 s is not listed).\n"
    "A bridge whose capture stopped (its key changed, its triggers are gone) is shown as\n"
    "`capture stopped (REASON)` with its counts read from the change log alone.\n"
    "Exit code 1 when a table asked for is not set up or cannot be read, or a capture stopped.",
    status_table,
    sizeof(status_table) / sizeof(status_table[0]),
    0,
    0,
};

const sqlq_config_spec *sqlq_cmd_status_spec(void)
{
    return &status_spec;
}

/* Names and messages from the database are shown escaped (term_text.h): a table named with an
 * ESC in it cannot drive the terminal. */
static void print_err(const char *what, const sqlq_error *err)
{
    char raw[700], line[SQLQ_TERM_NAME_MAX], w[SQLQ_TERM_NAME_MAX];
    sqlq_error_format(err, raw, sizeof(raw));
    sqlq_term_text_line(raw, line, sizeof(line));
    fprintf(stderr, "sqlq status: %s: %s\n", sqlq_term_text_name(what, w, sizeof(w)), line);
}

/* Member `key` of o (a string from the database), escaped for the terminal into out. */
static const char *shown(const json_t *o, const char *key, const char *absent, char *out,
                         size_t size)
{
    const char *v = json_string_value(json_object_get(o, key));
    return sqlq_term_text_name(v ? v : absent, out, size);
}

static void on_error(void *ctx, const char *what, const sqlq_error *err)
{
    (void)ctx;
    print_err(what, err);
}

/* A source with a horizon: the open transactions that wrote the change log and hold delivery back. */
static void print_writers(const json_t *b)
{
    json_t *writers = json_object_get(b, "blocking_transactions");
    if (json_array_size(writers) == 0)
        return;
    printf("    held back: %lld committed change(s) after version %lld wait for open "
           "transactions that wrote the change log:\n",
           (long long)json_integer_value(json_object_get(b, "held_back")),
           (long long)json_integer_value(json_object_get(b, "horizon")));
    size_t i;
    json_t *w;
    json_array_foreach(writers, i, w) {
        char t[4][SQLQ_TERM_NAME_MAX];
        json_int_t pid = json_integer_value(json_object_get(w, "pid"));
        if (json_string_value(json_object_get(w, "gid")))
            printf("      prepared transaction gid '%s'", shown(w, "gid", "", t[0], sizeof(t[0])));
        else
            printf("      pid %lld", (long long)pid);
        printf(", application_name '%s', database %s, state %s, open %llds, xid %s\n",
               shown(w, "application_name", "", t[0], sizeof(t[0])),
               shown(w, "database", "?", t[1], sizeof(t[1])),
               shown(w, "state", "?", t[2], sizeof(t[2])),
               (long long)json_integer_value(json_object_get(w, "age_s")),
               shown(w, "xid", "?", t[3], sizeof(t[3])));
    }
}

/* A logical source's slot: what it keeps and how far behind it is. */
static void print_slot(const json_t *b)
{
    const json_t *slot = json_object_get(b, "slot");
    if (!slot)
        return;
    char name[SQLQ_TERM_NAME_MAX], w[SQLQ_TERM_NAME_MAX];
    printf("    replication slot %s: %s, wal_status %s, retains %lld bytes of WAL, %lld bytes "
           "behind\n",
           shown(slot, "name", "", name, sizeof(name)),
           json_is_true(json_object_get(slot, "active")) ? "streaming" : "inactive",
           shown(slot, "wal_status", "-", w, sizeof(w)),
           (long long)json_integer_value(json_object_get(slot, "retained_wal_bytes")),
           (long long)json_integer_value(json_object_get(slot, "lag_bytes")));
    size_t i;
    const json_t *warning;
    json_array_foreach(json_object_get(slot, "warnings"), i, warning) /* sqlq's own texts */
        printf("      warning: %s\n", json_string_value(warning));
}

/* What each instance published lately: its rate, and each queue's in a shard set. */
static void print_rates(const json_t *b)
{
    size_t i;
    json_t *inst;
    json_array_foreach(json_object_get(b, "instances"), i, inst) {
        char id[SQLQ_TERM_NAME_MAX], q[SQLQ_TERM_NAME_MAX];
        printf("    instance %s: %.1f changes/s", shown(inst, "instance", "", id, sizeof(id)),
               json_number_value(json_object_get(inst, "per_s")));
        json_t *queues = json_object_get(inst, "queues");
        const char *name;
        json_t *rate;
        const char *sep = " (";
        if (json_object_size(queues) > 1)
            json_object_foreach(queues, name, rate) {
                printf("%s%s %.1f/s", sep, sqlq_term_text_name(name, q, sizeof(q)),
                       json_number_value(rate));
                sep = ", ";
            }
        printf("%s\n", *sep == ',' ? ")" : "");
    }
}

/* A source's key in the report as people read it. */
static const char *source_title(const char *key)
{
    if (key && strcmp(key, "change_tracking") == 0)
        return "change tracking";
    if (key && strcmp(key, "logical") == 0)
        return "logical decoding";
    return "change log";
}

/* One bridge as text (one that could not be read was named on stderr already). */
static void print_bridge(const json_t *b)
{
    const char *stopped = json_string_value(json_object_get(b, "stopped"));
    char name[SQLQ_TERM_NAME_MAX], e[SQLQ_TERM_NAME_MAX];
    shown(b, "bridge", "", name, sizeof(name));
    if (stopped && json_is_true(json_object_get(b, "counted")))
        printf("  bridge %s: capture stopped (%s): sync version %lld, pending %lld, leased %lld "
               "(read from the change log; see the error)\n",
               name, stopped, (long long)json_integer_value(json_object_get(b, "sync_version")),
               (long long)json_integer_value(json_object_get(b, "pending")),
               (long long)json_integer_value(json_object_get(b, "leased")));
    else if (stopped && json_object_get(b, "counted"))
        printf("  bridge %s: capture stopped (%s); the change log cannot be read either: %s\n",
               name, stopped, shown(b, "count_error", "", e, sizeof(e)));
    else if (stopped)
        printf("  bridge %s: capture stopped (%s): see the error\n", name, stopped);
    if (json_object_get(b, "error"))
        return;
    printf("  bridge %s: sync version %lld, ", name,
           (long long)json_integer_value(json_object_get(b, "sync_version")));
    if (json_is_null(json_object_get(b, "pending"))) /* a logical source's: not counted */
        printf("pending not counted (the changes wait in the slot and the bridge's memory: "
               "its bytes behind are the measure)");
    else
        printf("pending %lld, leased %lld",
               (long long)json_integer_value(json_object_get(b, "pending")),
               (long long)json_integer_value(json_object_get(b, "leased")));
    const char *owner;
    json_t *n;
    const char *sep = " (";
    json_object_foreach(json_object_get(b, "owners"), owner, n) {
        printf("%s%s: %lld", sep, sqlq_term_text_name(owner, e, sizeof(e)),
               (long long)json_integer_value(n));
        sep = ", ";
    }
    printf("%s\n", *sep == ',' ? ")" : "");
    print_writers(b);
    print_slot(b);
    print_rates(b);
}

static void print_text(const status_settings *s, const json_t *doc)
{
    size_t i, j;
    json_t *t, *b;
    json_array_foreach(json_object_get(doc, "tables"), i, t) {
        const char *source = json_string_value(json_object_get(t, "source"));
        char w[SQLQ_TERM_NAME_MAX];
        printf("%s (%s)\n", shown(t, "table", "", w, sizeof(w)), source_title(source));
        json_t *bridges = json_object_get(t, "bridges");
        json_array_foreach(bridges, j, b) print_bridge(b);
        if (json_array_size(bridges) == 0 && s->bridge_name)
            printf("  bridge %s has not started on this table yet\n",
                   sqlq_term_text_name(s->bridge_name, w, sizeof(w)));
        else if (json_array_size(bridges) == 0)
            printf("  no bridge has started on this table yet\n");
    }
    json_array_foreach(json_object_get(doc, "cursor_sources"), i, t) {
        char w[4][SQLQ_TERM_NAME_MAX];
        printf("%s%s (cursor source, bridge %s): %s; leader %s\n", i ? "" : "cursor sources:\n",
               shown(t, "table", "", w[0], sizeof(w[0])), shown(t, "bridge", "", w[1], sizeof(w[1])),
               shown(t, "rule", "rule not recorded", w[2], sizeof(w[2])),
               shown(t, "owner", "none", w[3], sizeof(w[3])));
    }
}

/* The report of every table and bridge (only --table's, --bridge-name's when given); says so
 * when there is nothing to show. */
static int show_all(sqlq_db *db, const status_settings *s)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    char key[SQLQ_TABLE_KEY_MAX] = "";
    if (s->table && sqlq_status_table_key(db, s->table, key, sizeof(key), &err) != SQLQ_OK) {
        print_err(s->table, &err);
        return SQLQ_EXIT_FAILED;
    }
    sqlq_status_options o = {.table_key = s->table ? key : NULL, .bridge = s->bridge_name,
                             .on_error = on_error};
    sqlq_status_report *report = NULL;
    json_t *doc = NULL;
    bool failed = false;
    if (sqlq_status_report_create(db, false, &report, &err) != SQLQ_OK ||
        sqlq_status_report_read(report, &o, &doc, &failed, &err) != SQLQ_OK) {
        sqlq_status_report_destroy(report);
        print_err("status", &err);
        return SQLQ_EXIT_FAILED;
    }
    sqlq_status_report_destroy(report);
    int rc = failed ? SQLQ_EXIT_FAILED : SQLQ_EXIT_OK;
    bool found = json_array_size(json_object_get(doc, "tables")) > 0 ||
                 json_array_size(json_object_get(doc, "cursor_sources")) > 0;
    if (s->json) {
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_ENSURE_ASCII);
        if (text)
            printf("%s\n", text);
        free(text);
    } else if (found) {
        print_text(s, doc);
    } else if (s->table) {
        char t[SQLQ_TERM_NAME_MAX], arg[SQLQ_SETUP_ARG_MAX], a[SQLQ_TERM_NAME_MAX];
        sqlq_setup_table_arg_text(s->table, NULL, arg, sizeof arg);
        printf("table %s is not set up: run `sqlq setup --table %s` (or run a bridge on it with "
               "--source cursor)\n",
               sqlq_term_text_name(s->table, t, sizeof(t)), sqlq_term_text_name(arg, a, sizeof(a)));
    } else {
        printf("no table is set up: run sqlq setup --table TABLE\n");
    }
    json_decref(doc);
    return !found && s->table ? SQLQ_EXIT_FAILED : rc;
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
    if (rc < 0)
        rc = show_all(db, &s);
    sqlq_db_close(db);
    sqlq_config_free(&status_spec, &s, &res);
    free(args);
    free(owned);
    return rc;
}
