/*
 * table: columns and primary key of a user table, from the catalog of each database.
 * The table name travels only as a bound parameter: SQLite's pragma_table_info takes it as an
 * argument, PostgreSQL resolves the quoted name with to_regclass (search_path, exactly as a
 * query would), SQL Server with OBJECT_ID (the user's default schema, usually dbo).
 */
#include "table.h"
#include "json_int.h"
#include "table_key.h"

#include "buf.h"
#include "dialect_parts.h"

#include <ctype.h>
#include <sqlext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The dialect's describe_sql returns, per column in table order: schema, table, column,
 * declared type, nullable (1/0), position in the primary key (1-based, 0 = not in it). */
const char *sqlq_table_describe_sql(const sqlq_dialect *d)
{
    return d->describe_sql;
}

sqlq_result sqlq_table_describe_params_quoted(const sqlq_dialect *d, const sqlq_table_name *name,
                                              sqlq_buf *quoted, sqlq_param *params, size_t *nparams)
{
    sqlq_result r = sqlq_dialect_quote_table(d, name, quoted);
    if (r != SQLQ_OK)
        return r;
    params[0] = sqlq_param_text(sqlq_buf_str(quoted));
    *nparams = 1;
    return SQLQ_OK;
}

sqlq_result sqlq_table_describe_params(const sqlq_dialect *d, const sqlq_table_name *name,
                                       sqlq_buf *quoted, sqlq_param *params, size_t *nparams)
{
    return d->describe_params(d, name, quoted, params, nparams);
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* PostgreSQL (format_type) and SQL Server type names: the longest known name that the type
 * starts with, followed by the end, a blank or "(" ("datetime2" is not "date"). */
short sqlq_table_sql_type_server(const char *t)
{
    static const struct {
        const char *name;
        short type;
    } map[] = {
        /* clang-format off */
        {"boolean", SQL_BIT},          {"bit", SQL_BIT},
        {"bit varying", SQL_VARCHAR},  {"tinyint", SQL_TINYINT},
        {"smallint", SQL_SMALLINT},    {"int2", SQL_SMALLINT},
        {"integer", SQL_INTEGER},      {"int", SQL_INTEGER},
        {"int4", SQL_INTEGER},         {"bigint", SQL_BIGINT},
        {"int8", SQL_BIGINT},          {"numeric", SQL_NUMERIC},
        {"decimal", SQL_DECIMAL},      {"money", SQL_DECIMAL},
        {"smallmoney", SQL_DECIMAL},   {"real", SQL_REAL},
        {"float4", SQL_REAL},          {"double precision", SQL_DOUBLE},
        {"float", SQL_DOUBLE},         {"float8", SQL_DOUBLE},
        {"timestamp", SQL_TYPE_TIMESTAMP}, {"timestamptz", SQL_TYPE_TIMESTAMP},
        {"datetime", SQL_TYPE_TIMESTAMP},  {"datetime2", SQL_TYPE_TIMESTAMP},
        {"datetimeoffset", SQL_TYPE_TIMESTAMP}, {"smalldatetime", SQL_TYPE_TIMESTAMP},
        {"date", SQL_TYPE_DATE},       {"time", SQL_TYPE_TIME},
        {"timetz", SQL_TYPE_TIME},     {"uuid", SQL_GUID},
        {"uniqueidentifier", SQL_GUID}, {"bytea", SQL_VARBINARY},
        {"varbinary", SQL_VARBINARY},  {"binary", SQL_BINARY},
        {"image", SQL_LONGVARBINARY},  {"nvarchar", SQL_WVARCHAR},
        {"nchar", SQL_WCHAR},          {"ntext", SQL_WLONGVARCHAR},
        {"text", SQL_LONGVARCHAR},     {"character", SQL_CHAR},
        {"character varying", SQL_VARCHAR}, {"varchar", SQL_VARCHAR},
        {"char", SQL_CHAR},
        /* clang-format on */
    };
    size_t best = 0;
    short type = SQL_VARCHAR; /* json, xml, interval, arrays, user types: text */
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        size_t n = strlen(map[i].name);
        if (n <= best || !starts(t, map[i].name))
            continue;
        if (t[n] == '\0' || t[n] == ' ' || t[n] == '(') { /* t[n] exists: t starts with name */
            best = n;
            type = map[i].type;
        }
    }
    return type;
}

short sqlq_table_sql_type(const sqlq_dialect *d, const char *type_name)
{
    char t[128];
    size_t n = 0;
    for (; type_name && type_name[n] && n + 1 < sizeof(t); n++)
        t[n] = (char)tolower((unsigned char)type_name[n]);
    t[n] = '\0';
    return d->sql_type(t);
}

/* ---- describe ------------------------------------------------------------------------------ */

static sqlq_result lookup(sqlq_db *db, const sqlq_table_name *name, json_t **rows, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_buf quoted;
    sqlq_buf_init(&quoted, 4096);
    sqlq_param params[4];
    size_t n = 0;
    sqlq_result r = sqlq_table_describe_params(d, name, &quoted, params, &n);
    if (r != SQLQ_OK) {
        char shown[600];
        sqlq_table_name_format(name, shown, sizeof(shown));
        sqlq_buf_free(&quoted);
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "table name %.520s cannot be quoted",
                              shown);
    }
    if (d->schema_known_sql && name->schema[0]) {
        /* describe_sql fails on an unknown schema: make that "not found" too. */
        int64_t known = 0;
        sqlq_param schema = sqlq_param_text(name->schema);
        r = sqlq_db_query_int(db, d->schema_known_sql, &schema, 1, &known, err);
        if (r == SQLQ_OK && known == 0) {
            sqlq_buf_free(&quoted);
            *rows = json_array();
            return *rows ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        }
    }
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sqlq_table_describe_sql(d), params, n, rows, err);
    sqlq_buf_free(&quoted);
    return r;
}

static const char *str_field(json_t *row, const char *key)
{
    const char *s = json_string_value(json_object_get(row, key));
    return s ? s : "";
}

static long long int_field(json_t *row, const char *key)
{
    json_t *v = json_object_get(row, key);
    int64_t n = 0;
    if (json_is_true(v))
        return 1;
    return sqlq_json_int64(v, &n) ? (long long)n : 0;
}

static void copy_name(char *dst, const char *src)
{
    size_t n = strnlen(src, 255);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static char *lowercase_dup(const char *s)
{
    char *d = strdup(s);
    for (char *p = d; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

/* Columns and primary key (nkey 0 when there is none) from the catalog rows. */
static sqlq_result build(const sqlq_dialect *d, const sqlq_table_name *asked, json_t *rows,
                         sqlq_table *t, sqlq_error *err)
{
    size_t n = json_array_size(rows);
    t->name = *asked;
    if (d->schemas) { /* the catalog's spelling and the resolved schema */
        copy_name(t->name.schema, str_field(json_array_get(rows, 0), "schema_name"));
        copy_name(t->name.name, str_field(json_array_get(rows, 0), "table_name"));
    }
    char shown[600];
    sqlq_table_name_format(&t->name, shown, sizeof(shown));
    if (!(t->columns = calloc(n, sizeof(sqlq_column))) || !(t->key = calloc(n, sizeof(size_t))))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(rows, i);
        sqlq_column *c = &t->columns[i];
        t->ncolumns = i + 1;
        c->name = strdup(str_field(row, "column_name"));
        c->type = lowercase_dup(str_field(row, "type_name"));
        if (!c->name || !c->type)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        c->sql_type = sqlq_table_sql_type(d, c->type);
        c->nullable = int_field(row, "nullable") != 0;
        long long pos = int_field(row, "key_pos");
        if (pos < 0 || (size_t)pos > n)
            return sqlq_error_set(err, SQLQ_E_INVALID, false, "table %s: odd key position %lld",
                                  shown, pos);
        c->key_pos = (int)pos;
        c->in_key = pos > 0;
        if (pos > 0) {
            if (t->key[pos - 1] != 0)
                return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                      "table %s: key position %lld twice", shown, pos);
            t->key[pos - 1] = i + 1; /* 1-based while filling, to spot gaps */
            t->nkey++;
        }
    }
    for (size_t k = 0; k < t->nkey; k++) {
        if (t->key[k] == 0)
            return sqlq_error_set(err, SQLQ_E_INVALID, false, "table %s: gap in the primary key",
                                  shown);
        t->key[k]--;
    }
    return SQLQ_OK;
}

sqlq_result sqlq_table_describe(sqlq_db *db, const sqlq_table_name *name, sqlq_table **out,
                                sqlq_error *err)
{
    sqlq_result r = sqlq_table_describe_any(db, name, out, err);
    if (r == SQLQ_OK && (r = sqlq_table_key_require(db, *out, err)) != SQLQ_OK) {
        sqlq_table_free(*out);
        *out = NULL;
    }
    return r;
}

sqlq_result sqlq_table_describe_any(sqlq_db *db, const sqlq_table_name *name, sqlq_table **out,
                                    sqlq_error *err)
{
    *out = NULL;
    const sqlq_dialect *d = sqlq_db_dialect(db);
    json_t *rows = NULL;
    sqlq_result r = lookup(db, name, &rows, err);
    if (r == SQLQ_OK && json_array_size(rows) == 0 && d->folds_case) {
        /* PostgreSQL folds unquoted names to lower case: Orders written on the command line
         * means the table orders unless a table "Orders" exists. */
        sqlq_table_name folded = *name;
        for (char *p = folded.schema; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        for (char *p = folded.name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (memcmp(&folded, name, sizeof(folded)) != 0) {
            json_decref(rows);
            rows = NULL;
            r = lookup(db, &folded, &rows, err);
        }
    }
    if (r != SQLQ_OK)
        return r;
    if (json_array_size(rows) == 0) {
        json_decref(rows);
        char shown[600];
        sqlq_table_name_format(name, shown, sizeof(shown));
        return sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "table %s not found", shown);
    }
    sqlq_table *t = calloc(1, sizeof(*t));
    if (!t) {
        json_decref(rows);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    r = build(d, name, rows, t, err);
    json_decref(rows);
    if (r != SQLQ_OK) {
        sqlq_table_free(t);
        return r;
    }
    *out = t;
    return SQLQ_OK;
}

void sqlq_table_free(sqlq_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ncolumns; i++) {
        free(t->columns[i].name);
        free(t->columns[i].type);
    }
    free(t->columns);
    free(t->key);
    free(t->key_index);
    free(t);
}

const sqlq_column *sqlq_table_column(const sqlq_table *t, const char *name)
{
    if (!t || !name)
        return NULL;
    for (size_t i = 0; i < t->ncolumns; i++)
        if (strcmp(t->columns[i].name, name) == 0)
            return &t->columns[i];
    /* SQLite and SQL Server compare identifiers without case: accept a unique such match. */
    const sqlq_column *found = NULL;
    for (size_t i = 0; i < t->ncolumns; i++) {
        if (strcasecmp(t->columns[i].name, name) == 0) {
            if (found)
                return NULL;
            found = &t->columns[i];
        }
    }
    return found;
}

/* ---- comparing two descriptions ------------------------------------------------------------ */

static bool same_column(const sqlq_column *a, const sqlq_column *b)
{
    return strcmp(a->name, b->name) == 0 && strcasecmp(a->type, b->type) == 0;
}

sqlq_table_change sqlq_table_compare(const sqlq_table *was, const sqlq_table *now)
{
    if (was->nkey != now->nkey)
        return SQLQ_TABLE_KEY_CHANGED;
    for (size_t k = 0; k < was->nkey; k++)
        if (!same_column(&was->columns[was->key[k]], &now->columns[now->key[k]]))
            return SQLQ_TABLE_KEY_CHANGED;
    if (was->ncolumns != now->ncolumns)
        return SQLQ_TABLE_COLUMNS_CHANGED;
    for (size_t i = 0; i < was->ncolumns; i++)
        if (!same_column(&was->columns[i], &now->columns[i]) ||
            was->columns[i].nullable != now->columns[i].nullable)
            return SQLQ_TABLE_COLUMNS_CHANGED;
    return SQLQ_TABLE_SAME;
}

/* Append to out[*at] without overflowing: text is cut, out stays terminated. */
static void append(char *out, size_t size, size_t *at, const char *text)
{
    int n = snprintf(out + *at, size - *at, "%s", text);
    if (n > 0)
        *at += (size_t)n < size - *at ? (size_t)n : size - *at - 1;
}

void sqlq_table_key_text(const sqlq_table *t, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t k = 0; t && k < t->nkey && size > 1; k++) {
        const sqlq_column *c = &t->columns[t->key[k]];
        append(out, size, &at, k ? ", " : "");
        append(out, size, &at, c->name);
        append(out, size, &at, " ");
        append(out, size, &at, c->type);
    }
}

/* The names of a's columns that b lacks (by name; with types: or whose type differs). */
static void missing(const sqlq_table *a, const sqlq_table *b, bool types, char *out, size_t size,
                    size_t *at, const char *label)
{
    bool first = true;
    for (size_t i = 0; i < a->ncolumns; i++) {
        const sqlq_column *other = NULL;
        for (size_t j = 0; j < b->ncolumns && !other; j++)
            if (strcmp(a->columns[i].name, b->columns[j].name) == 0)
                other = &b->columns[j];
        if (types ? !other || strcasecmp(other->type, a->columns[i].type) == 0 : other != NULL)
            continue;
        append(out, size, at, first ? (*at ? " " : "") : ",");
        if (first)
            append(out, size, at, label);
        append(out, size, at, a->columns[i].name);
        first = false;
    }
}

void sqlq_table_change_text(const sqlq_table *was, const sqlq_table *now, char *out, size_t size)
{
    size_t at = 0;
    if (size == 0)
        return;
    out[0] = '\0';
    missing(now, was, false, out, size, &at, "added=");
    missing(was, now, false, out, size, &at, "dropped=");
    missing(now, was, true, out, size, &at, "retyped=");
    if (at == 0)
        append(out, size, &at, "reordered");
}
