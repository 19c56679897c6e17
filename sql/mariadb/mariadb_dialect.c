/* mariadb_dialect: MariaDB and MySQL as sqlq speaks them (the table is described in dialect.h;
 * what a new dialect must provide is in docs/dialects.md).
 *
 * sqlq's objects live in a database named sqlq (a MySQL schema is a database). Every table sqlq
 * creates is InnoDB, utf8mb4 with a binary collation: names and keys compare exactly, as on
 * PostgreSQL, whatever the server's default collation is. */
#include "dialect.h"
#include "dialect_parts.h"
#include "cursor_source.h"
#include "mariadb_internal.h"

#include <sqlext.h>
#include <string.h>

/* SYSDATE(3), not NOW(3): the real time even inside a long statement or transaction. */
#define NOW_MS "CAST(FLOOR(UNIX_TIMESTAMP(SYSDATE(3)) * 1000) AS SIGNED)"

#define TABLE_OPTIONS " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"

/* `schema`.`name` of information_schema row alias a, as sqlq_dialect_quote_table writes it. */
#define QUOTED_TABLE(a)                                                                            \
    "CONCAT('`', REPLACE(" a ".table_schema, '`', '``'), '`.`', "                                  \
    "REPLACE(" a ".table_name, '`', '``'), '`')"
#define QUOTED_NAME(a) "CONCAT('`', REPLACE(" a ".table_name, '`', '``'), '`')"
/* The table named by p.q: `db`.`t`, or `t` in the connection's database. */
#define NAMED_BY(a)                                                                                \
    "(CAST(" QUOTED_TABLE(a) " AS BINARY) = CAST(p.q AS BINARY) OR (" a                          \
    ".table_schema = DATABASE() AND CAST(" QUOTED_NAME(a) " AS BINARY) = CAST(p.q AS BINARY)))"

static const char *const CATALOG_CREATE[] = {
    "CREATE DATABASE IF NOT EXISTS sqlq CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    "CREATE TABLE IF NOT EXISTS sqlq.tables (kind varchar(16) NOT NULL, "
    "bridge_name varchar(128) NOT NULL, table_name varchar(512) NOT NULL, "
    "object_name text NOT NULL, created_ms bigint NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))" TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS sqlq.state (bridge_name varchar(128) NOT NULL, "
    "table_name varchar(512) NOT NULL, sync_version bigint NOT NULL, "
    "updated_ms bigint NOT NULL, PRIMARY KEY (bridge_name, table_name))" TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS sqlq.instances (bridge_name varchar(128) NOT NULL, "
    "table_name varchar(500) NOT NULL, instance_id varchar(128) NOT NULL, "
    "seen_until_ms bigint NOT NULL, PRIMARY KEY (bridge_name, table_name, instance_id))"
    TABLE_OPTIONS,
    "CREATE TABLE IF NOT EXISTS sqlq.instance_rates (bridge_name varchar(128) NOT NULL, "
    "table_name varchar(500) NOT NULL, instance_id varchar(128) NOT NULL, per_s double NOT NULL, "
    "queues longtext NOT NULL, seen_until_ms bigint NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name, instance_id))" TABLE_OPTIONS,
    /* The change logs' versions: a row whose lock serialises the stamping transactions, so
     * versions commit in the order they are handed out (docs/capture.md, MariaDB), starting at
     * the clock in microseconds: a catalog made again after every log was dropped starts above
     * the versions stamped before (docs/capture.md, Versions); and the lease tokens, reserved
     * per poll as on SQLite. */
    "CREATE TABLE IF NOT EXISTS sqlq.counter (name varchar(32) NOT NULL PRIMARY KEY, "
    "value bigint NOT NULL)" TABLE_OPTIONS,
    "INSERT IGNORE INTO sqlq.counter (name, value) VALUES ('version', "
    "CAST(FLOOR(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000) AS SIGNED)), ('lease_token', 0)",
    NULL};

static const char *const CATALOG_DROP[] = {
    "DROP TABLE IF EXISTS sqlq.cursor_state", "DROP TABLE IF EXISTS sqlq.instances",
    "DROP TABLE IF EXISTS sqlq.instance_rates",
    "DROP TABLE IF EXISTS sqlq.tables",
    "DROP TABLE IF EXISTS sqlq.state",        "DROP TABLE IF EXISTS sqlq.counter",
    "DROP DATABASE IF EXISTS sqlq", NULL};

static const char DESCRIBE_SQL[] =
    "SELECT c.table_schema AS schema_name, c.table_name AS table_name, "
    "c.column_name AS column_name, c.column_type AS type_name, "
    "CASE WHEN c.is_nullable = 'YES' THEN 1 ELSE 0 END AS nullable, "
    "CAST(COALESCE((SELECT k.ordinal_position FROM information_schema.key_column_usage k "
    "WHERE k.table_schema = c.table_schema AND k.table_name = c.table_name "
    "AND k.column_name = c.column_name AND k.constraint_name = 'PRIMARY'), 0) AS SIGNED) "
    "AS key_pos FROM information_schema.columns c JOIN (SELECT ? AS q) p ON " NAMED_BY("c")
    " ORDER BY c.ordinal_position";

/* Unique indexes (table_key.c); a functional key part (MySQL 8) has no column name. */
static const char UNIQUE_KEYS_SQL[] =
    "SELECT s.index_name AS index_name, s.seq_in_index AS seq, s.column_name AS column_name, "
    "0 AS nulls_equal, 1 AS usable FROM information_schema.statistics s "
    "JOIN (SELECT ? AS q) p ON " NAMED_BY("s") " WHERE s.non_unique = 0 "
    "ORDER BY s.index_name, s.seq_in_index";

static const char CURSOR_STATE_CREATE[] =
    "CREATE TABLE IF NOT EXISTS sqlq.cursor_state (bridge_name varchar(128) NOT NULL, "
    "table_name varchar(512) NOT NULL, cursor_value text, key_json text, "
    "batch_id bigint NOT NULL DEFAULT 0, rows_done bigint NOT NULL DEFAULT 0, "
    "run_id bigint NOT NULL DEFAULT 0, finished int NOT NULL DEFAULT 0, "
    "lease_owner text, lease_token bigint NOT NULL DEFAULT 0, "
    "lease_expires_ms bigint NOT NULL DEFAULT 0, updated_ms bigint NOT NULL DEFAULT 0, "
    "lag_rule text, PRIMARY KEY (bridge_name, table_name))" TABLE_OPTIONS;

/* MariaDB's column_type names ("int(11) unsigned", "longblob", "double"); the rest as the
 * other servers name them. */
static short mariadb_sql_type(const char *t)
{
    static const struct {
        const char *prefix;
        short type;
    } map[] = {
        {"tinyint(1)", SQL_BIT},       {"bit(1)", SQL_BIT},
        {"mediumint", SQL_INTEGER},    {"double", SQL_DOUBLE},
        {"tinyblob", SQL_VARBINARY},   {"blob", SQL_LONGVARBINARY},
        {"mediumblob", SQL_LONGVARBINARY}, {"longblob", SQL_LONGVARBINARY},
        {"tinytext", SQL_VARCHAR},     {"mediumtext", SQL_LONGVARCHAR},
        {"longtext", SQL_LONGVARCHAR}, {"year", SQL_SMALLINT},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strncmp(t, map[i].prefix, strlen(map[i].prefix)) == 0)
            return map[i].type;
    return sqlq_table_sql_type_server(t);
}

/* "a", "b" quoted; with assign, each as "a" = VALUES("a"). */
static sqlq_result mariadb_list(const sqlq_dialect *d, const char *const *names, size_t n,
                                const char *sep, bool assign, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        if (i)
            r = sqlq_buf_adds(out, sep);
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, names[i], out);
        if (r == SQLQ_OK && assign)
            r = sqlq_buf_adds(out, " = VALUES(");
        if (r == SQLQ_OK && assign)
            r = sqlq_dialect_quote_ident(d, names[i], out);
        if (r == SQLQ_OK && assign)
            r = sqlq_buf_adds(out, ")");
    }
    return r;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

/* INSERT INTO t (cols) VALUES (?…) ON DUPLICATE KEY UPDATE c = VALUES(c) for the non-key
 * columns (the key itself, unchanged, when there are none: the row stays as it is). */
static sqlq_result mariadb_upsert_sql(const sqlq_dialect *d, const sqlq_table_name *t,
                                      const char *const *cols, size_t ncols,
                                      const char *const *key, size_t nkey, sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "INSERT INTO ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, t, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " (");
    if (r == SQLQ_OK)
        r = mariadb_list(d, cols, ncols, ", ", false, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") VALUES (");
    for (size_t i = 0; r == SQLQ_OK && i < ncols; i++)
        r = sqlq_buf_adds(out, i ? ", ?" : "?");
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") ON DUPLICATE KEY UPDATE ");
    if (r == SQLQ_OK && ncols == nkey)
        return mariadb_list(d, key, 1, ", ", true, out);
    bool first = true;
    for (size_t i = 0; r == SQLQ_OK && i < ncols; i++) {
        if (in_list(cols[i], key, nkey))
            continue;
        if (!first)
            r = sqlq_buf_adds(out, ", ");
        first = false;
        if (r == SQLQ_OK)
            r = mariadb_list(d, &cols[i], 1, "", true, out);
    }
    return r;
}

/* The claim: a row inserted (1 affected) or raised to a newer version (2); an equal or older
 * version leaves the row unchanged (0 affected: the driver reports changed rows, not found
 * ones, unless FOUND_ROWS is set in the connection string). */
static sqlq_result mariadb_claim_sql(const sqlq_dialect *d, const sqlq_table_name *state,
                                     sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "INSERT INTO ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, state, out);
    if (r == SQLQ_OK)
        /* key_json first: assignments run left to right, version's changes what follows */
        r = sqlq_buf_adds(out, " (target_table, key_hash, version, key_json) VALUES (?, ?, ?, ?) "
                               "ON DUPLICATE KEY UPDATE key_json = IF(VALUES(version) > version, "
                               "COALESCE(key_json, VALUES(key_json)), key_json), version = "
                               "GREATEST(version, VALUES(version))");
    return r;
}

/* A value as the text a cursor stores: integers and text as they are, the rest as its text. */
static sqlq_result mariadb_keyset_value_sql(const sqlq_keyset_col *c, sqlq_buf *out)
{
    const sqlq_dialect *d = &sqlq_dialect_mariadb;
    if (c->cls == SQLQ_VALUE_INT || c->cls == SQLQ_VALUE_TEXT)
        return sqlq_dialect_quote_ident(d, c->name, out);
    sqlq_result r = sqlq_buf_adds(out, "CAST(");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " AS CHAR)");
    return r;
}

/* What --source picks from, the first for auto. */
/* NOT NULL (1048 "Column cannot be null", 1364 "Field doesn't have a default value") and
 * CHECK (4025, MySQL 3819): SQLSTATE 23000 or HY000, told apart by the native code. */
static bool mariadb_row_rejected(const sqlq_error *e)
{
    return e->native_code == 1048 || e->native_code == 1364 || e->native_code == 4025 ||
           e->native_code == 3819;
}

static const sqlq_change_source_ops *const SOURCES[] = {&sqlq_mariadb_log_source, &sqlq_cursor_change_source,
                                                      NULL};

const sqlq_dialect sqlq_dialect_mariadb = {
    .name = "mariadb",
    .title = "MariaDB",
    /* Connector/ODBC reports the server's own name: MariaDB, or MySQL for a MySQL server. */
    .dbms_name = "MariaDB|MySQL",

    /* UTC (TIMESTAMP columns read and write in the session's zone), standard string literals
     * (sqlq_dialect_quote_literal doubles quotes only), strict values (an out-of-range or
     * truncated value fails loudly), and READ COMMITTED: the stamping transaction relies on it
     * to pass over the log rows of open transactions (docs/capture.md). */
    .session_sql =
        (const char *const[]){"SET SESSION time_zone = '+00:00', "
                              "sql_mode = CONCAT(@@SESSION.sql_mode, ',NO_BACKSLASH_ESCAPES,STRICT_ALL_TABLES')",
                              /* this form on MariaDB and MySQL alike (MySQL 8 has no tx_isolation) */
                              "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", NULL},
    .serial_writer = false,
    .wide_text = false,
    .drop_if_exists = true,
    .long_binary_over = 0,

    .dynamic_types = false,
    .tz_text_in_utc = true, /* TIMESTAMP: UTC inside, read in the session's zone, UTC */
    .utc_type_name = "timestamp",
    .tinyint1_bool = true,
    .exact_time_text = false,
    .bool_as_text = false,
    .time_param_utc_wall = true,
    .row_rejected = mariadb_row_rejected,
    .found_rows_option = "FOUND_ROWS (Connector/ODBC's OPTION bit 2, as in OPTION=3)",

    .ident_open = '`',
    .ident_close = '`',
    .literal_prefix = "",
    .literal_backslash_e = false, /* NO_BACKSLASH_ESCAPES (session_sql) */
    .schemas = true,
    .home_schema = "",
    .folds_case = false,
    .names_ignore_case = false,
    .key_may_be_null = false,
    .object_prefix = "sqlq.",
    .text_any_length = "LONGTEXT",
    .add_column = "ADD COLUMN ",
    .create_if_not_exists = true,
    .insert_ignore_head = "INSERT IGNORE INTO ",
    .insert_ignore_tail = "",

    .now_ms = NOW_MS,

    .catalog_create = CATALOG_CREATE,
    .catalog_drop = CATALOG_DROP,
    .catalog_token_object = "counter", /* rows 'version' (the stamp) and 'lease_token' */
    /* DDL commits implicitly in MySQL: a transaction-scoped lock cannot span it. Every
     * statement of setup is idempotent (IF NOT EXISTS, OR REPLACE) instead. */
    .ddl_lock_sql = NULL,
    .object_exists_sql = "SELECT count(*) FROM information_schema.tables "
                         "WHERE table_schema = 'sqlq' AND table_name = ?",
    .schema_exists_sql = "SELECT count(*) FROM information_schema.schemata "
                         "WHERE schema_name = 'sqlq'",
    .schema_create_sql =
        "CREATE DATABASE IF NOT EXISTS sqlq CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
    .resolve_sql = "SELECT t.table_schema AS s, t.table_name AS n FROM information_schema.tables t "
                   "JOIN (SELECT ? AS q) p ON " NAMED_BY("t")
                   " WHERE t.table_type IN ('BASE TABLE', 'SYSTEM VERSIONED')",
    .resolve_nparams = 1,
    .column_exists_sql = "SELECT count(*) FROM information_schema.columns WHERE "
                         "CONCAT(table_schema, '.', table_name) = ? AND column_name = ?",
    .key_types_sql = "SELECT c.column_name AS n, c.column_type AS t "
                     "FROM information_schema.columns c JOIN (SELECT ? AS q) p ON " NAMED_BY("c"),
    .key_type = sqlq_catalog_key_type_as_is, /* column_type is DDL text as it stands */
    .registry_upsert_head = "INSERT INTO ",
    .registry_upsert_tail =
        " (kind, bridge_name, table_name, object_name, created_ms) VALUES (?, ?, ?, ?, " NOW_MS
        ") ON DUPLICATE KEY UPDATE object_name = VALUES(object_name)",

    .describe_sql = DESCRIBE_SQL,
    .schema_known_sql = NULL,
    .describe_params = sqlq_table_describe_params_quoted,
    .sql_type = mariadb_sql_type,
    .unique_keys_sql = UNIQUE_KEYS_SQL,

    .cursor_state_create = CURSOR_STATE_CREATE,
    .cursor_lag_rule_exists = "SELECT count(*) FROM information_schema.columns WHERE "
                              "table_schema = 'sqlq' AND table_name = 'cursor_state' "
                              "AND column_name = 'lag_rule'",
    .cursor_lag_rule_add = "ALTER TABLE sqlq.cursor_state ADD COLUMN IF NOT EXISTS lag_rule text",

    .sources = SOURCES,

    .lag_syntax = SQLQ_LAG_SYSDATE,
    .rowversion = false,
    .row_values = true,
    .keyset_value_sql = mariadb_keyset_value_sql,
    .keyset_param_sql = sqlq_keyset_param_sql_plain,

    .upsert_sql = mariadb_upsert_sql,
    .upsert_excluded = NULL,
    .limit_top = false,
    .version_guard_create_sql = sqlq_version_guard_create_sql_if_not_exists,
    .version_guard_claim_sql = mariadb_claim_sql,
};
