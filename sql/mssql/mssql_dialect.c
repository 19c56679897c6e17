/* mssql_dialect: SQL Server as sqlq speaks it (the table is described in dialect.h; what a new
 * dialect must provide is in docs/dialects.md). */
#include "dialect.h"
#include "dialect_parts.h"
#include "cursor_source.h"
#include "ct_query.h"
#include "mssql_internal.h"

#include <sqlext.h>
#include <stdlib.h>
#include <string.h>

#define NOW_MS "DATEDIFF_BIG(millisecond, '19700101', SYSUTCDATETIME())"

static const char *const CATALOG_CREATE[] = {
    "IF SCHEMA_ID(N'sqlq') IS NULL EXEC(N'CREATE SCHEMA sqlq')",
    "IF OBJECT_ID(N'sqlq.tables', N'U') IS NULL CREATE TABLE sqlq.tables ("
    "kind nvarchar(16) NOT NULL, bridge_name nvarchar(128) NOT NULL, table_name nvarchar(256) "
    "NOT NULL, object_name nvarchar(600) NOT NULL, created_ms bigint NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))",
    "IF OBJECT_ID(N'sqlq.state', N'U') IS NULL CREATE TABLE sqlq.state ("
    "bridge_name nvarchar(128) NOT NULL, table_name nvarchar(300) NOT NULL, "
    "sync_version bigint NOT NULL, updated_ms bigint NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name))",
    "IF OBJECT_ID(N'sqlq.lease_token', N'SO') IS NULL "
    "CREATE SEQUENCE sqlq.lease_token AS bigint START WITH 1",
    /* no primary key: three columns would pass the 900 bytes of a clustered key; each
     * instance writes only its own row */
    "IF OBJECT_ID(N'sqlq.instances', N'U') IS NULL CREATE TABLE sqlq.instances ("
    "bridge_name nvarchar(128) NOT NULL, table_name nvarchar(300) NOT NULL, "
    "instance_id nvarchar(128) NOT NULL, seen_until_ms bigint NOT NULL)",
    "IF OBJECT_ID(N'sqlq.instance_rates', N'U') IS NULL CREATE TABLE sqlq.instance_rates ("
    "bridge_name nvarchar(128) NOT NULL, table_name nvarchar(300) NOT NULL, "
    "instance_id nvarchar(128) NOT NULL, per_s float NOT NULL, queues nvarchar(max) NOT NULL, "
    "seen_until_ms bigint NOT NULL)",
    NULL};

static const char *const CATALOG_DROP[] = {
    "IF OBJECT_ID(N'sqlq.cursor_state', N'U') IS NOT NULL DROP TABLE sqlq.cursor_state",
    "IF OBJECT_ID(N'sqlq.instances', N'U') IS NOT NULL DROP TABLE sqlq.instances",
    "IF OBJECT_ID(N'sqlq.instance_rates', N'U') IS NOT NULL DROP TABLE sqlq.instance_rates",
    "IF OBJECT_ID(N'sqlq.tables', N'U') IS NOT NULL DROP TABLE sqlq.tables",
    "IF OBJECT_ID(N'sqlq.state', N'U') IS NOT NULL DROP TABLE sqlq.state",
    "IF OBJECT_ID(N'sqlq.lease_token', N'SO') IS NOT NULL DROP SEQUENCE sqlq.lease_token",
    "IF SCHEMA_ID(N'sqlq') IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sys.objects WHERE "
    "schema_id = SCHEMA_ID(N'sqlq')) EXEC(N'DROP SCHEMA sqlq')",
    NULL};

static const char DESCRIBE_SQL[] =
    "SELECT OBJECT_SCHEMA_NAME(c.object_id) AS schema_name, OBJECT_NAME(c.object_id) AS "
    "table_name, c.name AS column_name, "
    "LOWER(t.name) + CASE "
    "WHEN t.name IN ('varchar', 'char', 'varbinary', 'binary') THEN '(' + CASE WHEN "
    "c.max_length = -1 THEN 'max' ELSE CAST(c.max_length AS varchar(10)) END + ')' "
    "WHEN t.name IN ('nvarchar', 'nchar') THEN '(' + CASE WHEN c.max_length = -1 THEN 'max' "
    "ELSE CAST(c.max_length / 2 AS varchar(10)) END + ')' "
    "WHEN t.name IN ('decimal', 'numeric') THEN '(' + CAST(c.precision AS varchar(10)) + ',' + "
    "CAST(c.scale AS varchar(10)) + ')' "
    "WHEN t.name IN ('datetime2', 'time', 'datetimeoffset') THEN '(' + CAST(c.scale AS "
    "varchar(10)) + ')' ELSE '' END AS type_name, "
    "CAST(c.is_nullable AS int) AS nullable, CAST(COALESCE(ic.key_ordinal, 0) AS int) AS key_pos "
    "FROM sys.columns c "
    "JOIN sys.types t ON t.user_type_id = c.user_type_id "
    "LEFT JOIN sys.indexes i ON i.object_id = c.object_id AND i.is_primary_key = 1 "
    "LEFT JOIN sys.index_columns ic ON ic.object_id = i.object_id AND ic.index_id = i.index_id "
    "AND ic.column_id = c.column_id "
    "WHERE c.object_id = OBJECT_ID(?) AND OBJECTPROPERTY(c.object_id, 'IsUserTable') = 1 "
    "ORDER BY c.column_id";

static const char CURSOR_STATE_CREATE[] =
    "IF OBJECT_ID(N'sqlq.cursor_state', N'U') IS NULL CREATE TABLE sqlq.cursor_state ("
    "bridge_name nvarchar(128) NOT NULL, table_name nvarchar(300) NOT NULL, "
    "cursor_value nvarchar(100) NULL, key_json nvarchar(max) NULL, "
    "batch_id bigint NOT NULL DEFAULT 0, rows_done bigint NOT NULL DEFAULT 0, "
    "run_id bigint NOT NULL DEFAULT 0, finished int NOT NULL DEFAULT 0, "
    "lease_owner nvarchar(256) NULL, lease_token bigint NOT NULL DEFAULT 0, "
    "lease_expires_ms bigint NOT NULL DEFAULT 0, updated_ms bigint NOT NULL DEFAULT 0, "
    "lag_rule nvarchar(200) NULL, PRIMARY KEY (bridge_name, table_name))";

static char *key_type(json_t *row)
{
    const char *t = json_string_value(json_object_get(row, "t"));
    if (!t)
        return strdup("");
    char decl[96];
    sqlq_ct_type_decl(t, (long)json_integer_value(json_object_get(row, "ml")),
                      (int)json_integer_value(json_object_get(row, "p")),
                      (int)json_integer_value(json_object_get(row, "sc")), decl, sizeof(decl));
    return strdup(decl);
}

/* SQL Server: no CREATE TABLE IF NOT EXISTS; the table's name is tested with OBJECT_ID. */
static sqlq_result version_guard_create_sql(const sqlq_dialect *d, const sqlq_table_name *state,
                                                sqlq_buf *sql)
{
    sqlq_buf lit;
    sqlq_buf_init(&lit, 0);
    sqlq_result r = sqlq_dialect_quote_table(d, state, &lit);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(sql, "IF OBJECT_ID(N");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_literal(d, sqlq_buf_str(&lit), sql);
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(sql,
                            ", N'U') IS NULL CREATE TABLE %s (target_table NVARCHAR(256) "
                            "NOT NULL, key_hash CHAR(64) NOT NULL, version BIGINT NOT NULL, "
                            "key_json NVARCHAR(MAX) NULL, PRIMARY KEY (target_table, key_hash))",
                            sqlq_buf_str(&lit));
    sqlq_buf_free(&lit);
    return r;
}

static sqlq_result keyset_value_sql(const sqlq_keyset_col *c, sqlq_buf *out)
{
    const sqlq_dialect *d = &sqlq_dialect_mssql;
    const char *pre = NULL, *post = NULL;
    switch (c->cls) {
    case SQLQ_VALUE_INT:
    case SQLQ_VALUE_TEXT:
        return sqlq_dialect_quote_ident(d, c->name, out);
    case SQLQ_VALUE_EXACT:
        pre = "CAST(", post = " AS nvarchar(100))";
        break;
    case SQLQ_VALUE_TIMESTAMP:
        pre = "CONVERT(varchar(33), ", post = ", 126)";
        break;
    case SQLQ_VALUE_TIMESTAMPTZ:
        pre = "CONVERT(varchar(33), CAST(SWITCHOFFSET(";
        post = ", '+00:00') AS datetime2(7)), 126) + 'Z'";
        break;
    case SQLQ_VALUE_ROWVERSION:
        pre = "CAST(", post = " AS bigint)";
        break;
    }
    if (!pre)
        return SQLQ_E_INVALID;
    sqlq_result r = sqlq_buf_adds(out, pre);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, post);
    return r;
}

static sqlq_result keyset_param_sql(const sqlq_keyset_col *c, sqlq_buf *out)
{
    char tbuf[64];
    const char *t = sqlq_keyset_plain_type(c->type, tbuf, sizeof(tbuf));
    switch (c->cls) {
    case SQLQ_VALUE_ROWVERSION: return sqlq_keyset_cast_param("binary(8)", out);
    case SQLQ_VALUE_TIMESTAMP:
    case SQLQ_VALUE_TIMESTAMPTZ:
        /* The column's own type: datetime '…003' and datetime2 '…0030000' differ. */
        return t ? sqlq_keyset_cast_param(t, out) : sqlq_buf_adds(out, "?");
    default: return sqlq_buf_adds(out, "?");
    }
}

/* The configuration reference's section on this database (docs/configuration.md). */
static const char *const CONFIG_DOC[] = {
    "### SQL Server and Azure SQL with Entra ID",
    "",
    "The database connection string is passed to the ODBC driver as written, so Microsoft ODBC "
    "Driver 18 (in the image built with it) authenticates itself: "
    "`Driver={ODBC Driver 18 for SQL Server};Server=tcp:SERVER.database.windows.net,1433;"
    "Database=DB;Encrypt=yes;Authentication=ActiveDirectoryMsi` (managed identity; for a "
    "user-assigned one add `UID=` its client ID on App Service and Container Instances, else its "
    "object ID) or `Authentication=ActiveDirectoryServicePrincipal;UID=CLIENT_ID;PWD=SECRET`. The "
    "driver has no `ActiveDirectoryDefault` and no workload identity; with AKS workload identity "
    "use a database password (a Secret) for now: handing the driver a token from sqlq's "
    "provider (`SQL_COPT_SS_ACCESS_TOKEN`, resource `https://database.windows.net/`) is not "
    "implemented.",
    "",
    NULL};

/* What --source picks from, the first for auto. */
/* SQLSTATE 23000: 515 inserts a NULL; 547 is a CHECK or a foreign key, told apart by its words. */
static bool mssql_row_rejected(const sqlq_error *e)
{
    return strcmp(e->sqlstate, "23000") == 0 &&
           (e->native_code == 515 || (e->native_code == 547 && strstr(e->message, "CHECK constraint")));
}

static const sqlq_change_source_ops *const SOURCES[] = {&sqlq_mssql_tracking_source, &sqlq_cursor_change_source,
                                                      NULL};

const sqlq_dialect sqlq_dialect_mssql = {
    .name = "mssql",
    .title = "SQL Server",
    .dbms_name = "Microsoft SQL Server",
    .config_doc = CONFIG_DOC,

    .session_sql = NULL,
    .serial_writer = false,
    .wide_text = true, /* N'' text: no code page between UTF-8 and the column */
    .drop_if_exists = false,
    .long_binary_over = 8000, /* varbinary(max) beyond 8000 bytes */

    .dynamic_types = false,
    .row_rejected = mssql_row_rejected,
    .tz_text_in_utc = false,
    .exact_time_text = false,
    .bool_as_text = false,

    .ident_open = '[',
    .ident_close = ']',
    .literal_prefix = "N",
    .literal_backslash_e = false,
    .schemas = true,
    .home_schema = "dbo",
    .folds_case = false,
    .names_ignore_case = false,
    .key_may_be_null = false,
    .object_prefix = "sqlq.",
    .text_any_length = "NVARCHAR(MAX)",
    .add_column = "ADD ",
    .create_if_not_exists = false,
    .insert_ignore_head = NULL,
    .insert_ignore_tail = NULL,

    .now_ms = NOW_MS,

    .catalog_create = CATALOG_CREATE,
    .catalog_drop = CATALOG_DROP,
    .catalog_token_object = "lease_token",
    .ddl_lock_sql = "DECLARE @rc int; EXEC @rc = sp_getapplock @Resource = N'sqlq:ddl', "
                    "@LockMode = 'Exclusive', @LockOwner = 'Transaction', "
                    "@LockTimeout = 30000; IF @rc < 0 THROW 51000, "
                    "'sqlq: timed out waiting for the sqlq:ddl lock', 1;",
    .object_exists_sql = "SELECT count(*) FROM sys.objects WHERE schema_id = SCHEMA_ID(N'sqlq') "
                         "AND name = ?",
    .schema_exists_sql = "SELECT count(*) FROM sys.schemas WHERE name = N'sqlq'",
    .schema_create_sql = "IF SCHEMA_ID(N'sqlq') IS NULL EXEC(N'CREATE SCHEMA sqlq')",
    .resolve_sql = "SELECT OBJECT_SCHEMA_NAME(OBJECT_ID(?)) AS s, OBJECT_NAME(OBJECT_ID(?)) AS n",
    .resolve_nparams = 2,
    .column_exists_sql = "SELECT CASE WHEN COL_LENGTH(?, ?) IS NULL THEN 0 ELSE 1 END",
    .key_types_sql = "SELECT c.name AS n, TYPE_NAME(c.user_type_id) AS t, c.max_length AS ml, "
                     "c.precision AS p, c.scale AS sc FROM sys.columns c "
                     "WHERE c.object_id = OBJECT_ID(?)",
    .key_type = key_type,
    .registry_upsert_head = "MERGE ",
    .registry_upsert_tail =
        " AS r USING (SELECT ? AS kind, ? AS bridge_name, ? AS table_name, ? AS "
        "object_name) AS s ON r.kind = s.kind AND r.bridge_name = s.bridge_name AND "
        "r.table_name = s.table_name WHEN MATCHED THEN UPDATE SET object_name = "
        "s.object_name WHEN NOT MATCHED THEN INSERT (kind, bridge_name, table_name, "
        "object_name, created_ms) VALUES (s.kind, s.bridge_name, s.table_name, "
        "s.object_name, " NOW_MS ");",

    .describe_sql = DESCRIBE_SQL,
    .schema_known_sql = NULL,
    .describe_params = sqlq_table_describe_params_quoted,
    .sql_type = sqlq_table_sql_type_server,
    .primary_key_only_why = "change tracking itself requires a primary key",

    .cursor_state_create = CURSOR_STATE_CREATE,
    .cursor_lag_rule_exists =
        "SELECT CASE WHEN COL_LENGTH('sqlq.cursor_state', 'lag_rule') IS NULL "
        "THEN 0 ELSE 1 END",
    .cursor_lag_rule_add = "ALTER TABLE sqlq.cursor_state ADD lag_rule nvarchar(200) NULL",

    .sources = SOURCES,

    .lag_syntax = SQLQ_LAG_DATEADD,
    .rowversion = true,
    .row_values = false, /* no row-value comparison: expanded to ORs */
    .keyset_value_sql = keyset_value_sql,
    .keyset_param_sql = keyset_param_sql,

    .upsert_sql = sqlq_upsert_sql_merge,
    .upsert_excluded = NULL, /* MERGE */
    .limit_top = true,
    .version_guard_create_sql = version_guard_create_sql,
    .version_guard_claim_sql = sqlq_version_guard_claim_sql_merge,
};
