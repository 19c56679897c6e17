/* cmd_setup: `sqlq setup`: install (or with --drop remove) what change capture needs in the
 * database: sqlq's schema and state tables, and per table the change log and its triggers
 * or the database's own change tracking, as the table's change source installs them.
 * Idempotent; says what it did. */
#include "capture.h"
#include "capture_stop.h"
#include "catalog.h"
#include "change_source.h"
#include "commands.h"
#include "config.h"
#include "db.h"
#include "log.h"
#include "setup_guard.h"
#include "term_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct setup_settings {
    char *db;
    char *table;
    char *bridge_name;
    bool drop;
    bool force;
    long long retention_days;
    char *source;
    char *cursor_column;
    char *soft_delete_column;
    char *key_columns;
    bool track_columns;
    bool before_image;
    char *log_level;
    char *log_format;
} setup_settings;

#define S setup_settings
static const sqlq_setting setup_table[] = {
    SQLQ_SETTING_SECRET(S, db, "db", "SQLQ_DB_CONNECTION", NULL,
                        "ODBC connection string of the database (Driver=…;Database=…: the databases and "
                        "their drivers are in docs/dialects.md)"),
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL,
                     "table to set up (schema.name); repeat --table or list tables as arguments; "
                     "without any, the tables of the config file's routes"),
    SQLQ_SETTING_STR(S, bridge_name, "bridge_name", "SQLQ_BRIDGE_NAME", NULL,
                     "with --drop: forget only this bridge's sync state and leases and keep the "
                     "change log; with --source logical: the bridge name whose replication slot "
                     "setup creates or --drop removes (default: default) (--bridge NAME is "
                     "accepted too)"),
    SQLQ_SETTING_BOOL(S, drop, "drop", NULL, "false",
                      "remove instead: every bridge's sync state and leases of the table, its "
                      "change log and triggers, and sqlq's schema once nothing is left in it "
                      "(change tracking stays on); with --source logical: the bridge name's "
                      "replication slot, and the publication once no slot of the table is left"),
    SQLQ_SETTING_BOOL(S, force, "force", NULL, "false",
                      "with --drop: drop even while a bridge instance works on the table (seen "
                      "within its lease), holds leases or has changes not delivered yet, which "
                      "--drop otherwise refuses, naming them; says what it discards"),
    SQLQ_SETTING_INT(S, retention_days, "change_retention_days", "SQLQ_CHANGE_RETENTION_DAYS", "2",
                     1, 3650,
                     "change tracking: CHANGE_RETENTION when setup turns change tracking on for the "
                     "database (left alone when it is on already)"),
    SQLQ_SETTING_ENUM(S, source, "source", "SQLQ_SOURCE", "auto",
                      "auto|change_log|change_tracking|cursor|logical",
                      "cursor: install nothing, check that --cursor-column is safe to poll and say "
                      "what a cursor cannot see (hard deletes); logical: a publication "
                      "and the bridge name's replication slot instead of triggers, after the "
                      "refusals (docs/logical-source.md)"),
    SQLQ_SETTING_STR(S, cursor_column, "cursor_column", "SQLQ_CURSOR_COLUMN", NULL,
                     "source cursor: the monotonic NOT NULL column (integer, version or timestamp)"),
    SQLQ_SETTING_STR(S, soft_delete_column, "soft_delete_column", "SQLQ_SOFT_DELETE_COLUMN", NULL,
                     "source cursor: rows with this column set are published as deletes"),
    SQLQ_SETTING_STR(S, key_columns, "key_columns", "SQLQ_KEY_COLUMNS", NULL,
                     "the columns that identify a row (comma-separated) when they are not the "
                     "primary key: a unique index or constraint on exactly them, NOT NULL; the "
                     "change log is keyed by them and the bridge keeps that key (one table at a "
                     "time; in a config file per route; not with change tracking)"),
    SQLQ_SETTING_BOOL(S, track_columns, "track_columns", "SQLQ_TRACK_COLUMNS", "false",
                      "change log: also keep which columns each update changed, for the bridge's "
                      "--changed (costs the trigger a comparison per column); stays until --drop "
                      "(--no-track-columns is refused: only --drop removes it); in a config "
                      "file per route too. Change tracking: turned on WITH (TRACK_COLUMNS_UPDATED = ON)"),
    SQLQ_SETTING_BOOL(S, before_image, "before_image", "SQLQ_BEFORE_IMAGE", "false",
                      "change log: also keep the row as it was before each update or delete, for "
                      "the bridge's --before-image (a copy of every column per change); stays "
                      "until --drop (--no-before-image is refused: only --drop removes it); in a "
                      "config file per route too; not with change tracking (it keeps no "
                      "old values)"),
    SQLQ_SETTING_ENUM(S, log_level, "log_level", "SQLQ_LOG_LEVEL", "warn",
                      "error|warn|info|debug|trace", "log level"),
    SQLQ_SETTING_ENUM(S, log_format, "log_format", "SQLQ_LOG_FORMAT", "text", "text|json",
                      "log line format"),
};
#undef S

static const sqlq_config_spec setup_spec = {
    "setup",
    "sqlq setup --db CONN --table T [--table T2 …] [--key-columns A,B] [--track-columns] [--before-image] [--drop [--bridge-name NAME] [--force]]",
    "Prepare tables for `sqlq bridge`: create sqlq's state tables, and per table install the\n"
    "change log (a log table and row triggers), or on a database that tracks changes itself turn\n"
    "its change tracking on (docs/dialects.md). Safe to run again: existing objects are kept,\n"
    "triggers are refreshed.\n"
    "Each bridge creates its own sync state and leases table when it first starts.\n"
    "With --source logical: a publication of the table and one replication slot\n"
    "per bridge name instead of triggers (docs/logical-source.md).\n"
    "Needs rights to create schemas, tables and triggers; the trigger sources do not capture\n"
    "TRUNCATE (the logical source stops a route before one: bridge --on-truncate).",
    setup_table,
    sizeof(setup_table) / sizeof(setup_table[0]),
    0,
    64,
};

const sqlq_config_spec *sqlq_cmd_setup_spec(void)
{
    return &setup_spec;
}

/* argv with "--bridge X" / "--bridge=X" spelled as --bridge-name (the brief's spelling). */
static char **translate_aliases(int argc, char **argv, char **owned)
{
    char **out = calloc((size_t)argc + 1, sizeof(char *));
    if (!out)
        return NULL;
    *owned = NULL;
    for (int i = 0; i < argc; i++) {
        out[i] = argv[i];
        if (strcmp(argv[i], "--bridge") == 0) {
            out[i] = "--bridge-name";
        } else if (strncmp(argv[i], "--bridge=", 9) == 0 && !*owned) {
            size_t n = strlen(argv[i]) + 6;
            *owned = malloc(n);
            if (*owned) {
                snprintf(*owned, n, "--bridge-name=%s", argv[i] + 9);
                out[i] = *owned;
            }
        }
    }
    return out;
}

/* --no-track-columns / --no-before-image: the options stay until --drop, so a "no" would
 * be ignored; refused instead (exit 2). Returns the flag given, NULL when none. */
static const char *negated_sticky_flag(int argc, char **argv)
{
    static const char *const flags[] = {"--no-track-columns", "--no-before-image"};
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        for (size_t j = 0; j < sizeof(flags) / sizeof(flags[0]); j++) {
            size_t n = strlen(flags[j]);
            if (strncmp(argv[i], flags[j], n) == 0 && (argv[i][n] == '\0' || argv[i][n] == '='))
                return flags[j];
        }
    return NULL;
}

/* Every --table value (the config loader keeps only the last), then arguments, then the
 * setting (environment or file), then the config file's routes. */
static size_t collect_tables(int argc, char **argv, const setup_settings *s,
                             const sqlq_config_result *res, const char **out, size_t max)
{
    size_t n = 0;
    for (int i = 1; i < argc && n < max; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--table") == 0 && i + 1 < argc)
            out[n++] = argv[++i];
        else if (strncmp(argv[i], "--table=", 8) == 0)
            out[n++] = argv[i] + 8;
    }
    for (size_t i = 0; i < res->npositional && n < max; i++)
        out[n++] = res->positional[i];
    if (n > 0)
        return n;
    if (s->table)
        out[n++] = s->table;
    json_t *routes = res->file ? json_object_get(res->file, "routes") : NULL;
    size_t i;
    json_t *route;
    json_array_foreach(routes, i, route) {
        const char *t = json_string_value(json_object_get(route, "table"));
        bool seen = false;
        for (size_t k = 0; t && k < n; k++)
            seen = seen || strcmp(out[k], t) == 0;
        if (t && !seen && n < max)
            out[n++] = t;
    }
    return n;
}

/* The key columns of one table: --key-columns (SQLQ_KEY_COLUMNS), else those of the config
 * file's route for that table; NULL: its change log's key or its primary key. */
static const char *key_columns_of(const setup_settings *s, const sqlq_config_result *res,
                                  const char *table)
{
    if (s->key_columns && *s->key_columns)
        return s->key_columns;
    json_t *routes = res->file ? json_object_get(res->file, "routes") : NULL;
    size_t i;
    json_t *route;
    json_array_foreach(routes, i, route) {
        const char *t = json_string_value(json_object_get(route, "table"));
        const char *k = json_string_value(json_object_get(route, "key_columns"));
        if (t && k && *k && strcmp(t, table) == 0)
            return k;
    }
    return NULL;
}

/* A boolean key of the config file's route for table (track_columns, before_image): the
 * route's value when it has one, else dflt (the flag, environment or top-level key). */
static bool route_bool_of(const sqlq_config_result *res, const char *table, const char *key,
                          bool dflt)
{
    json_t *routes = res->file ? json_object_get(res->file, "routes") : NULL;
    size_t i;
    json_t *route;
    json_array_foreach(routes, i, route) {
        const char *t = json_string_value(json_object_get(route, "table"));
        json_t *v = json_object_get(route, key);
        if (t && json_is_boolean(v) && strcmp(t, table) == 0 && json_is_true(v))
            return true;
    }
    return dflt;
}

/* A route key that is not true or false: the key, the value and what is allowed. */
static bool route_bools_ok(const sqlq_config_result *res)
{
    static const char *const keys[] = {"track_columns", "before_image"};
    json_t *routes = res->file ? json_object_get(res->file, "routes") : NULL;
    size_t i;
    json_t *route;
    json_array_foreach(routes, i, route) {
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            json_t *v = json_object_get(route, keys[k]);
            if (v && !json_is_boolean(v)) {
                char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                fprintf(stderr, "sqlq setup: config file routes[%zu] key %s: %s is not allowed "
                                "(true or false)\n",
                        i, keys[k], text ? text : "?");
                free(text);
                return false;
            }
        }
    }
    return true;
}

/* Every name printed (tables, bridges, indexes, columns: from the command line, a config file
 * or the database) goes through sqlq_term_text_name: an ESC or a newline in one is shown
 * escaped, never sent to the terminal. N(x) is x so escaped, in a buffer of the caller's. */
#define N(x, buf) sqlq_term_text_name((x), (buf), sizeof(buf))

static void print_error(const char *table, const sqlq_error *err)
{
    char raw[700], line[SQLQ_TERM_NAME_MAX], t[SQLQ_TERM_NAME_MAX];
    sqlq_error_format(err, raw, sizeof(raw));
    sqlq_term_text_line(raw, line, sizeof(line));
    fprintf(stderr, "sqlq setup: %s: %s\n", N(table, t), line);
}

/* Install (or with --drop remove) what the table's source needs, through the capture API;
 * prints what it did, and the error under the table's name. */
static int setup_one(sqlq_db *db, const char *table, const char *key_columns,
                     const setup_settings *s, const sqlq_change_log_options *opts)
{
    sqlq_capture_config cc;
    sqlq_capture_config_default(&cc);
    cc.table = table;
    cc.key_columns = key_columns;
    cc.bridge_name = s->drop && s->bridge_name ? s->bridge_name : cc.bridge_name;
    cc.source = strcmp(s->source, "cursor") == 0    ? SQLQ_SOURCE_CURSOR
                : strcmp(s->source, "logical") == 0 ? SQLQ_SOURCE_LOGICAL
                                                    : SQLQ_SOURCE_AUTO;
    if (cc.source == SQLQ_SOURCE_LOGICAL && s->bridge_name)
        cc.bridge_name = s->bridge_name; /* the slot is the bridge name's */
    cc.cursor_column = s->cursor_column;
    cc.soft_delete_column = s->soft_delete_column;
    sqlq_source_setup setup = {.cfg = &cc, .options = *opts,
                               .retention_days = (int)s->retention_days};
    if (s->drop && !s->bridge_name)
        cc.bridge_name = NULL; /* every bridge's state */
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = s->drop ? sqlq_capture_uninstall(db, &setup, &err)
                            : sqlq_capture_install(db, &setup, &err);
    size_t i;
    json_t *line;
    char shown[SQLQ_TERM_NAME_MAX]; /* names from outside in them: escaped (term_text.h) */
    json_array_foreach(setup.lines, i, line) {
        sqlq_term_text_line(json_string_value(line), shown, sizeof(shown));
        printf("%s\n", shown);
    }
    json_decref(setup.lines);
    if (r == SQLQ_OK)
        return SQLQ_EXIT_OK;
    print_error(setup.name[0] ? setup.name : table, &err);
    /* a key refused (none usable, or one the replica identity does not hold): a setting */
    bool usage = setup.usage || strcmp(err.reason, SQLQ_STOP_KEY_REFUSED) == 0;
    return usage ? SQLQ_EXIT_USAGE : SQLQ_EXIT_FAILED;
}

int sqlq_cmd_setup(int argc, char **argv)
{
    char *owned = NULL;
    char **args = translate_aliases(argc, argv, &owned);
    if (!args) {
        fprintf(stderr, "sqlq setup: out of memory\n");
        return SQLQ_EXIT_FAILED;
    }
    setup_settings s;
    memset(&s, 0, sizeof(s));
    sqlq_config_result res;
    int rc = sqlq_config_load_or_exit(&setup_spec, &s, argc, args, &res);
    const char *tables[64];
    char shown[SQLQ_TERM_NAME_MAX];
    size_t ntables = 0;
    const char *negated = rc < 0 ? negated_sticky_flag(argc, args) : NULL;
    if (negated)
        rc = SQLQ_EXIT_USAGE,
        fprintf(stderr, "sqlq setup: %s is not allowed: --track-columns and --before-image stay "
                        "until the change log is removed, and only --drop removes them (sqlq setup "
                        "--drop --table T, then setup again without them)\n",
                negated);
    if (rc < 0) {
        sqlq_common_settings common = {.log_level = s.log_level, .log_format = s.log_format};
        sqlq_common_settings_apply(&common);
        ntables = collect_tables(argc, args, &s, &res, tables, 64);
        if (!s.db || !*s.db)
            rc = SQLQ_EXIT_USAGE,
            fprintf(stderr, "sqlq setup: no database: give --db CONN or set SQLQ_DB_CONNECTION\n");
        else if (ntables == 0)
            rc = SQLQ_EXIT_USAGE, fprintf(stderr, "sqlq setup: no table: give --table T\n");
        else if (!s.drop && strcmp(s.source, "cursor") == 0 && (!s.cursor_column || !*s.cursor_column))
            rc = SQLQ_EXIT_USAGE,
            fprintf(stderr, "sqlq setup: --source cursor needs --cursor-column COLUMN\n");
        else if (s.key_columns && *s.key_columns && ntables > 1)
            rc = SQLQ_EXIT_USAGE,
            fprintf(stderr, "sqlq setup: key key_columns: '%s' is not allowed with %zu tables (one "
                            "table at a time, or key_columns per route in the config file)\n",
                    N(s.key_columns, shown), ntables);
        else if (s.force && !s.drop)
            rc = SQLQ_EXIT_USAGE,
            fprintf(stderr, "sqlq setup: --force is for --drop (it drops even what is not "
                            "delivered yet)\n");
        else if (!route_bools_ok(&res))
            rc = SQLQ_EXIT_USAGE;
        else if ((s.track_columns || s.before_image) && (s.drop || strcmp(s.source, "cursor") == 0) &&
                 strcmp(s.source, "logical") != 0)
            rc = SQLQ_EXIT_USAGE,
            fprintf(stderr, "sqlq setup: --track-columns and --before-image are for installing a "
                            "change log (not with --drop or --source cursor)\n");
    }
    sqlq_db *db = NULL;
    if (rc < 0) {
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_db_connect(s.db, &db, &err) != SQLQ_OK) {
            char raw[700], line[SQLQ_TERM_NAME_MAX];
            sqlq_error_format(&err, raw, sizeof(raw));
            fprintf(stderr, "sqlq setup: cannot connect: %s\n", N(raw, line));
            rc = SQLQ_EXIT_FAILED;
        }
    }
    const char *no_before = rc < 0 && s.before_image
                                ? sqlq_capture_no_before_image(db, SQLQ_SOURCE_AUTO)
                                : NULL;
    if (no_before)
        rc = SQLQ_EXIT_USAGE, fprintf(stderr, "sqlq setup: --before-image: %s\n", no_before);
    if (rc < 0) {
        rc = SQLQ_EXIT_OK;
        bool installed = false; /* some table's capture is in place: the session warnings apply */
        for (size_t i = 0; i < ntables; i++) {
            sqlq_change_log_options opts = {
                route_bool_of(&res, tables[i], "track_columns", s.track_columns),
                route_bool_of(&res, tables[i], "before_image", s.before_image)};
            bool cursor = strcmp(s.source, "cursor") == 0;
            int one = s.drop && !cursor && sqlq_setup_drop_guard(db, tables[i], s.bridge_name,
                                                                 s.force) != SQLQ_EXIT_OK
                          ? SQLQ_EXIT_FAILED
                          : setup_one(db, tables[i], key_columns_of(&s, &res, tables[i]), &s,
                                      &opts);
            if (one != SQLQ_EXIT_OK)
                rc = one;
            else
                installed = true;
        }
        if (!s.drop && installed)
            sqlq_catalog_setup_warn(db);
        bool left = true;
        sqlq_error err;
        sqlq_error_clear(&err);
        if (s.drop && rc == SQLQ_EXIT_OK && sqlq_catalog_exists(db, &left, &err) == SQLQ_OK && !left)
            printf("nothing of sqlq is left in this database\n");
    }
    sqlq_db_close(db);
    sqlq_config_free(&setup_spec, &s, &res);
    free(args);
    free(owned);
    return rc;
}
