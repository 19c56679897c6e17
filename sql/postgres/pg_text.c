/* pg_text: see pg_text.h. The trigger source reads a row through psqlODBC and sql/row_json:
 * the value kind of a column (sqlq_value_kind) follows the SQL type psqlODBC reports for it, and
 * date/time columns are selected as the server's text (sqlq_row_json_needs_text). Here the same
 * kind is chosen from the type OID, and the server's text goes through the same conversion
 * (sqlq_column_value); only bytea's text differs from what psqlODBC hands over (bytes). */
#include "pg_text.h"

#include "dialect.h"
#include "row_json.h"
#include "table.h"

#include <ctype.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTEA_OID 17u

/* The SQL type and type name psqlODBC reports for the built-in types whose value kind is not text
 * (psqlODBC 13.02, pgtypes.c); every other type it reports as text (SQL_VARCHAR "unknown",
 * SQL_CHAR, SQL_LONGVARCHAR), and so does sqlq. A domain is reported as the type under it.
 * tests/integration/test_pg_text.c checks this against the driver for every built-in type. */
static const struct {
    uint32_t oid;
    short sql_type;
    const char *name;
} PSQLODBC_TYPES[] = {
    {16, SQL_BIT, "bool"},
    {17, SQL_LONGVARBINARY, "bytea"},
    {20, SQL_BIGINT, "int8"},
    {21, SQL_SMALLINT, "int2"},
    {23, SQL_INTEGER, "int4"},
    {26, SQL_INTEGER, "oid"},
    {28, SQL_INTEGER, "xid"},
    {700, SQL_REAL, "float4"},
    {701, SQL_FLOAT, "float8"},
    {790, SQL_FLOAT, "money"},
    {1082, SQL_TYPE_DATE, "date"},
    {1083, SQL_TYPE_TIME, "time"},
    {1114, SQL_TYPE_TIMESTAMP, "timestamp"},
    {1184, SQL_TYPE_TIMESTAMP, "timestamptz"},
    {1700, SQL_NUMERIC, "numeric"},
    {2950, SQL_GUID, "uuid"},
};

/* Built-in types whose name (format_type) starts with "date" or "time": the trigger source
 * selects them as text (sqlq_row_json_needs_text): date, time, timestamp, timestamptz, timetz,
 * their arrays, daterange and datemultirange and their arrays. */
static const uint32_t TEMPORAL_NAMED[] = {1082, 1083, 1114, 1115, 1182, 1183, 1184,
                                          1185, 1266, 1270, 3912, 3913, 4535, 6155};

/* date, time, timestamp, timestamptz, timetz: a domain over one is read as text too (below). */
static bool temporal(uint32_t oid)
{
    return oid == 1082 || oid == 1083 || oid == 1114 || oid == 1184 || oid == 1266;
}

static bool temporal_named(uint32_t oid)
{
    for (size_t i = 0; i < sizeof(TEMPORAL_NAMED) / sizeof(TEMPORAL_NAMED[0]); i++)
        if (TEMPORAL_NAMED[i] == oid)
            return true;
    return false;
}

/* Whether the trigger source selects the column as the server's text, decided as it decides:
 * by the declared type name. */
static bool selected_as_text(const sqlq_pg_text_type *t, const char *declared)
{
    if (!declared && t->oid < SQLQ_PG_TEXT_FIRST_USER_OID)
        return temporal_named(t->oid);
    char name[256];
    snprintf(name, sizeof(name), "%s", declared ? declared : t->name);
    sqlq_column col;
    memset(&col, 0, sizeof(col));
    col.type = name;
    col.sql_type = sqlq_table_sql_type(&sqlq_dialect_postgres, name);
    return sqlq_row_json_needs_text(&sqlq_dialect_postgres, &col);
}

void sqlq_pg_text_column_init(sqlq_pg_text_column *c, const sqlq_pg_text_type *t,
                              const char *declared)
{
    memset(c, 0, sizeof(*c));
    uint32_t base = t->base_oid ? t->base_oid : t->oid;
    if (selected_as_text(t, declared) || temporal(base)) {
        /* A domain over a date/time type: psqlODBC converts it as the type under it (infinity
         * becomes 9999-12-31 …); its ordinary values give the same JSON as the server's text
         * in to_json's form, and the values psqlODBC cannot hold arrive as they are. */
        c->kind = SQLQ_VALUE_TIME_TEXT;
        return;
    }
    if (strcmp(t->name, "lo") == 0) { /* psqlODBC reads a large object's bytes */
        c->kind = SQLQ_VALUE_BINARY;
        c->by_key = true;
        return;
    }
    short sql_type = SQL_VARCHAR;
    const char *name = "unknown";
    for (size_t i = 0; i < sizeof(PSQLODBC_TYPES) / sizeof(PSQLODBC_TYPES[0]); i++) {
        if (PSQLODBC_TYPES[i].oid == base) {
            sql_type = PSQLODBC_TYPES[i].sql_type;
            name = PSQLODBC_TYPES[i].name;
        }
    }
    c->kind = sqlq_column_value_kind(sql_type, name, &sqlq_dialect_postgres);
    c->bytea = base == BYTEA_OID;
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static bool octal3(const char *s)
{
    return s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7';
}

/* byteaout's text to the bytes: "\x00ff" (bytea_output hex) or the escape format ("a\000\\");
 * false when text is neither. */
static bool bytea_bytes(const char *text, size_t len, unsigned char *out, size_t *out_len)
{
    size_t n = 0;
    if (len >= 2 && text[0] == '\\' && text[1] == 'x') {
        if (len % 2 != 0)
            return false;
        for (size_t i = 2; i < len; i += 2) {
            int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
            if (hi < 0 || lo < 0)
                return false;
            out[n++] = (unsigned char)(hi * 16 + lo);
        }
    } else {
        for (size_t i = 0; i < len; i++) {
            if (text[i] != '\\') {
                out[n++] = (unsigned char)text[i];
            } else if (i + 1 < len && text[i + 1] == '\\') {
                out[n++] = '\\';
                i++;
            } else if (i + 3 < len && octal3(text + i + 1)) {
                out[n++] = (unsigned char)((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                                           (text[i + 3] - '0'));
                i += 3;
            } else {
                return false;
            }
        }
    }
    *out_len = n;
    return true;
}

static json_t *bytea_value(const char *text, size_t len)
{
    unsigned char *bytes = malloc(len ? len : 1);
    if (!bytes)
        return NULL;
    size_t n = 0;
    json_t *v =
        bytea_bytes(text, len, bytes, &n)
            ? sqlq_column_value(SQLQ_VALUE_BINARY, &sqlq_dialect_postgres, (const char *)bytes, n)
            : sqlq_column_value(SQLQ_VALUE_TEXT, &sqlq_dialect_postgres, text, len);
    free(bytes);
    return v;
}

json_t *sqlq_pg_text_value(const sqlq_pg_text_column *c, const char *text, size_t len)
{
    if (!text)
        return json_null();
    if (c->bytea)
        return bytea_value(text, len);
    if (c->by_key)
        return sqlq_column_value(SQLQ_VALUE_TEXT, &sqlq_dialect_postgres, text, len);
    return sqlq_column_value(c->kind, &sqlq_dialect_postgres, text, len);
}

/* ---- the catalog ----------------------------------------------------------------------- */

/* The type's name and the type under its domains (a domain's typbasetype may be a domain). */
static const char TYPE_SQL[] =
    "WITH RECURSIVE d(base, depth) AS ("
    "SELECT t.typbasetype, 1 FROM pg_catalog.pg_type t "
    "WHERE t.oid = CAST(CAST(? AS text) AS oid) AND t.typtype = 'd' "
    "UNION ALL SELECT t.typbasetype, d.depth + 1 FROM d "
    "JOIN pg_catalog.pg_type t ON t.oid = d.base WHERE t.typtype = 'd') "
    "SELECT CAST(t.typname AS text) AS name, CAST(COALESCE((SELECT d.base FROM d "
    "ORDER BY d.depth DESC LIMIT 1), t.oid) AS bigint) AS base "
    "FROM pg_catalog.pg_type t WHERE t.oid = CAST(CAST(? AS text) AS oid)";

sqlq_result sqlq_pg_text_type_read(sqlq_db *db, sqlq_pg_text_type *t, sqlq_error *err)
{
    if (t->oid < SQLQ_PG_TEXT_FIRST_USER_OID) {
        t->base_oid = t->oid;
        return SQLQ_OK;
    }
    sqlq_param p[2] = {sqlq_param_int((int64_t)t->oid), sqlq_param_int((int64_t)t->oid)};
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(db, TYPE_SQL, p, 2, &rows, err);
    if (r != SQLQ_OK)
        return r;
    json_t *row = json_array_get(rows, 0);
    const char *name = json_string_value(json_object_get(row, "name"));
    json_int_t base = json_integer_value(json_object_get(row, "base"));
    if (!name || base <= 0 || base > (json_int_t)UINT32_MAX) {
        json_decref(rows);
        return sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                              "type %u: no such type in pg_type (dropped?)", t->oid);
    }
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->base_oid = (uint32_t)base;
    json_decref(rows);
    return SQLQ_OK;
}

/* ---- the replication connection's settings ------------------------------------------------ */

static sqlq_result add_setting(sqlq_buf *out, const char *name, const char *value)
{
    sqlq_result r = sqlq_buf_printf(out, " -c %s=", name);
    for (const char *p = value; r == SQLQ_OK && *p; p++) {
        if (isspace((unsigned char)*p) || *p == '\\')
            r = sqlq_buf_addc(out, '\\');
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(out, *p);
    }
    return r;
}

sqlq_result sqlq_pg_text_options(const json_t *inherited, sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "-c DateStyle=ISO -c TimeZone=UTC -c extra_float_digits=2 "
                                       "-c client_encoding=UTF8");
    static const char *const INHERITED[] = {"IntervalStyle", "lc_monetary", "bytea_output",
                                            "search_path"};
    for (size_t i = 0; i < sizeof(INHERITED) / sizeof(INHERITED[0]) && r == SQLQ_OK; i++) {
        const json_t *value = json_object_get(inherited, INHERITED[i]);
        if (json_string_length(value) > 0)
            r = add_setting(out, INHERITED[i], json_string_value(value));
    }
    return r;
}

sqlq_result sqlq_pg_text_options_read(sqlq_db *db, sqlq_buf *out, sqlq_error *err)
{
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(db, SQLQ_PG_TEXT_INHERITED_SQL, NULL, 0, &rows, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_pg_text_options(json_array_get(rows, 0), out);
    json_decref(rows);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "cannot build the replication connection's options");
    return SQLQ_OK;
}
