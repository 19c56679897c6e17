/* sqlite_dialect: SQLite as sqlq speaks it (the table is described in dialect.h; what a new
 * dialect must provide is in docs/dialects.md). */
#include "dialect.h"
#include "dialect_parts.h"
#include "cursor_source.h"
#include "sqlite_internal.h"

#include <sqlext.h>

/* Integer arithmetic on strftime (%f = SS.SSS): exact milliseconds on every SQLite 3; 'now' is
 * the same instant for the whole statement. */
#define NOW_MS                                                                                     \
    "(CAST(strftime('%s', 'now') AS INTEGER) * 1000 + "                                            \
    "CAST(substr(strftime('%f', 'now'), 4, 3) AS INTEGER))"

static const char *const CATALOG_CREATE[] = {
    "CREATE TABLE IF NOT EXISTS sqlq_tables (kind TEXT NOT NULL, bridge_name TEXT NOT NULL, "
    "table_name TEXT NOT NULL, object_name TEXT NOT NULL, created_ms INTEGER NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))",
    "CREATE TABLE IF NOT EXISTS sqlq_state (bridge_name TEXT NOT NULL, table_name TEXT NOT NULL, "
    "sync_version INTEGER NOT NULL, updated_ms INTEGER NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name))",
    /* version: the floor of the change logs' versions (raised by setup and drop; the triggers
     * of an earlier sqlq bumped it per change). lease_token numbers lease grants (fencing). */
    "CREATE TABLE IF NOT EXISTS sqlq_counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO sqlq_counter (name, value) VALUES ('version', 0), ('lease_token', 0)",
    NULL};

static const char *const CATALOG_DROP[] = {
    "DROP TABLE IF EXISTS sqlq_cursor_state", "DROP TABLE IF EXISTS sqlq_tables",
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

/* What --source picks from, the first for auto. */
static const sqlq_change_source_ops *const SOURCES[] = {&sqlq_sqlite_log_source, &sqlq_cursor_change_source,
                                                      NULL};

const sqlq_dialect sqlq_dialect_sqlite = {
    .name = "sqlite",
    .title = "SQLite",
    .dbms_name = "SQLite",

    .session_sql = NULL,
    .serial_writer = true,
    .wide_text = false,
    .drop_if_exists = true,
    .long_binary_over = 0,

    .dynamic_types = true,
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
    .key_type = sqlq_catalog_key_type_sqlite,
    .registry_upsert_head = "INSERT INTO ",
    .registry_upsert_tail =
        " (kind, bridge_name, table_name, object_name, created_ms) VALUES (?, ?, ?, ?, " NOW_MS
        ") ON CONFLICT (kind, bridge_name, table_name) DO UPDATE SET object_name = "
        "excluded.object_name",

    .describe_sql = DESCRIBE_SQL,
    .schema_known_sql = "SELECT count(*) FROM pragma_database_list WHERE name = ?",
    .describe_params = sqlq_table_describe_params_sqlite,
    .sql_type = sqlq_table_sql_type_sqlite,
    .unique_keys_sql = UNIQUE_KEYS_SQL,

    .cursor_state_create = CURSOR_STATE_CREATE,
    .cursor_lag_rule_exists = "SELECT count(*) FROM pragma_table_info('sqlq_cursor_state') "
                              "WHERE name = 'lag_rule'",
    .cursor_lag_rule_add = "ALTER TABLE sqlq_cursor_state ADD COLUMN lag_rule TEXT",

    .sources = SOURCES,

    .lag_shape = SQLQ_LAG_JULIANDAY,
    .rowversion = false,
    .row_values = true,
    .keyset_value_sql = sqlq_keyset_value_sql_sqlite,
    .keyset_param_sql = sqlq_keyset_param_sql_plain,

    .upsert_sql = sqlq_upsert_sql_on_conflict,
    .upsert_excluded = "excluded.",
    .limit_top = false,
    .version_guard_create_sql = sqlq_version_guard_create_sql_if_not_exists,
    .version_guard_claim_sql = sqlq_version_guard_claim_sql_on_conflict,
};
