/* sqlite_dialect: SQLite as sqlq speaks it (the table is described in dialect.h; what a new
 * dialect must provide is in docs/dialects.md). */
#include "dialect.h"
#include "dialect_parts.h"
#include "cursor_source.h"
#include "sqlite_internal.h"

#include <ctype.h>
#include <sqlext.h>
#include <stdlib.h>
#include <string.h>

/* Integer arithmetic on strftime (%f = SS.SSS): exact milliseconds on every SQLite 3; 'now' is
 * the same instant for the whole statement. */
#define NOW_MS                                                                                     \
    "(CAST(strftime('%s', 'now') AS INTEGER) * 1000 + "                                            \
    "CAST(substr(strftime('%f', 'now'), 4, 3) AS INTEGER))"

/* Microseconds since 1970 on the same clock: the first version floor of a new catalog. */
#define NOW_US                                                                                     \
    "(CAST(strftime('%s', 'now') AS INTEGER) * 1000000 + "                                         \
    "CAST(substr(strftime('%f', 'now'), 4, 3) AS INTEGER) * 1000)"

static const char *const CATALOG_CREATE[] = {
    "CREATE TABLE IF NOT EXISTS sqlq_tables (kind TEXT NOT NULL, bridge_name TEXT NOT NULL, "
    "table_name TEXT NOT NULL, object_name TEXT NOT NULL, created_ms INTEGER NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))",
    "CREATE TABLE IF NOT EXISTS sqlq_state (bridge_name TEXT NOT NULL, table_name TEXT NOT NULL, "
    "sync_version INTEGER NOT NULL, updated_ms INTEGER NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name))",
    /* the bridge instances working on a table (capture_presence.h) */
    "CREATE TABLE IF NOT EXISTS sqlq_instances (bridge_name TEXT NOT NULL, table_name TEXT NOT "
    "NULL, instance_id TEXT NOT NULL, seen_until_ms INTEGER NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name, instance_id))",
    /* what each instance published lately (capture_presence.h) */
    "CREATE TABLE IF NOT EXISTS sqlq_instance_rates (bridge_name TEXT NOT NULL, table_name TEXT "
    "NOT NULL, instance_id TEXT NOT NULL, per_s REAL NOT NULL, queues TEXT NOT NULL, "
    "seen_until_ms INTEGER NOT NULL, PRIMARY KEY (bridge_name, table_name, instance_id))",
    /* version: the floor of the change logs' versions (raised by setup and drop; the triggers
     * of an earlier sqlq bumped it per change), first the clock in microseconds: a catalog made
     * again after every log was dropped starts above the versions those logs handed out
     * (docs/capture.md, Versions). lease_token numbers lease grants (fencing). */
    "CREATE TABLE IF NOT EXISTS sqlq_counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO sqlq_counter (name, value) VALUES ('version', " NOW_US "), "
    "('lease_token', 0)",
    NULL};

static const char *const CATALOG_DROP[] = {
    "DROP TABLE IF EXISTS sqlq_cursor_state", "DROP TABLE IF EXISTS sqlq_instances",
    "DROP TABLE IF EXISTS sqlq_instance_rates",
    "DROP TABLE IF EXISTS sqlq_tables",
    "DROP TABLE IF EXISTS sqlq_state", "DROP TABLE IF EXISTS sqlq_counter", NULL};

static const char DESCRIBE_SQL[] =
    "SELECT ? AS schema_name, ? AS table_name, name AS column_name, type AS type_name, "
    "CASE WHEN \"notnull\" THEN 0 ELSE 1 END AS nullable, pk AS key_pos "
    "FROM pragma_table_info(?, ?) ORDER BY cid";

/* Unique indexes (table_key.c): a partial one is not usable; an expression column has no name. */
static const char UNIQUE_KEYS_SQL[] =
    "SELECT il.name AS index_name, ii.seqno + 1 AS seq, ii.name AS column_name, "
    "0 AS nulls_equal, CASE WHEN il.partial THEN 0 ELSE 1 END AS usable "
    "FROM pragma_index_list(?, ?) il JOIN pragma_index_info(il.name, ?) ii "
    "WHERE il.\"unique\" = 1 ORDER BY il.name, ii.seqno";

static const char CURSOR_STATE_CREATE[] =
    "CREATE TABLE IF NOT EXISTS sqlq_cursor_state (bridge_name TEXT NOT NULL, "
    "table_name TEXT NOT NULL, cursor_value TEXT, key_json TEXT, "
    "batch_id INTEGER NOT NULL DEFAULT 0, rows_done INTEGER NOT NULL DEFAULT 0, "
    "run_id INTEGER NOT NULL DEFAULT 0, finished INTEGER NOT NULL DEFAULT 0, "
    "lease_owner TEXT, lease_token INTEGER NOT NULL DEFAULT 0, "
    "lease_expires_ms INTEGER NOT NULL DEFAULT 0, updated_ms INTEGER NOT NULL DEFAULT 0, "
    "lag_rule TEXT, PRIMARY KEY (bridge_name, table_name))";

static sqlq_result describe_params(const sqlq_dialect *d, const sqlq_table_name *name,
                                              sqlq_buf *quoted, sqlq_param *params, size_t *nparams)
{
    (void)d;
    (void)quoted;
    const char *schema = name->schema[0] ? name->schema : "main";
    params[0] = sqlq_param_text(schema);
    params[1] = sqlq_param_text(name->name);
    params[2] = sqlq_param_text(name->name);
    params[3] = sqlq_param_text(schema);
    *nparams = 4;
    return SQLQ_OK;
}

static bool has(const char *s, const char *word)
{
    return strstr(s, word) != NULL;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* SQLite: the declared type decides its affinity by substrings (sqlite.org/datatype3.html);
 * the common names it does not know (bool, date, time, uuid) are checked first. */
static short sql_type(const char *t)
{
    if (has(t, "bool"))
        return SQL_BIT;
    if (has(t, "timestamp") || has(t, "datetime"))
        return SQL_TYPE_TIMESTAMP;
    if (starts(t, "date"))
        return SQL_TYPE_DATE;
    if (starts(t, "time"))
        return SQL_TYPE_TIME;
    if (has(t, "uuid") || has(t, "guid"))
        return SQL_GUID;
    if (has(t, "int"))
        return has(t, "big") ? SQL_BIGINT : SQL_INTEGER;
    if (has(t, "char") || has(t, "clob") || has(t, "text"))
        return SQL_VARCHAR;
    if (has(t, "blob") || t[0] == '\0')
        return SQL_VARBINARY;
    if (has(t, "real") || has(t, "floa") || has(t, "doub"))
        return SQL_DOUBLE;
    return SQL_NUMERIC;
}

/* A SQLite declared type pasted into DDL: words, optionally with (n) or (n, m). Anything else
 * (it came from the user's own DDL) is dropped: the column then has no declared type, which
 * in SQLite only changes affinity, and values copied from the log keep their storage class. */
static bool safe_type(const char *t)
{
    const char *p = t;
    while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == ' '))
        p++;
    if (*p == '(') {
        for (p++; *p && (isdigit((unsigned char)*p) || *p == ',' || *p == ' ' || *p == '+' ||
                         *p == '-');
             p++)
            ;
        if (*p++ != ')')
            return false;
    }
    return *p == '\0' && strlen(t) < 64;
}

static char *key_type(json_t *row)
{
    const char *t = json_string_value(json_object_get(row, "t"));
    return strdup(t && safe_type(t) ? t : "");
}

static sqlq_result keyset_value_sql(const sqlq_keyset_col *c, sqlq_buf *out)
{
    const sqlq_dialect *d = &sqlq_dialect_sqlite;
    /* SQLite: integers and text as they are; everything else as its stored text, which is
     * what the comparison sees (SQLite compares the stored values, not a parsed time). */
    if (c->cls == SQLQ_VALUE_INT || c->cls == SQLQ_VALUE_TEXT)
        return sqlq_dialect_quote_ident(d, c->name, out);
    sqlq_result r = sqlq_buf_adds(out, "CAST(");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " AS TEXT)");
    return r;
}

/* What --source picks from, the first for auto. */
/* SQLITE_CONSTRAINT (native 19, SQLSTATE HY000) for every constraint: the words name the kind. */
static bool sqlite_row_rejected(const sqlq_error *e)
{
    return e->native_code == 19 &&
           (strstr(e->message, "NOT NULL constraint failed") || strstr(e->message, "CHECK constraint failed"));
}

static const sqlq_change_source_ops *const SOURCES[] = {&sqlq_sqlite_log_source, &sqlq_cursor_change_source,
                                                      NULL};

const sqlq_dialect sqlq_dialect_sqlite = {
    .name = "sqlite",
    .columns_at_prepare = true, /* sqliteodbc: "broken result set" after ALTER TABLE */
    .title = "SQLite",
    .dbms_name = "SQLite",
    .file_driver = "sqlite", /* sqliteodbc creates a missing database file */

    .session_sql = NULL,
    .serial_writer = true,
    .wide_text = false,
    .drop_if_exists = true,
    .long_binary_over = 0,

    .dynamic_types = true,
    .row_rejected = sqlite_row_rejected,
    .tz_text_in_utc = false,
    .exact_time_text = false,
    .bool_as_text = false,

    .ident_open = '"',
    .ident_close = '"',
    .literal_prefix = "",
    .literal_backslash_e = false,
    .schemas = false,
    .home_schema = "",
    .folds_case = false,
    .names_ignore_case = true,
    .key_may_be_null = true,
    .object_prefix = "sqlq_",
    .text_any_length = "TEXT",
    .add_column = "ADD COLUMN ",
    .create_if_not_exists = true,
    .insert_ignore_head = "INSERT OR IGNORE INTO ",
    .insert_ignore_tail = "",

    .now_ms = NOW_MS,

    .catalog_create = CATALOG_CREATE,
    .catalog_drop = CATALOG_DROP,
    .catalog_token_object = "counter",
    .ddl_lock_sql = NULL, /* BEGIN IMMEDIATE holds the only write lock */
    .object_exists_sql = "SELECT count(*) FROM sqlite_master WHERE name = 'sqlq_' || ?",
    .schema_exists_sql = NULL,
    .schema_create_sql = NULL,
    .resolve_sql = "SELECT '' AS s, name AS n FROM sqlite_master WHERE type = 'table' "
                   "AND name = ? COLLATE NOCASE",
    .resolve_nparams = 1,
    .column_exists_sql = "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?",
    .key_types_sql = "SELECT name AS n, type AS t FROM pragma_table_info(?)",
    .key_type = key_type,
    .registry_upsert_head = "INSERT INTO ",
    .registry_upsert_tail =
        " (kind, bridge_name, table_name, object_name, created_ms) VALUES (?, ?, ?, ?, " NOW_MS
        ") ON CONFLICT (kind, bridge_name, table_name) DO UPDATE SET object_name = "
        "excluded.object_name",

    .describe_sql = DESCRIBE_SQL,
    .schema_known_sql = "SELECT count(*) FROM pragma_database_list WHERE name = ?",
    .describe_params = describe_params,
    .sql_type = sql_type,
    .unique_keys_sql = UNIQUE_KEYS_SQL,

    .cursor_state_create = CURSOR_STATE_CREATE,
    .cursor_lag_rule_exists = "SELECT count(*) FROM pragma_table_info('sqlq_cursor_state') "
                              "WHERE name = 'lag_rule'",
    .cursor_lag_rule_add = "ALTER TABLE sqlq_cursor_state ADD COLUMN lag_rule TEXT",

    .sources = SOURCES,

    .lag_syntax = SQLQ_LAG_JULIANDAY,
    .rowversion = false,
    .row_values = true,
    .keyset_value_sql = keyset_value_sql,
    .keyset_param_sql = sqlq_keyset_param_sql_plain,

    .upsert_sql = sqlq_upsert_sql_on_conflict,
    .upsert_excluded = "excluded.",
    .limit_top = false,
    .version_guard_create_sql = sqlq_version_guard_create_sql_if_not_exists,
    .version_guard_claim_sql = sqlq_version_guard_claim_sql_on_conflict,
};
