/* catalog_objects: sqlq's shared objects (schema, registry, state table, version and token
 * sources): creating them, the registry rows, dropping them once unused. Half of catalog.h. */
#include "catalog.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared objects ---------------------------------------------------------------------- */

static const char *const ENSURE_SQLITE[] = {
    "CREATE TABLE IF NOT EXISTS sqlq_tables (kind TEXT NOT NULL, bridge_name TEXT NOT NULL, "
    "table_name TEXT NOT NULL, object_name TEXT NOT NULL, created_ms INTEGER NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))",
    "CREATE TABLE IF NOT EXISTS sqlq_state (bridge_name TEXT NOT NULL, table_name TEXT NOT NULL, "
    "sync_version INTEGER NOT NULL, updated_ms INTEGER NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name))",
    /* One writer at a time: a counter bumped inside the triggers gives versions in commit
     * order. lease_token numbers lease grants (fencing). */
    "CREATE TABLE IF NOT EXISTS sqlq_counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO sqlq_counter (name, value) VALUES ('version', 0), ('lease_token', 0)",
    NULL};

static const char *const ENSURE_POSTGRES[] = {
    "CREATE SCHEMA IF NOT EXISTS sqlq",
    "CREATE TABLE IF NOT EXISTS sqlq.tables (kind text NOT NULL, bridge_name text NOT NULL, "
    "table_name text NOT NULL, object_name text NOT NULL, created_ms bigint NOT NULL, "
    "PRIMARY KEY (kind, bridge_name, table_name))",
    "CREATE TABLE IF NOT EXISTS sqlq.state (bridge_name text NOT NULL, table_name text NOT NULL, "
    "sync_version bigint NOT NULL, updated_ms bigint NOT NULL, "
    "PRIMARY KEY (bridge_name, table_name))",
    "CREATE SEQUENCE IF NOT EXISTS sqlq.lease_token",
    NULL};

static const char *const ENSURE_MSSQL[] = {
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
    NULL};

static const char *const *ensure_sql(sqlq_dialect_kind d)
{
    return d == SQLQ_DIALECT_SQLITE ? ENSURE_SQLITE
           : d == SQLQ_DIALECT_POSTGRES ? ENSURE_POSTGRES
                                        : ENSURE_MSSQL;
}

sqlq_result sqlq_catalog_ddl_lock(sqlq_db *db, sqlq_error *err)
{
    switch (sqlq_db_dialect(db)) {
    case SQLQ_DIALECT_POSTGRES:
        return sqlq_db_exec(db, "SELECT pg_advisory_xact_lock(hashtextextended('sqlq:ddl', 0))",
                            NULL, 0, NULL, err);
    case SQLQ_DIALECT_MSSQL:
        return sqlq_db_exec(db,
                            "DECLARE @rc int; EXEC @rc = sp_getapplock @Resource = N'sqlq:ddl', "
                            "@LockMode = 'Exclusive', @LockOwner = 'Transaction', "
                            "@LockTimeout = 30000; IF @rc < 0 THROW 51000, "
                            "'sqlq: timed out waiting for the sqlq:ddl lock', 1;",
                            NULL, 0, NULL, err);
    default:
        return SQLQ_OK; /* BEGIN IMMEDIATE holds the only write lock */
    }
}

static sqlq_result run_all(sqlq_db *db, const char *const *sql, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && sql[i]; i++)
        r = sqlq_db_exec(db, sql[i], NULL, 0, NULL, err);
    return r;
}

/* All shared objects present: then ensure needs no DDL (nor the right to create: PostgreSQL
 * checks CREATE privileges before IF NOT EXISTS, and a bridge may run without them). */
static sqlq_result all_present(sqlq_db *db, bool *out, sqlq_error *err)
{
    const char *const objects[] = {
        "tables", "state", sqlq_db_dialect(db) == SQLQ_DIALECT_SQLITE ? "counter" : "lease_token"};
    *out = true;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && *out && i < 3; i++)
        r = sqlq_catalog_object_exists(db, objects[i], out, err);
    return r;
}

sqlq_result sqlq_catalog_ensure(sqlq_db *db, sqlq_error *err)
{
    bool present = false;
    sqlq_result r = all_present(db, &present, err);
    if (r != SQLQ_OK || present)
        return r;
    r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK)
        r = run_all(db, ensure_sql(sqlq_db_dialect(db)), err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    return r;
}

static const char *const OBJECT_EXISTS_SQL[] = {
    [SQLQ_DIALECT_SQLITE] = "SELECT count(*) FROM sqlite_master WHERE name = 'sqlq_' || ?",
    [SQLQ_DIALECT_POSTGRES] = "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
                              "n.oid = c.relnamespace WHERE n.nspname = 'sqlq' AND c.relname = ?",
    [SQLQ_DIALECT_MSSQL] = "SELECT count(*) FROM sys.objects WHERE schema_id = SCHEMA_ID(N'sqlq') "
                           "AND name = ?",
};

sqlq_result sqlq_catalog_object_exists(sqlq_db *db, const char *bare, bool *out, sqlq_error *err)
{
    *out = false;
    sqlq_param p = sqlq_param_text(bare);
    int64_t n = 0;
    sqlq_result r = sqlq_db_query_int(db, OBJECT_EXISTS_SQL[sqlq_db_dialect(db)], &p, 1, &n, err);
    *out = r == SQLQ_OK && n > 0;
    return r;
}

sqlq_result sqlq_catalog_exists(sqlq_db *db, bool *out, sqlq_error *err)
{
    bool a = false, b = false;
    sqlq_result r = sqlq_catalog_object_exists(db, "tables", &a, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, "state", &b, err);
    *out = a && b;
    return r;
}

static sqlq_result registry_sql(sqlq_db *db, const char *head, const char *tail, char **out,
                                sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "%s", head);
    sqlq_catalog_object(&q, "tables");
    sqlq_sql_text_add(&q, "%s", tail);
    return sqlq_sql_text_take(&q, out, err);
}

sqlq_result sqlq_catalog_register(sqlq_db *db, const char *kind, const char *bridge,
                                  const char *table_key, const char *object, sqlq_error *err)
{
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    char *sql = NULL;
    char tail[512];
    if (d == SQLQ_DIALECT_MSSQL)
        snprintf(tail, sizeof(tail),
                 " AS r USING (SELECT ? AS kind, ? AS bridge_name, ? AS table_name, ? AS "
                 "object_name) AS s ON r.kind = s.kind AND r.bridge_name = s.bridge_name AND "
                 "r.table_name = s.table_name WHEN MATCHED THEN UPDATE SET object_name = "
                 "s.object_name WHEN NOT MATCHED THEN INSERT (kind, bridge_name, table_name, "
                 "object_name, created_ms) VALUES (s.kind, s.bridge_name, s.table_name, "
                 "s.object_name, %s);",
                 sqlq_dialect_now_ms(d));
    else
        snprintf(tail, sizeof(tail),
                 " (kind, bridge_name, table_name, object_name, created_ms) VALUES (?, ?, ?, ?, "
                 "%s) ON CONFLICT (kind, bridge_name, table_name) DO UPDATE SET object_name = "
                 "excluded.object_name",
                 sqlq_dialect_now_ms(d));
    sqlq_result r = registry_sql(db, d == SQLQ_DIALECT_MSSQL ? "MERGE " : "INSERT INTO ", tail,
                                 &sql, err);
    sqlq_param p[4] = {sqlq_param_text(kind), sqlq_param_text(bridge ? bridge : ""),
                       sqlq_param_text(table_key), sqlq_param_text(object)};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, 4, NULL, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_unregister(sqlq_db *db, const char *kind, const char *bridge,
                                    const char *table_key, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_result r = registry_sql(db, "DELETE FROM ",
                                 " WHERE kind = ? AND bridge_name = ? AND table_name = ?", &sql,
                                 err);
    sqlq_param p[3] = {sqlq_param_text(kind), sqlq_param_text(bridge ? bridge : ""),
                       sqlq_param_text(table_key)};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, 3, NULL, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_list(sqlq_db *db, const char *table_key, json_t **out, sqlq_error *err)
{
    *out = NULL;
    char *sql = NULL;
    sqlq_result r = registry_sql(db, "SELECT kind, bridge_name, table_name, object_name FROM ",
                                 table_key ? " WHERE table_name = ? ORDER BY kind, bridge_name"
                                           : " ORDER BY table_name, kind, bridge_name",
                                 &sql, err);
    sqlq_param p = sqlq_param_text(table_key);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, &p, table_key ? 1 : 0, out, err);
    free(sql);
    return r;
}

static const char *const DROP_SQLITE[] = {"DROP TABLE IF EXISTS sqlq_cursor_state",
                                          "DROP TABLE IF EXISTS sqlq_tables",
                                          "DROP TABLE IF EXISTS sqlq_state",
                                          "DROP TABLE IF EXISTS sqlq_counter", NULL};
static const char *const DROP_POSTGRES[] = {
    "DROP TABLE IF EXISTS sqlq.cursor_state", "DROP TABLE IF EXISTS sqlq.tables",
    "DROP TABLE IF EXISTS sqlq.state",
    "DROP SEQUENCE IF EXISTS sqlq.lease_token", "DROP SCHEMA IF EXISTS sqlq RESTRICT", NULL};
static const char *const DROP_MSSQL[] = {
    "IF OBJECT_ID(N'sqlq.cursor_state', N'U') IS NOT NULL DROP TABLE sqlq.cursor_state",
    "IF OBJECT_ID(N'sqlq.tables', N'U') IS NOT NULL DROP TABLE sqlq.tables",
    "IF OBJECT_ID(N'sqlq.state', N'U') IS NOT NULL DROP TABLE sqlq.state",
    "IF OBJECT_ID(N'sqlq.lease_token', N'SO') IS NOT NULL DROP SEQUENCE sqlq.lease_token",
    "IF SCHEMA_ID(N'sqlq') IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sys.objects WHERE "
    "schema_id = SCHEMA_ID(N'sqlq')) EXEC(N'DROP SCHEMA sqlq')",
    NULL};

static sqlq_result count_rows(sqlq_db *db, const char *bare, int64_t *out, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "SELECT count(*) FROM ");
    sqlq_catalog_object(&q, bare);
    sqlq_result r = sqlq_sql_text_take(&q, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, sql, NULL, 0, out, err);
    free(sql);
    return r;
}

sqlq_result sqlq_catalog_drop_if_unused(sqlq_db *db, bool *out_dropped, sqlq_error *err)
{
    if (out_dropped)
        *out_dropped = false;
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    bool exists = false;
    sqlq_result r = sqlq_catalog_exists(db, &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    int64_t registered = 0, states = 0, cursors = 0;
    bool have_cursors = false; /* created by the first cursor source or backfill only */
    r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK)
        r = count_rows(db, "tables", &registered, err);
    if (r == SQLQ_OK)
        r = count_rows(db, "state", &states, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, "cursor_state", &have_cursors, err);
    if (r == SQLQ_OK && have_cursors)
        r = count_rows(db, "cursor_state", &cursors, err);
    bool unused = r == SQLQ_OK && registered == 0 && states == 0 && cursors == 0;
    if (unused)
        r = run_all(db,
                    d == SQLQ_DIALECT_SQLITE     ? DROP_SQLITE
                    : d == SQLQ_DIALECT_POSTGRES ? DROP_POSTGRES
                                                 : DROP_MSSQL,
                    err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        return r;
    }
    if (out_dropped)
        *out_dropped = unused;
    if (unused)
        SQLQ_INFO("catalog_dropped", "reason=unused");
    return SQLQ_OK;
}
