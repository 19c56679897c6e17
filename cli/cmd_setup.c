/* cmd_setup: `sqlq setup`: install (or with --drop remove) what change capture needs in the
 * database: sqlq's schema and state tables, and per table the change log and its triggers
 * (SQLite, PostgreSQL) or change tracking (SQL Server). Idempotent; says what it did. */
#include "capture.h"
#include "catalog.h"
#include "change_log.h"
#include "commands.h"
#include "setup_logical.h"
#include "config.h"
#include "ct_query.h"
#include "cursor_state.h"
#include "db.h"
#include "log.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct setup_settings {
    char *db;
    char *table;
    char *bridge_name;
    bool drop;
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
                        "ODBC connection string of the database (Driver={SQLite3};Database=…, "
                        "PostgreSQL, MariaDB/MySQL or SQL Server)"),
    SQLQ_SETTING_STR(S, table, "table", "SQLQ_TABLE", NULL,
                     "table to set up (schema.name); repeat --table or list tables as arguments; "
                     "without any, the tables of the config file's routes"),
    SQLQ_SETTING_STR(S, bridge_name, "bridge_name", "SQLQ_BRIDGE_NAME", NULL,
                     "with --drop: forget only this bridge's sync state and leases and keep the "
                     "change log (--bridge NAME is accepted too)"),
    SQLQ_SETTING_BOOL(S, drop, "drop", NULL, "false",
                      "remove instead: every bridge's sync state and leases of the table, its "
                      "change log and triggers, and sqlq's schema once nothing is left in it "
                      "(SQL Server: change tracking stays on)"),
    SQLQ_SETTING_INT(S, retention_days, "change_retention_days", "SQLQ_CHANGE_RETENTION_DAYS", "2",
                     1, 3650,
                     "SQL Server: CHANGE_RETENTION when setup turns change tracking on for the "
                     "database (left alone when it is on already)"),
    SQLQ_SETTING_ENUM(S, source, "source", "SQLQ_SOURCE", "auto",
                      "auto|change_log|change_tracking|cursor|logical",
                      "cursor: install nothing, check that --cursor-column is safe to poll and say "
                      "what a cursor cannot see (hard deletes); logical: PostgreSQL's publication "
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
                     "time; in a config file per route; not on SQL Server)"),
    SQLQ_SETTING_BOOL(S, track_columns, "track_columns", "SQLQ_TRACK_COLUMNS", "false",
                      "change log: also keep which columns each update changed, for the bridge's "
                      "--changed (costs the trigger a comparison per column); stays until --drop "
                      "(--no-track-columns is refused: only --drop removes it); in a config "
                      "file per route too. SQL Server: change tracking turned on WITH (TRACK_COLUMNS_UPDATED = ON)"),
    SQLQ_SETTING_BOOL(S, before_image, "before_image", "SQLQ_BEFORE_IMAGE", "false",
                      "change log: also keep the row as it was before each update or delete, for "
                      "the bridge's --before-image (a copy of every column per change); stays "
                      "until --drop (--no-before-image is refused: only --drop removes it); in a "
                      "config file per route too; not on SQL Server (change tracking keeps no "
                      "old values)"),
    SQLQ_SETTING_ENUM(S, log_level, "log_level", "SQLQ_LOG_LEVEL", "warn",
                      "error|warn|info|debug|trace", "log level"),
    SQLQ_SETTING_ENUM(S, log_format, "log_format", "SQLQ_LOG_FORMAT", "text", "text|json",
                      "log line format"),
};
#undef S

static const sqlq_config_spec setup_spec = {
    "setup",
    "sqlq setup --db CONN --table T [--table T2 …] [--key-columns A,B] [--track-columns] [--before-image] [--drop [--bridge-name NAME]]",
    "Prepare tables for `sqlq bridge`: create sqlq's state tables, and per table install the\n"
    "change log (a log table and row triggers: SQLite, PostgreSQL, MariaDB/MySQL) or turn change\n"
    "tracking on (SQL Server). Safe to run again: existing objects are kept, triggers are\n"
    "refreshed.\n"
    "Each bridge creates its own sync state and leases table when it first starts.\n"
    "Needs rights to create schemas, tables and triggers; TRUNCATE is not captured.",
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

static void print_error(const char *table, const sqlq_error *err)
{
    char line[700];
    sqlq_error_format(err, line, sizeof(line));
    fprintf(stderr, "sqlq setup: %s: %s\n", table, line);
}

/* --track-columns on SQL Server: the table tracked WITH (TRACK_COLUMNS_UPDATED = ON) when
 * setup turns its change tracking on; a table tracked without it stays so, and is an error. */
static sqlq_result ct_track_columns(sqlq_db *db, const sqlq_table *t, sqlq_error *err)
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
                           "CHANGE_TRACKING first (changes not yet delivered are lost: drain them), "
                           "then this setup again",
                           t->name.name, quoted);
    free(quoted);
    return r;
}

static int enable_change_tracking(sqlq_db *db, const sqlq_table *t, const char *key, int days,
                                  bool track_columns)
{
    char *on_db = NULL, *on_table = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_ct_enable_sql(&t->name, days, &on_db, &on_table, &err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, on_db, NULL, 0, NULL, &err);
    if (r == SQLQ_OK && track_columns)
        r = ct_track_columns(db, t, &err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, on_table, NULL, 0, NULL, &err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_ensure(db, &err);
    free(on_db);
    free(on_table);
    if (r != SQLQ_OK) {
        print_error(key, &err);
        return SQLQ_EXIT_FAILED;
    }
    printf("%s: change tracking on (database and table%s); state tables in schema sqlq\n", key,
           track_columns ? ", tracking columns updated" : "");
    return SQLQ_EXIT_OK;
}

/* PostgreSQL: a role named like sqlq's schema finds that schema first on the default
 * search_path ("$user", public), so its unqualified names resolve into sqlq's objects. What
 * counts is this session's search_path as the server set it (ALTER ROLE … SET search_path
 * included): an entry "$user" while the role is sqlq, or sqlq itself (quoted or not). Parsed
 * here, not by current_schemas(), which leaves out schema sqlq before the first setup. */
static void warn_role_named_schema(sqlq_db *db)
{
    if (strcmp(sqlq_db_dialect(db)->name, "postgres") != 0)
        return;
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t same = 0;
    if (sqlq_db_query_int(
            db,
            "SELECT count(*) FROM unnest(string_to_array(current_setting('search_path'), ',')) "
            "AS p(e) WHERE CASE WHEN btrim(e) IN ('\"$user\"', '$user') THEN "
            "CAST(current_user AS text) WHEN btrim(e) LIKE '\"%\"' THEN "
            "replace(substr(btrim(e), 2, length(btrim(e)) - 2), '\"\"', '\"') "
            "ELSE lower(btrim(e)) END = 'sqlq'",
            NULL, 0, &same, &err) == SQLQ_OK &&
        same > 0)
        SQLQ_WARN("role_named_like_schema",
                  "role=sqlq schema=sqlq note=\"this session's search_path (the default: "
                  "\\\"$user\\\", public) resolves the role's unqualified names into sqlq's "
                  "schema (its registry, new tables): connect as a role with another name, or "
                  "ALTER ROLE sqlq SET search_path = public\"");
}

/* What the log keeps beyond the key, as setup reports it. */
static const char *options_text(const sqlq_change_log_options *o)
{
    if (o->track_columns && o->before_image)
        return "; keeps changed columns and before images";
    if (o->track_columns)
        return "; keeps changed columns";
    return o->before_image ? "; keeps before images" : "";
}

static int install_one(sqlq_db *db, const char *table, const char *key_columns,
                       int retention_days, const sqlq_change_log_options *opts)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    sqlq_result r = sqlq_catalog_lookup_keyed(db, table, NULL, key_columns, &t, &n, &err);
    if (r != SQLQ_OK) { /* no usable key: the user must name one (exit 2, like a usage error) */
        print_error(table, &err);
        return r == SQLQ_E_INVALID || r == SQLQ_E_UNSUPPORTED ? SQLQ_EXIT_USAGE
                                                              : SQLQ_EXIT_FAILED;
    }
    if (t->key_index)
        printf("%s: keyed by unique index %s\n", n.table_key, t->key_index);
    const sqlq_dialect *d = sqlq_db_dialect(db);
    int rc = SQLQ_EXIT_OK;
    bool before = false;
    char objects[512];
    sqlq_change_log_options kept = *opts;
    if (d->capture_shape == SQLQ_CAPTURE_CHANGE_TRACKING && opts->before_image)
        rc = SQLQ_EXIT_USAGE,
        fprintf(stderr, "sqlq setup: %s: key before_image: SQL Server change tracking keeps no old "
                        "values; before images need a change log (PostgreSQL, SQLite, "
                        "MariaDB/MySQL)\n", n.table_key);
    else if (d->capture_shape == SQLQ_CAPTURE_CHANGE_TRACKING)
        rc = enable_change_tracking(db, t, n.table_key, retention_days, opts->track_columns);
    else if ((r = sqlq_change_log_installed(db, t, &before, &err)) != SQLQ_OK ||
             (r = sqlq_change_log_install_with(db, t, opts, &err)) != SQLQ_OK ||
             (r = sqlq_change_log_options_found(db, t, n.log_table, &kept, &err)) != SQLQ_OK) {
        /* what the table or the options ask for cannot be (a name too long for its
         * before-image column, a log another table has, …): the operator's input, like a
         * usage error */
        rc = r == SQLQ_E_INVALID || r == SQLQ_E_UNSUPPORTED || r == SQLQ_E_CONFLICT
                 ? SQLQ_EXIT_USAGE
                 : SQLQ_EXIT_FAILED;
        print_error(n.table_key, &err);
    } else {
        sqlq_change_log_objects(d, &n, objects, sizeof(objects));
        printf("%s: change log %s: %s%s\n", n.table_key,
               before ? "already installed (triggers refreshed)" : "installed", objects,
               options_text(&kept));
        if (kept.track_columns || kept.before_image)
            SQLQ_WARN("triggers_name_columns",
                      "table=%s note=\"the triggers of --track-columns/--before-image name every "
                      "column: after ALTER TABLE ADD, DROP, RENAME COLUMN or ALTER COLUMN TYPE "
                      "run sqlq setup --table %s again at once; until then writes that reach a "
                      "dropped or renamed column, or a value the copy's old type cannot hold, "
                      "fail in the trigger (PostgreSQL, MariaDB/MySQL) and SQLite refuses the "
                      "DROP (docs/capture.md)\"",
                      n.table_key, n.table_key);
    }
    sqlq_table_free(t);
    return rc;
}

/* The cursor source installs nothing: check the column and say plainly what it cannot see. */
static int cursor_one(sqlq_db *db, const char *table, const char *key_columns,
                      const setup_settings *s)
{
    sqlq_capture_config cc;
    sqlq_capture_config_default(&cc);
    cc.table = table;
    cc.source = SQLQ_SOURCE_CURSOR;
    cc.cursor_column = s->cursor_column;
    cc.soft_delete_column = s->soft_delete_column;
    cc.key_columns = key_columns;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_capture_check(db, &cc, &err) != SQLQ_OK) {
        print_error(table, &err);
        return SQLQ_EXIT_FAILED;
    }
    printf("%s: cursor source on column %s: nothing installed in the table (read access is enough; "
           "the bridge keeps its checkpoint in sqlq's state tables)\n",
           table, s->cursor_column);
    if (s->soft_delete_column)
        printf("%s: note: hard deletes (DELETE) are NOT visible to a cursor; rows with %s set are "
               "published as deletes\n",
               table, s->soft_delete_column);
    else
        printf("%s: note: deletes are NOT visible to a cursor: use a soft-delete column "
               "(--soft-delete-column) or the change log (sqlq setup without --source cursor)\n",
               table);
    printf("%s: note: rows committed later than --safety-lag-ms after their cursor value are "
           "never read (see docs/cursor-source.md)\n",
           table);
    return SQLQ_EXIT_OK;
}

/* --drop --source cursor: forget the cursor checkpoints of the table (of one bridge). */
static int cursor_drop(sqlq_db *db, const char *table, const char *bridge)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    long long removed = 0;
    sqlq_result r = sqlq_catalog_lookup_keyed(db, table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &n, &err);
    if (r == SQLQ_OK)
        r = sqlq_cursor_state_forget(db, n.table_key, bridge, &removed, &err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_drop_if_unused(db, NULL, &err);
    sqlq_table_free(t);
    if (r != SQLQ_OK) {
        print_error(table, &err);
        return SQLQ_EXIT_FAILED;
    }
    printf("%s: %lld cursor checkpoint%s removed (nothing was installed in the table)\n", table,
           removed, removed == 1 ? "" : "s");
    return SQLQ_EXIT_OK;
}

static int drop_one(sqlq_db *db, const char *table, const char *bridge)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    size_t forgotten = 0;
    if (sqlq_catalog_lookup_keyed(db, table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &n, &err) != SQLQ_OK ||
        sqlq_capture_forget(db, table, bridge, &forgotten, &err) != SQLQ_OK) {
        print_error(table, &err);
        sqlq_table_free(t);
        return SQLQ_EXIT_FAILED;
    }
    if (bridge)
        printf("%s: sync state and leases of bridge %s %s\n", n.table_key, bridge,
               forgotten ? "removed" : "not found (nothing to remove)");
    else
        printf("%s: sync state and leases of %zu bridge%s removed\n", n.table_key, forgotten,
               forgotten == 1 ? "" : "s");
    int rc = SQLQ_EXIT_OK;
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (!bridge && d->capture_shape != SQLQ_CAPTURE_CHANGE_TRACKING) {
        bool shared = false;
        if (sqlq_change_log_drop(db, t, &shared, &err) != SQLQ_OK)
            rc = SQLQ_EXIT_FAILED, print_error(n.table_key, &err);
        else if (shared)
            printf("%s: triggers removed; change log %s%s kept: it is registered to another "
                   "table too (see the warning)\n",
                   n.table_key, d->object_prefix, n.log_table);
        else
            printf("%s: change log and triggers removed\n", n.table_key);
    } else if (!bridge) {
        if (sqlq_catalog_drop_if_unused(db, NULL, &err) != SQLQ_OK)
            rc = SQLQ_EXIT_FAILED, print_error(n.table_key, &err);
        printf("%s: change tracking left on (ALTER TABLE … DISABLE CHANGE_TRACKING turns it off)\n",
               n.table_key);
    }
    sqlq_table_free(t);
    return rc;
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
                    s.key_columns, ntables);
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
            char line[700];
            sqlq_error_format(&err, line, sizeof(line));
            fprintf(stderr, "sqlq setup: cannot connect: %s\n", line);
            rc = SQLQ_EXIT_FAILED;
        }
    }
    if (rc < 0 && s.before_image && sqlq_db_dialect(db)->capture_shape == SQLQ_CAPTURE_CHANGE_TRACKING)
        rc = SQLQ_EXIT_USAGE,
        fprintf(stderr, "sqlq setup: --before-image: SQL Server change tracking keeps no old values; "
                        "before images need a change log (PostgreSQL, SQLite, MariaDB/MySQL)\n");
    if (rc < 0) {
        rc = SQLQ_EXIT_OK;
        if (!s.drop)
            warn_role_named_schema(db);
        for (size_t i = 0; i < ntables; i++) {
            bool cursor = strcmp(s.source, "cursor") == 0;
            bool logical = strcmp(s.source, "logical") == 0;
            const char *keys = key_columns_of(&s, &res, tables[i]);
            sqlq_change_log_options opts = {
                route_bool_of(&res, tables[i], "track_columns", s.track_columns),
                route_bool_of(&res, tables[i], "before_image", s.before_image)};
            int one = logical ? sqlq_setup_logical(db, tables[i], keys, s.bridge_name,
                                                   opts.before_image || opts.track_columns, s.drop)
                      : s.drop && cursor ? cursor_drop(db, tables[i], s.bridge_name)
                      : s.drop         ? drop_one(db, tables[i], s.bridge_name)
                      : cursor
                          ? cursor_one(db, tables[i], keys, &s)
                          : install_one(db, tables[i], keys, (int)s.retention_days, &opts);
            if (one != SQLQ_EXIT_OK)
                rc = one;
        }
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
