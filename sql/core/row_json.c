#include "row_json.h"

#include "buf.h"
#include "column_value.h"
#include "dialect.h"
#include "diag.h"
#include "wtext.h"

#include <ctype.h>
#include <sqlext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHUNK 8192

typedef struct row_column {
    char *name;
    char type_name[64];
    SQLSMALLINT sql_type;
    sqlq_value_kind kind;
    bool exact;  /* SQLQ_ROW_JSON_EXACT_COL: the exact text of the next column's REAL value */
    bool marker; /* SQLQ_ROW_JSON_TIME_TEXT: the next column is a date/time as text */
} row_column;

struct sqlq_row_json {
    SQLHSTMT stmt;
    const sqlq_dialect *dialect;
    row_column *cols;
    size_t ncols;
    sqlq_buf value; /* scratch for one value, reused across columns and rows */
};

json_t *sqlq_row_json_value(short sql_type, const char *type_name, const sqlq_dialect *dialect,
                            const char *text, size_t len)
{
    return sqlq_column_value(sqlq_column_value_kind(sql_type, type_name ? type_name : "", dialect),
                             dialect, text, len);
}

/* SQL Server's narrow calls follow the client code page; its text is read as UTF-16. */
static bool wide_text(const sqlq_row_json *r, sqlq_value_kind kind)
{
    return r->dialect->wide_text && kind != SQLQ_VALUE_BINARY;
}

/* Read column col (1-based) whole into r->value with SQLGetData, piece by piece (01004 =
 * more data). *is_null is set for SQL NULL. */
static sqlq_result read_column(sqlq_row_json *r, SQLUSMALLINT col, sqlq_value_kind kind,
                               bool *is_null, sqlq_error *err)
{
    SQLSMALLINT ctype = kind == SQLQ_VALUE_BINARY ? SQL_C_BINARY : SQL_C_CHAR;
    size_t terminator = kind == SQLQ_VALUE_BINARY ? 0 : 1;
    if (wide_text(r, kind))
        ctype = SQL_C_WCHAR, terminator = sizeof(SQLWCHAR);
    char chunk[CHUNK];
    sqlq_buf_reset(&r->value);
    *is_null = false;
    for (;;) {
        SQLLEN ind = 0;
        SQLRETURN rc = SQLGetData(r->stmt, col, ctype, chunk, (SQLLEN)sizeof(chunk), &ind);
        if (rc == SQL_NO_DATA)
            break; /* every piece has been read */
        if (!SQL_SUCCEEDED(rc))
            return sqlq_diag_set(err, SQL_HANDLE_STMT, r->stmt, "read column", NULL);
        if (ind == SQL_NULL_DATA) {
            *is_null = true;
            return SQLQ_OK;
        }
        size_t room = sizeof(chunk) - terminator;
        bool more = rc == SQL_SUCCESS_WITH_INFO && (ind == SQL_NO_TOTAL || (size_t)ind > room);
        size_t got = more ? room : (size_t)ind;
        if (got > room)
            got = room;
        sqlq_result res = sqlq_buf_add(&r->value, chunk, got);
        if (res != SQLQ_OK)
            return sqlq_error_set(err, res, false, "column %u: value over %zu bytes", col,
                                  (size_t)SQLQ_BUF_DEFAULT_CAP);
        if (!more)
            break;
    }
    if (ctype == SQL_C_WCHAR) {
        sqlq_buf utf8;
        sqlq_buf_init(&utf8, 0);
        size_t units = r->value.len / sizeof(uint16_t);
        uint16_t *w = malloc(units ? units * sizeof(uint16_t) : 1);
        if (!w)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory reading column");
        if (units)
            memcpy(w, r->value.data, units * sizeof(uint16_t));
        sqlq_result res = sqlq_wtext_to_utf8(w, units, &utf8);
        free(w);
        if (res != SQLQ_OK)
            return sqlq_error_set(err, res, false, "column %u: text too large", col);
        sqlq_buf_free(&r->value);
        r->value = utf8;
    }
    return SQLQ_OK;
}

/* The JSON value of column i of the current row. */
static sqlq_result column_value(sqlq_row_json *r, size_t i, json_t **out, sqlq_error *err)
{
    const row_column *c = &r->cols[i];
    bool is_null = false;
    *out = NULL;
    sqlq_result res = read_column(r, (SQLUSMALLINT)(i + 1), c->kind, &is_null, err);
    if (res != SQLQ_OK)
        return res;
    *out = is_null ? json_null()
                   : sqlq_column_value(c->kind, r->dialect, r->value.data ? r->value.data : "",
                                       r->value.len);
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "column %s: cannot build JSON value",
                              c->name);
    return SQLQ_OK;
}

/* An SQLQ_ROW_JSON_EXACT_COL value as the text the database wrote (JSON null when none). */
static sqlq_result exact_text(sqlq_row_json *r, size_t i, json_t **out, sqlq_error *err)
{
    bool is_null = false;
    *out = NULL;
    sqlq_result res = read_column(r, (SQLUSMALLINT)(i + 1), r->cols[i].kind, &is_null, err);
    if (res != SQLQ_OK)
        return res;
    *out = is_null || r->value.len == 0 ? json_null() : json_stringn(r->value.data, r->value.len);
    return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

sqlq_result sqlq_row_json_read(sqlq_row_json *r, json_t **out_row, sqlq_error *err)
{
    *out_row = NULL;
    json_t *row = json_object();
    if (!row)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building a row");
    json_t *exact = NULL; /* the SQLQ_ROW_JSON_EXACT_COL value just read, for the next column */
    for (size_t i = 0; i < r->ncols; i++) {
        if (r->cols[i].marker)
            continue; /* never read: it only names the next column's kind */
        json_t *v = NULL;
        sqlq_result res =
            r->cols[i].exact ? exact_text(r, i, &v, err) : column_value(r, i, &v, err);
        if (res == SQLQ_OK && r->cols[i].exact) {
            json_decref(exact);
            exact = v;
            continue;
        }
        if (res == SQLQ_OK && json_is_string(exact) && !json_is_null(v))
            v = sqlq_column_value_exact(v, r->cols[i].kind, json_string_value(exact));
        json_decref(exact);
        exact = NULL;
        if (res == SQLQ_OK && (!v || json_object_set_new(row, r->cols[i].name, v) != 0))
            res = sqlq_error_set(err, SQLQ_E_NOMEM, false, "column %s: cannot build JSON value",
                                 r->cols[i].name);
        if (res != SQLQ_OK) {
            json_decref(exact);
            json_decref(row);
            return res;
        }
    }
    json_decref(exact);
    *out_row = row;
    return SQLQ_OK;
}

sqlq_result sqlq_row_json_read_values(sqlq_row_json *r, json_t **out_values, sqlq_error *err)
{
    *out_values = NULL;
    json_t *values = json_array();
    if (!values)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building a row");
    for (size_t i = 0; i < r->ncols; i++) {
        json_t *v = NULL;
        sqlq_result res = column_value(r, i, &v, err);
        if (res == SQLQ_OK && json_array_append_new(values, v) != 0)
            res = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building a row");
        if (res != SQLQ_OK) {
            json_decref(values);
            return res;
        }
    }
    *out_values = values;
    return SQLQ_OK;
}

/* The column's name, read wide for SQL Server (see wide_text) and narrow otherwise. */
static char *column_name(SQLHSTMT stmt, SQLUSMALLINT col, const sqlq_dialect *d,
                         SQLSMALLINT *sql_type, SQLRETURN *rc)
{
    SQLULEN size = 0;
    SQLSMALLINT digits = 0, nullable = 0, len = 0;
    if (d->wide_text) {
        SQLWCHAR w[512];
        *rc = SQLDescribeColW(stmt, col, w, (SQLSMALLINT)(sizeof(w) / sizeof(w[0])), &len, sql_type,
                              &size, &digits, &nullable);
        if (!SQL_SUCCEEDED(*rc))
            return NULL;
        size_t units = (size_t)len < sizeof(w) / sizeof(w[0]) ? (size_t)len : 511;
        uint16_t u[512];
        for (size_t i = 0; i < units; i++)
            u[i] = (uint16_t)w[i];
        sqlq_buf b;
        sqlq_buf_init(&b, 0);
        if (sqlq_wtext_to_utf8(u, units, &b) != SQLQ_OK)
            return NULL;
        return sqlq_buf_take(&b, NULL);
    }
    SQLCHAR name[1024];
    *rc = SQLDescribeCol(stmt, col, name, (SQLSMALLINT)sizeof(name), &len, sql_type, &size, &digits,
                         &nullable);
    if (!SQL_SUCCEEDED(*rc))
        return NULL;
    return strdup((const char *)name);
}

static void lowercase(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

sqlq_result sqlq_row_json_create(SQLHSTMT stmt, const sqlq_dialect *dialect, sqlq_row_json **out,
                                 sqlq_error *err)
{
    *out = NULL;
    SQLSMALLINT n = 0;
    SQLRETURN rc = SQLNumResultCols(stmt, &n);
    if (!SQL_SUCCEEDED(rc))
        return sqlq_diag_set(err, SQL_HANDLE_STMT, stmt, "describe result", NULL);
    sqlq_row_json *r = calloc(1, sizeof(*r));
    if (!r || (n > 0 && !(r->cols = calloc((size_t)n, sizeof(row_column))))) {
        free(r);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory describing a result");
    }
    r->stmt = stmt;
    r->dialect = dialect;
    sqlq_buf_init(&r->value, 0);
    for (SQLSMALLINT i = 0; i < n; i++) {
        row_column *c = &r->cols[i];
        SQLUSMALLINT col = (SQLUSMALLINT)(i + 1);
        c->name = column_name(stmt, col, dialect, &c->sql_type, &rc);
        r->ncols = (size_t)i + 1;
        if (!c->name) {
            sqlq_row_json_destroy(r);
            if (!SQL_SUCCEEDED(rc))
                return sqlq_diag_set(err, SQL_HANDLE_STMT, stmt, "describe column", NULL);
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory describing a result");
        }
        SQLSMALLINT tlen = 0;
        if (!SQL_SUCCEEDED(SQLColAttribute(stmt, col, SQL_DESC_TYPE_NAME, c->type_name,
                                           (SQLSMALLINT)sizeof(c->type_name), &tlen, NULL)))
            c->type_name[0] = '\0';
        lowercase(c->type_name);
        c->kind = sqlq_column_value_kind(c->sql_type, c->type_name, dialect);
        c->exact = strcmp(c->name, SQLQ_ROW_JSON_EXACT_COL) == 0;
        c->marker = strcmp(c->name, SQLQ_ROW_JSON_TIME_TEXT) == 0;
        if (i > 0 && r->cols[i - 1].marker)
            c->kind = SQLQ_VALUE_TIME_TEXT;
    }
    *out = r;
    return SQLQ_OK;
}

void sqlq_row_json_destroy(sqlq_row_json *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncols; i++)
        free(r->cols[i].name);
    free(r->cols);
    sqlq_buf_free(&r->value);
    free(r);
}

size_t sqlq_row_json_ncols(const sqlq_row_json *r)
{
    return r->ncols;
}

const char *sqlq_row_json_name(const sqlq_row_json *r, size_t i)
{
    return i < r->ncols ? r->cols[i].name : NULL;
}

short sqlq_row_json_sql_type(const sqlq_row_json *r, size_t i)
{
    return i < r->ncols ? r->cols[i].sql_type : 0;
}

bool sqlq_row_json_needs_text(const sqlq_dialect *d, const sqlq_column *c)
{
    if (!d->exact_time_text)
        return false;
    switch (c->sql_type) {
    case SQL_TYPE_DATE:
    case SQL_DATE:
    case SQL_TYPE_TIME:
    case SQL_TIME:
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP: return true;
    default: break;
    }
    const char *t = c->type ? c->type : "";
    return strncasecmp(t, "date", 4) == 0 || strncasecmp(t, "time", 4) == 0;
}

/* With dynamic types (SQLite), the affinity of the declared type (lowercase): TEXT affinity
 * (char, clob, text, unless int) turns every REAL it is given into text; every other affinity
 * may hold a REAL. */
static bool may_hold_real(const sqlq_column *c)
{
    const char *t = c->type ? c->type : "";
    return !(strstr(t, "char") || strstr(t, "clob") || strstr(t, "text")) || strstr(t, "int");
}

/* CASE WHEN typeof(p"c") = 'real' THEN quote(p"c") END AS "__sqlq_exact", */
static sqlq_result exact_sql(const sqlq_dialect *d, const char *prefix, const char *name,
                             sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_printf(out, "CASE WHEN typeof(%s", prefix ? prefix : "");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(out, ") = 'real' THEN quote(%s", prefix ? prefix : "");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") END AS ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, SQLQ_ROW_JSON_EXACT_COL, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ", ");
    return r;
}

/* CAST(p"c" AS text): the server's own text of a date/time (DateStyle ISO, TimeZone UTC). */
static sqlq_result time_text_sql(const sqlq_dialect *d, const char *prefix, const sqlq_column *c,
                                 sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "CAST(");
    if (r == SQLQ_OK && prefix)
        r = sqlq_buf_adds(out, prefix);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " AS text)");
    return r;
}

sqlq_result sqlq_row_json_select_sql(const sqlq_dialect *d, const char *prefix,
                                     const sqlq_column *c, sqlq_buf *out)
{
    if (sqlq_row_json_needs_text(d, c)) {
        sqlq_result r = sqlq_buf_adds(out, "NULL AS \"" SQLQ_ROW_JSON_TIME_TEXT "\", ");
        return r == SQLQ_OK ? time_text_sql(d, prefix, c, out) : r;
    }
    sqlq_result r = SQLQ_OK;
    if (d->dynamic_types && may_hold_real(c))
        r = exact_sql(d, prefix, c->name, out);
    if (r == SQLQ_OK && prefix)
        r = sqlq_buf_adds(out, prefix);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    return r;
}

/* MariaDB/MySQL TINYINT(1), declared so (BOOLEAN is its alias). */
static bool tinyint1(const sqlq_dialect *d, const sqlq_column *c)
{
    return d->tinyint1_bool && c->type && strncasecmp(c->type, "tinyint(1)", 10) == 0;
}

bool sqlq_row_json_needs_fixup(const sqlq_dialect *d, const sqlq_column *c)
{
    return sqlq_row_json_needs_text(d, c) || (d->dynamic_types && may_hold_real(c)) ||
           tinyint1(d, c);
}

sqlq_result sqlq_row_json_fixup_sql(const sqlq_dialect *d, const char *prefix, const sqlq_column *c,
                                    sqlq_buf *out)
{
    if (sqlq_row_json_needs_text(d, c))
        return time_text_sql(d, prefix, c, out);
    const char *p = prefix ? prefix : "";
    if (tinyint1(d, c)) { /* 'true'/'false' for 0 and 1, NULL (the number stays) otherwise */
        sqlq_result r = sqlq_buf_printf(out, "CASE %s", p);
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, c->name, out);
        return r == SQLQ_OK ? sqlq_buf_adds(out, " WHEN 0 THEN 'false' WHEN 1 THEN 'true' END") : r;
    }
    sqlq_result r = sqlq_buf_printf(out, "CASE WHEN typeof(%s", p);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(out, ") = 'real' THEN quote(%s", p);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") END");
    return r;
}

json_t *sqlq_row_json_fixup(const sqlq_dialect *d, const sqlq_column *c, json_t *v,
                            const json_t *fix)
{
    const char *text = json_string_value(fix);
    if (!text || json_is_null(v))
        return v;
    if (tinyint1(d, c)) {
        json_decref(v);
        return strcmp(text, "true") == 0 ? json_true() : json_false();
    }
    if (sqlq_row_json_needs_text(d, c)) {
        json_t *t = sqlq_column_value_time_text(text, strlen(text));
        if (!t)
            return v;
        json_decref(v);
        return t;
    }
    return sqlq_column_value_exact(
        v, sqlq_column_value_kind(c->sql_type, c->type ? c->type : "", d), text);
}
