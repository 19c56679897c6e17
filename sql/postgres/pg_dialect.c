/* pg_dialect: PostgreSQL as sqlq speaks it (the table is described in dialect.h; what a new
 * dialect must provide is in docs/dialects.md). */
#include "dialect.h"
#include "dialect_parts.h"
#include "cursor_source.h"
#include "logical_ops.h"
#include "pg_internal.h"

#include <sqlext.h>
#include <stdlib.h>
#include <string.h>

/* clock_timestamp, not now(): the real time even inside a long transaction. */
#define NOW_MS "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS bigint)"

static const char *const CATALOG_CREATE[] = {
    "CREATE SCHEMA IF NOT EXISTS sqlq",
    "CREATE TABLE IF NOT EXISTS sqlq.tables (kind text NOT NULL, bridge_name text NOT NULL, "
    "table_name text NOT NULL, object_name text NOT NULL, created_ms bigint NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))",
    "CREATE TABLE IF NOT EXISTS sqlq.state (bridge_name text NOT NULL, table_name text NOT NULL, "
    "sync_version bigint NOT NULL, updated_ms bigint NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name))",
    "CREATE TABLE IF NOT EXISTS sqlq.instances (bridge_name text NOT NULL, table_name text NOT "
    "NULL, instance_id text NOT NULL, seen_until_ms bigint NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name, instance_id))",
    "CREATE TABLE IF NOT EXISTS sqlq.instance_rates (bridge_name text NOT NULL, table_name text "
    "NOT NULL, instance_id text NOT NULL, per_s double precision NOT NULL, queues text NOT NULL, "
    "seen_until_ms bigint NOT NULL, PRIMARY KEY (bridge_name, table_name, instance_id))",
    "CREATE SEQUENCE IF NOT EXISTS sqlq.lease_token", NULL};

static const char *const CATALOG_DROP[] = {
    "DROP TABLE IF EXISTS sqlq.cursor_state", "DROP TABLE IF EXISTS sqlq.instances",
    "DROP TABLE IF EXISTS sqlq.instance_rates",
    "DROP TABLE IF EXISTS sqlq.tables",
    "DROP TABLE IF EXISTS sqlq.state",        "DROP SEQUENCE IF EXISTS sqlq.lease_token",
    /* Only when empty: other objects in schema sqlq are not sqlq's to drop (nor an error). */
    "DO $$BEGIN IF NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_namespace n ON n.oid = "
    "d.refobjid WHERE d.refclassid = 'pg_namespace'::regclass AND n.nspname = 'sqlq') THEN "
    "DROP SCHEMA IF EXISTS sqlq RESTRICT; END IF; END$$",
    NULL};

static const char DESCRIBE_SQL[] =
    "SELECT n.nspname AS schema_name, c.relname AS table_name, a.attname AS column_name, "
    "format_type(a.atttypid, a.atttypmod) AS type_name, "
    "CASE WHEN a.attnotnull THEN 0 ELSE 1 END AS nullable, "
    "CAST(COALESCE((SELECT k.ord FROM pg_catalog.pg_index i, "
    "unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) "
    "WHERE i.indrelid = c.oid AND i.indisprimary AND k.attnum = a.attnum), 0) AS int) AS key_pos "
    "FROM pg_catalog.pg_class c "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
    "JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid "
    "WHERE c.oid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped "
    "ORDER BY a.attnum";

/* Unique indexes (table_key.c): key columns only (not INCLUDE); usable unless partial, on an
 * expression, invalid or deferrable. indnullsnotdistinct (PostgreSQL 15) is read through
 * to_jsonb so that older servers answer too. */
static const char UNIQUE_KEYS_SQL[] =
    "SELECT c.relname AS index_name, k.ord AS seq, a.attname AS column_name, "
    "CASE WHEN (to_jsonb(i) ->> 'indnullsnotdistinct') = 'true' THEN 1 ELSE 0 END AS nulls_equal, "
    "CASE WHEN i.indpred IS NULL AND i.indexprs IS NULL AND i.indisvalid AND i.indimmediate "
    "THEN 1 ELSE 0 END AS usable "
    "FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid "
    "CROSS JOIN LATERAL unnest(CAST(i.indkey AS int2[])) WITH ORDINALITY AS k(attnum, ord) "
    "LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
    "WHERE i.indrelid = to_regclass(?) AND i.indisunique AND k.ord <= i.indnkeyatts "
    "ORDER BY c.relname, k.ord";

static const char CURSOR_STATE_CREATE[] =
    "CREATE TABLE IF NOT EXISTS sqlq.cursor_state (bridge_name text NOT NULL, "
    "table_name text NOT NULL, cursor_value text, key_json text, "
    "batch_id bigint NOT NULL DEFAULT 0, rows_done bigint NOT NULL DEFAULT 0, "
    "run_id bigint NOT NULL DEFAULT 0, finished int NOT NULL DEFAULT 0, "
    "lease_owner text, lease_token bigint NOT NULL DEFAULT 0, "
    "lease_expires_ms bigint NOT NULL DEFAULT 0, updated_ms bigint NOT NULL DEFAULT 0, "
    "lag_rule text, PRIMARY KEY (bridge_name, table_name))";

static sqlq_result keyset_value_sql(const sqlq_keyset_col *c, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    switch (c->cls) {
    case SQLQ_VALUE_INT:
    case SQLQ_VALUE_TEXT:
    case SQLQ_VALUE_ROWVERSION: return sqlq_dialect_quote_ident(&sqlq_dialect_postgres, c->name, out);
    case SQLQ_VALUE_EXACT:
        if ((r = sqlq_buf_adds(out, "CAST(")) == SQLQ_OK &&
            (r = sqlq_dialect_quote_ident(&sqlq_dialect_postgres, c->name, out)) == SQLQ_OK)
            r = sqlq_buf_adds(out, " AS text)");
        return r;
    case SQLQ_VALUE_TIMESTAMP:
        if ((r = sqlq_buf_adds(out, "to_char(")) == SQLQ_OK &&
            (r = sqlq_dialect_quote_ident(&sqlq_dialect_postgres, c->name, out)) == SQLQ_OK)
            r = sqlq_buf_adds(out, ", 'YYYY-MM-DD\"T\"HH24:MI:SS.US')");
        return r;
    case SQLQ_VALUE_TIMESTAMPTZ:
        if ((r = sqlq_buf_adds(out, "to_char(")) == SQLQ_OK &&
            (r = sqlq_dialect_quote_ident(&sqlq_dialect_postgres, c->name, out)) == SQLQ_OK)
            r = sqlq_buf_adds(out, " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')");
        return r;
    }
    return SQLQ_E_INVALID;
}

static sqlq_result keyset_param_sql(const sqlq_keyset_col *c, sqlq_buf *out)
{
    char tbuf[64];
    const char *t = sqlq_keyset_plain_type(c->type, tbuf, sizeof(tbuf));
    switch (c->cls) {
    case SQLQ_VALUE_TIMESTAMP: return sqlq_keyset_cast_param("timestamp", out);
    case SQLQ_VALUE_TIMESTAMPTZ: return sqlq_keyset_cast_param("timestamptz", out);
    case SQLQ_VALUE_EXACT: return t ? sqlq_keyset_cast_param(t, out) : sqlq_buf_adds(out, "?");
    default: return sqlq_buf_adds(out, "?");
    }
}

/* What --source picks from, the first for auto. */
static const sqlq_change_source_ops *const SOURCES[] = {
    &sqlq_pg_log_source, &sqlq_cursor_change_source, &sqlq_change_source_logical, NULL};

const sqlq_dialect sqlq_dialect_postgres = {
    .name = "postgres",
    .title = "PostgreSQL",
    .dbms_name = "PostgreSQL",

    /* psqlODBC drops the offset when it converts a timestamptz to text (convert.c: "time zone
     * stuff is unreliable") and writes the wall time of the session's TimeZone: in UTC that
     * wall time is exact, and row_json marks it +00:00 (tz_text_in_utc). DateStyle ISO
     * (psqlODBC's own setting, pinned here) is the text row_json reads dates and times from
     * (row_json.h). plan_cache_mode: the capture loop's statements are kept prepared
     * (keeps_plans) to save their parse and analysis on every poll, but each execution is
     * still planned for its parameters: the generic plan PostgreSQL would switch to after five
     * executions read the log by a worse index path (drain of 10,000 changes: backends +29%
     * with it, -4% without it; docs/benchmarks.md). One statement sets all three. */
    .session_sql = (const char *const[]){"SELECT set_config('TimeZone', 'UTC', false), "
                                         "set_config('DateStyle', 'ISO', false), "
                                         "set_config('plan_cache_mode', 'force_custom_plan', false)",
                                         NULL},
    .serial_writer = false,
    .wide_text = false,
    .keeps_plans = true,
    .drop_if_exists = true,
    .long_binary_over = 0,

    .dynamic_types = false,
    .tz_text_in_utc = true,
    .exact_time_text = true,
    .bool_as_text = true,

    .ident_open = '"',
    .ident_close = '"',
    .literal_prefix = "",
    .literal_backslash_e = true, /* E'' means the same whatever standard_conforming_strings says */
    .schemas = true,
    .home_schema = "public",
    .folds_case = true,
    .names_ignore_case = false,
    .key_may_be_null = false,
    .object_prefix = "sqlq.",
    .text_any_length = "TEXT",
    .add_column = "ADD COLUMN ",
    .create_if_not_exists = true,
    .insert_ignore_head = "INSERT INTO ",
    .insert_ignore_tail = " ON CONFLICT DO NOTHING",

    .now_ms = NOW_MS,

    .catalog_create = CATALOG_CREATE,
    .catalog_drop = CATALOG_DROP,
    .catalog_token_object = "lease_token",
    .ddl_lock_sql = "SELECT pg_advisory_xact_lock(hashtextextended('sqlq:ddl', 0))",
    .object_exists_sql = "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                         "n.oid = c.relnamespace WHERE n.nspname = 'sqlq' AND c.relname = ?",
    .schema_exists_sql = "SELECT count(*) FROM pg_namespace WHERE nspname = 'sqlq'",
    .schema_create_sql = "CREATE SCHEMA IF NOT EXISTS sqlq",
    .resolve_sql = "SELECT n.nspname AS s, c.relname AS n FROM pg_class c "
                   "JOIN pg_namespace n ON n.oid = c.relnamespace "
                   "WHERE c.oid = to_regclass(CAST(? AS text))",
    .resolve_nparams = 1,
    .column_exists_sql =
        "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(CAST(? AS text)) "
        "AND attname = CAST(? AS text) AND NOT attisdropped",
    .key_types_sql = "SELECT a.attname AS n, format_type(a.atttypid, a.atttypmod) AS t "
                     "FROM pg_attribute a WHERE a.attrelid = to_regclass(CAST(? AS text)) "
                     "AND a.attnum > 0 AND NOT a.attisdropped",
    .key_type = sqlq_catalog_key_type_as_is,
    .setup_warn = sqlq_pg_setup_warn,
    .registry_upsert_head = "INSERT INTO ",
    .registry_upsert_tail =
        " (kind, bridge_name, table_name, object_name, created_ms) VALUES (?, ?, ?, ?, " NOW_MS
        ") ON CONFLICT (kind, bridge_name, table_name) DO UPDATE SET object_name = "
        "excluded.object_name",

    .describe_sql = DESCRIBE_SQL,
    .schema_known_sql = NULL,
    .describe_params = sqlq_table_describe_params_quoted,
    .sql_type = sqlq_table_sql_type_server,
    .unique_keys_sql = UNIQUE_KEYS_SQL,

    .cursor_state_create = CURSOR_STATE_CREATE,
    .cursor_lag_rule_exists = "SELECT count(*) FROM pg_attribute WHERE attrelid = "
                              "to_regclass('sqlq.cursor_state') AND attname = 'lag_rule' "
                              "AND NOT attisdropped",
    .cursor_lag_rule_add = "ALTER TABLE sqlq.cursor_state ADD COLUMN IF NOT EXISTS lag_rule text",

    .sources = SOURCES,

    .lag_syntax = SQLQ_LAG_INTERVAL,
    .rowversion = false,
    .row_values = true,
    .keyset_value_sql = keyset_value_sql,
    .keyset_param_sql = keyset_param_sql,

    .upsert_sql = sqlq_upsert_sql_on_conflict,
    .upsert_excluded = "EXCLUDED.",
    .limit_top = false,
    .version_guard_create_sql = sqlq_version_guard_create_sql_if_not_exists,
    .version_guard_claim_sql = sqlq_version_guard_claim_sql_on_conflict,
};
