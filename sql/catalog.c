#include "catalog.h"

#include "ct_query.h"
#include "log.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BASE_PLAIN_MAX 40
#define BASE_PREFIX_MAX 20

void sqlq_catalog_hash12(const char *a, const char *b, char out[13])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, a, strlen(a)) == 1;
    if (ok && b)
        ok = EVP_DigestUpdate(ctx, "\n", 1) == 1 && EVP_DigestUpdate(ctx, b, strlen(b)) == 1;
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen >= 6;
    EVP_MD_CTX_free(ctx);
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 6; i++) {
        out[2 * i] = ok ? hex[md[i] >> 4] : '0';
        out[2 * i + 1] = ok ? hex[md[i] & 15] : '0';
    }
    out[12] = '\0';
}

/* [A-Za-z_][A-Za-z0-9_]*, and lowercase only when `lower` is required. */
static bool plain_ident(const char *s, bool lower)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || c == '_') || c >= 0x80 || (lower && isupper(c)))
            return false;
    }
    return true;
}

/* Append one part of a table key: as is when plain, else "double-quoted" with "" doubling, so
 * the key reads as SQL would (PostgreSQL folds unquoted names: there "Mixed" stays quoted). */
static bool key_part(char *out, size_t size, size_t *pos, const char *part, bool fold)
{
    bool quote = !plain_ident(part, fold);
    size_t need = strlen(part) * 2 + 3;
    if (*pos + need >= size)
        return false;
    if (quote)
        out[(*pos)++] = '"';
    for (const char *p = part; *p; p++) {
        if (*p == '"')
            out[(*pos)++] = '"';
        out[(*pos)++] = *p;
    }
    if (quote)
        out[(*pos)++] = '"';
    out[*pos] = '\0';
    return true;
}

static void make_base(sqlq_dialect_kind d, const sqlq_table_name *t, const char *key,
                      char *out, size_t size)
{
    const char *home = d == SQLQ_DIALECT_POSTGRES ? "public" : d == SQLQ_DIALECT_MSSQL ? "dbo" : "";
    bool home_schema = d == SQLQ_DIALECT_SQLITE || strcmp(t->schema, home) == 0;
    if (home_schema && strlen(t->name) <= BASE_PLAIN_MAX &&
        plain_ident(t->name, d != SQLQ_DIALECT_SQLITE)) {
        size_t i = 0;
        for (; t->name[i] && i + 1 < size; i++)
            out[i] = (char)tolower((unsigned char)t->name[i]);
        out[i] = '\0';
        return;
    }
    char prefix[BASE_PREFIX_MAX + 1];
    size_t n = 0;
    for (const char *p = t->name; *p && n < BASE_PREFIX_MAX; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x80 && (isalnum(c) || c == '_'))
            prefix[n++] = (char)tolower(c);
        else if (n > 0 && prefix[n - 1] != '_')
            prefix[n++] = '_';
    }
    prefix[n] = '\0';
    char hash[13];
    sqlq_catalog_hash12(key, NULL, hash);
    snprintf(out, size, "%s%s%s", n ? prefix : "t", "_", hash);
}

sqlq_result sqlq_catalog_names_make(sqlq_dialect_kind d, const sqlq_table_name *t,
                                    const char *bridge, sqlq_catalog_names *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    out->dialect = d;
    out->table = *t;
    if (!t->name[0])
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "empty table name");
    if (bridge && (!bridge[0] || strlen(bridge) > SQLQ_BRIDGE_NAME_MAX))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "bridge name must be 1..%d bytes", SQLQ_BRIDGE_NAME_MAX);
    size_t pos = 0;
    bool ok = true;
    bool fold = d == SQLQ_DIALECT_POSTGRES;
    if (d != SQLQ_DIALECT_SQLITE && t->schema[0]) {
        ok = key_part(out->table_key, sizeof(out->table_key), &pos, t->schema, fold);
        if (ok && pos + 1 < sizeof(out->table_key)) {
            out->table_key[pos++] = '.';
            out->table_key[pos] = '\0';
        }
    }
    ok = ok && key_part(out->table_key, sizeof(out->table_key), &pos, t->name, fold);
    if (!ok)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table name too long");
    char base[48];
    make_base(d, t, out->table_key, base, sizeof(base));
    snprintf(out->log_table, sizeof(out->log_table), "log_%s", base);
    snprintf(out->log_function, sizeof(out->log_function), "capture_%s", base);
    if (d == SQLQ_DIALECT_SQLITE)
        snprintf(out->trigger, sizeof(out->trigger), "sqlq_log_%s", base);
    else
        snprintf(out->trigger, sizeof(out->trigger), "sqlq_capture");
    if (bridge) {
        snprintf(out->bridge, sizeof(out->bridge), "%s", bridge);
        char hash[13];
        sqlq_catalog_hash12(bridge, out->table_key, hash);
        snprintf(out->leases_table, sizeof(out->leases_table), "leases_%s", hash);
        snprintf(out->lock_key, sizeof(out->lock_key), "sqlq:%s:%s", bridge, out->table_key);
        snprintf(out->lock_hash, sizeof(out->lock_hash), "sqlq:%s", hash);
    }
    return SQLQ_OK;
}

void sqlq_catalog_object(sqlq_sql_text *s, const char *bare)
{
    if (s->dialect == SQLQ_DIALECT_SQLITE) {
        char name[96];
        snprintf(name, sizeof(name), "sqlq_%s", bare);
        sqlq_sql_text_ident(s, name);
        return;
    }
    sqlq_sql_text_ident(s, "sqlq");
    sqlq_sql_text_add(s, ".");
    sqlq_sql_text_ident(s, bare);
}

/* ---- resolving user tables --------------------------------------------------------------- */

static sqlq_result first_row_names(json_t *rows, sqlq_table_name *out, sqlq_error *err)
{
    json_t *row = json_array_get(rows, 0);
    const char *s = json_string_value(json_object_get(row, "s"));
    const char *n = json_string_value(json_object_get(row, "n"));
    if (!n)
        return SQLQ_E_NOT_FOUND;
    if (strlen(n) >= sizeof(out->name) || (s && strlen(s) >= sizeof(out->schema)))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table name too long");
    memset(out, 0, sizeof(*out));
    snprintf(out->schema, sizeof(out->schema), "%s", s ? s : "");
    snprintf(out->name, sizeof(out->name), "%s", n);
    return SQLQ_OK;
}

static const char *const RESOLVE_SQL[] = {
    [SQLQ_DIALECT_SQLITE] = "SELECT '' AS s, name AS n FROM sqlite_master WHERE type = 'table' "
                            "AND name = ? COLLATE NOCASE",
    [SQLQ_DIALECT_POSTGRES] = "SELECT n.nspname AS s, c.relname AS n FROM pg_class c "
                              "JOIN pg_namespace n ON n.oid = c.relnamespace "
                              "WHERE c.oid = to_regclass(CAST(? AS text))",
    [SQLQ_DIALECT_MSSQL] = "SELECT OBJECT_SCHEMA_NAME(OBJECT_ID(?)) AS s, OBJECT_NAME(OBJECT_ID(?)) AS n",
};

static sqlq_result resolve_query(sqlq_db *db, const char *arg, sqlq_table_name *out,
                                 sqlq_error *err)
{
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    sqlq_param p[2] = {sqlq_param_text(arg), sqlq_param_text(arg)};
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(db, RESOLVE_SQL[d], p, d == SQLQ_DIALECT_MSSQL ? 2 : 1, &rows, err);
    if (r == SQLQ_OK)
        r = first_row_names(rows, out, err);
    json_decref(rows);
    return r;
}


sqlq_result sqlq_catalog_resolve(sqlq_db *db, const char *raw, const sqlq_table_name *parsed,
                                 sqlq_table_name *out, sqlq_error *err)
{
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    if (d == SQLQ_DIALECT_SQLITE) {
        if (parsed->schema[0] && strcasecmp(parsed->schema, "main") != 0)
            return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                                  "SQLite: only tables of the main database can be watched, not %s.%s",
                                  parsed->schema, parsed->name);
        sqlq_result r = resolve_query(db, parsed->name, out, err);
        if (r == SQLQ_E_NOT_FOUND)
            return sqlq_error_set(err, r, false, "table %s does not exist", parsed->name);
        return r;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_table(&q, parsed);
    char *quoted = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &quoted, err);
    if (r != SQLQ_OK)
        return r;
    r = resolve_query(db, quoted, out, err);
    if (r == SQLQ_E_NOT_FOUND && raw && d == SQLQ_DIALECT_POSTGRES && strcmp(raw, quoted) != 0) {
        /* Resolve as the server would the text the user typed: unquoted names fold to lowercase
         * and an unqualified name follows search_path. A syntax error only means "not this". */
        sqlq_error ignored;
        sqlq_error_clear(&ignored);
        r = resolve_query(db, raw, out, &ignored);
        if (r != SQLQ_OK && r != SQLQ_E_NOT_FOUND)
            r = SQLQ_E_NOT_FOUND;
    }
    if (r == SQLQ_E_NOT_FOUND)
        sqlq_error_set(err, r, false, "table %s does not exist", raw ? raw : quoted);
    free(quoted);
    return r;
}

sqlq_result sqlq_catalog_lookup(sqlq_db *db, const char *table_text, const char *bridge,
                                sqlq_table **out_table, sqlq_catalog_names *out_names,
                                sqlq_error *err)
{
    *out_table = NULL;
    sqlq_table_name parsed, canon;
    sqlq_result r = sqlq_table_name_parse(table_text, &parsed, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_resolve(db, table_text, &parsed, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_make(sqlq_db_dialect(db), &canon, bridge, out_names, err);
    if (r == SQLQ_OK)
        r = sqlq_table_describe(db, &canon, out_table, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_check_key(*out_table, err);
    if (r != SQLQ_OK) {
        sqlq_table_free(*out_table);
        *out_table = NULL;
    }
    return r;
}

sqlq_result sqlq_catalog_check_key(const sqlq_table *t, sqlq_error *err)
{
    static const char *const reserved[] = {SQLQ_COL_VERSION,  SQLQ_COL_OP,    SQLQ_COL_ATTEMPTS,
                                           SQLQ_COL_EXPIRES, SQLQ_COL_OWNER, SQLQ_COL_TOKEN};
    if (t->nkey == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table %s has no primary key",
                              t->name.name);
    for (size_t i = 0; i < t->nkey; i++) {
        const char *name = t->columns[t->key[i]].name;
        for (size_t j = 0; j < sizeof(reserved) / sizeof(reserved[0]); j++)
            if (strcasecmp(name, reserved[j]) == 0)
                return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                      "primary-key column %s of %s clashes with sqlq's own column "
                                      "of that name: rename it",
                                      name, t->name.name);
    }
    return SQLQ_OK;
}

/* ---- key column types -------------------------------------------------------------------- */

/* A SQLite declared type pasted into DDL: words, optionally with (n) or (n, m). Anything else
 * (it came from the user's own DDL) is dropped: the column then has no declared type, which
 * in SQLite only changes affinity, and values copied from the log keep their storage class. */
static bool safe_sqlite_type(const char *t)
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

static const char *const KEY_TYPES_SQL[] = {
    [SQLQ_DIALECT_SQLITE] = "SELECT name AS n, type AS t FROM pragma_table_info(?)",
    [SQLQ_DIALECT_POSTGRES] = "SELECT a.attname AS n, format_type(a.atttypid, a.atttypmod) AS t "
                              "FROM pg_attribute a WHERE a.attrelid = to_regclass(CAST(? AS text)) "
                              "AND a.attnum > 0 AND NOT a.attisdropped",
    [SQLQ_DIALECT_MSSQL] = "SELECT c.name AS n, TYPE_NAME(c.user_type_id) AS t, c.max_length AS ml, "
                           "c.precision AS p, c.scale AS sc FROM sys.columns c "
                           "WHERE c.object_id = OBJECT_ID(?)",
};

static char *type_of_row(sqlq_dialect_kind d, json_t *row)
{
    const char *t = json_string_value(json_object_get(row, "t"));
    if (!t)
        return strdup("");
    if (d == SQLQ_DIALECT_SQLITE)
        return strdup(safe_sqlite_type(t) ? t : "");
    if (d == SQLQ_DIALECT_POSTGRES)
        return strdup(t); /* format_type quotes what needs quoting */
    char decl[96];
    sqlq_ct_type_decl(t, (long)json_integer_value(json_object_get(row, "ml")),
                      (int)json_integer_value(json_object_get(row, "p")),
                      (int)json_integer_value(json_object_get(row, "sc")), decl, sizeof(decl));
    return strdup(decl);
}

void sqlq_catalog_key_types_free(char **types, size_t n)
{
    if (!types)
        return;
    for (size_t i = 0; i < n; i++)
        free(types[i]);
    free(types);
}

sqlq_result sqlq_catalog_key_types(sqlq_db *db, const sqlq_table *t, char ***out, sqlq_error *err)
{
    *out = NULL;
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    char *target = NULL;
    sqlq_result r = SQLQ_OK;
    if (d == SQLQ_DIALECT_SQLITE) {
        target = strdup(t->name.name);
    } else {
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, d);
        sqlq_sql_text_table(&q, &t->name);
        r = sqlq_sql_text_take(&q, &target, err);
    }
    if (r == SQLQ_OK && !target)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    json_t *rows = NULL;
    sqlq_param p = sqlq_param_text(target);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, KEY_TYPES_SQL[d], &p, 1, &rows, err);
    char **types = r == SQLQ_OK ? calloc(t->nkey, sizeof(char *)) : NULL;
    if (r == SQLQ_OK && !types)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < t->nkey; i++) {
        const char *col = t->columns[t->key[i]].name;
        size_t j;
        json_t *row;
        json_array_foreach(rows, j, row) {
            const char *n = json_string_value(json_object_get(row, "n"));
            if (n && strcmp(n, col) == 0) {
                types[i] = type_of_row(d, row);
                break;
            }
        }
        if (!types[i])
            r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                               "cannot find the type of key column %s", col);
    }
    json_decref(rows);
    free(target);
    if (r != SQLQ_OK) {
        sqlq_catalog_key_types_free(types, t->nkey);
        return r;
    }
    *out = types;
    return SQLQ_OK;
}

void sqlq_catalog_key_defs(sqlq_sql_text *s, const sqlq_table *t, char *const *types)
{
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(s, "%s", i ? ", " : "");
        sqlq_sql_text_ident(s, t->columns[t->key[i]].name);
        sqlq_sql_text_add(s, "%s%s%s", types[i][0] ? " " : "", types[i],
                          s->dialect == SQLQ_DIALECT_SQLITE ? "" : " NOT NULL");
    }
}

void sqlq_catalog_key_list(sqlq_sql_text *s, const sqlq_table *t, const char *prefix)
{
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(s, "%s", i ? ", " : "");
        sqlq_sql_text_col(s, prefix, t->columns[t->key[i]].name);
    }
}

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

sqlq_result sqlq_catalog_ensure(sqlq_db *db, sqlq_error *err)
{
    sqlq_result r = sqlq_db_begin(db, err);
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

static const char *const DROP_SQLITE[] = {"DROP TABLE IF EXISTS sqlq_tables",
                                          "DROP TABLE IF EXISTS sqlq_state",
                                          "DROP TABLE IF EXISTS sqlq_counter", NULL};
static const char *const DROP_POSTGRES[] = {
    "DROP TABLE IF EXISTS sqlq.tables", "DROP TABLE IF EXISTS sqlq.state",
    "DROP SEQUENCE IF EXISTS sqlq.lease_token", "DROP SCHEMA IF EXISTS sqlq RESTRICT", NULL};
static const char *const DROP_MSSQL[] = {
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
    int64_t registered = 0, states = 0;
    r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK)
        r = count_rows(db, "tables", &registered, err);
    if (r == SQLQ_OK)
        r = count_rows(db, "state", &states, err);
    bool unused = r == SQLQ_OK && registered == 0 && states == 0;
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
