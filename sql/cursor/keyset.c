/* keyset: "the rows after this (cursor, key) tuple" as SQL for each dialect (keyset pagination). */
#include "keyset.h"
#include "dialect_parts.h"

#include "dialect.h"
#include "json_int.h"

#include <errno.h>
#include <limits.h>
#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQL Server's datetimeoffset (msodbcsql's SQL_SS_TIMESTAMPOFFSET; not in unixODBC's headers). */
#define SQLQ_SQL_SS_TIMESTAMPOFFSET (-155)

const char *sqlq_value_class_name(sqlq_value_class c)
{
    static const char *const names[] = {"integer", "text", "exact", "timestamp", "timestamptz",
                                        "rowversion"};
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

static bool has(const char *type, const char *part)
{
    return type && strstr(type, part) != NULL;
}

static bool is_text_type(short t)
{
    return t == SQL_CHAR || t == SQL_VARCHAR || t == SQL_LONGVARCHAR || t == SQL_WCHAR ||
           t == SQL_WVARCHAR || t == SQL_WLONGVARCHAR;
}

static bool classify_text(const sqlq_column *c, sqlq_value_class *out, const char **why)
{
    if (has(c->type, "json") || has(c->type, "xml")) {
        *why = "documents (json, xml) have no reliable sort order";
        return false;
    }
    *out = has(c->type, "uuid") ? SQLQ_VALUE_EXACT : SQLQ_VALUE_TEXT;
    return true;
}

bool sqlq_keyset_classify(const sqlq_dialect *d, const sqlq_column *c, sqlq_value_class *out,
                          const char **why)
{
    *why = NULL;
    switch (c->sql_type) {
    case SQL_TINYINT:
    case SQL_SMALLINT:
    case SQL_INTEGER:
    case SQL_BIGINT:
        *out = SQLQ_VALUE_INT;
        return true;
    case SQL_REAL:
    case SQL_FLOAT:
    case SQL_DOUBLE:
        *why = "floating-point values cannot be ordered and compared reliably (rounding makes a "
               "saved value unequal to the stored one)";
        return false;
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP:
        *out = (has(c->type, "tz") || has(c->type, "with time zone") || has(c->type, "offset"))
                   ? SQLQ_VALUE_TIMESTAMPTZ
                   : SQLQ_VALUE_TIMESTAMP;
        return true;
    case SQLQ_SQL_SS_TIMESTAMPOFFSET:
        *out = SQLQ_VALUE_TIMESTAMPTZ;
        return true;
    case SQL_DECIMAL:
    case SQL_NUMERIC:
    case SQL_GUID:
    case SQL_TYPE_DATE:
    case SQL_DATE:
    case SQL_TYPE_TIME:
    case SQL_TIME:
    case SQL_BIT:
        *out = SQLQ_VALUE_EXACT;
        return true;
    case SQL_BINARY:
    case SQL_VARBINARY:
    case SQL_LONGVARBINARY:
        if (d->rowversion && (has(c->type, "timestamp") || has(c->type, "rowversion"))) {
            *out = SQLQ_VALUE_ROWVERSION;
            return true;
        }
        *why = "binary values are not supported in a key or cursor";
        return false;
    default:
        if (is_text_type(c->sql_type))
            return classify_text(c, out, why);
        *why = "this column type has no ordering sqlq can rely on";
        return false;
    }
}

static sqlq_result add_ident(const sqlq_dialect *d, const char *name, sqlq_buf *out)
{
    return sqlq_dialect_quote_ident(d, name, out);
}

/* The declared type without a length or precision, if it is a plain type name; else NULL. */
const char *sqlq_keyset_plain_type(const char *type, char *buf, size_t size)
{
    size_t n = 0;
    for (const char *p = type ? type : ""; *p && *p != '('; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == ' ';
        if (!ok || n + 1 >= size)
            return NULL;
        buf[n++] = ch;
    }
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    buf[n] = '\0';
    return n > 0 ? buf : NULL;
}

sqlq_result sqlq_keyset_value_sql(const sqlq_dialect *d, const sqlq_keyset_col *c, sqlq_buf *out)
{
    return d->keyset_value_sql(c, out);
}

sqlq_result sqlq_keyset_cast_param(const char *type, sqlq_buf *out)
{
    return sqlq_buf_printf(out, "CAST(? AS %s)", type);
}

sqlq_result sqlq_keyset_param_sql(const sqlq_dialect *d, const sqlq_keyset_col *c, sqlq_buf *out)
{
    return d->keyset_param_sql(c, out);
}

sqlq_result sqlq_keyset_param_sql_plain(const sqlq_keyset_col *c, sqlq_buf *out)
{
    (void)c;
    return sqlq_buf_adds(out, "?");
}

static sqlq_result add_list(const sqlq_dialect *d, const sqlq_keyset_col *cols, size_t n,
                            bool params, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; i < n && r == SQLQ_OK; i++) {
        if (i > 0)
            r = sqlq_buf_adds(out, ", ");
        if (r == SQLQ_OK)
            r = params ? sqlq_keyset_param_sql(d, &cols[i], out) : add_ident(d, cols[i].name, out);
    }
    return r;
}

/* "c OP p" for one column; the parameter index is recorded in map. */
static sqlq_result add_cmp(const sqlq_dialect *d, const sqlq_keyset_col *c, const char *op,
                           size_t idx, sqlq_buf *out, size_t *map, size_t *nmap)
{
    sqlq_result r = add_ident(d, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(out, " %s ", op);
    if (r == SQLQ_OK)
        r = sqlq_keyset_param_sql(d, c, out);
    if (r == SQLQ_OK)
        map[(*nmap)++] = idx;
    return r;
}

/* (c_i > ? OR (c_i = ? AND <rest>)), the last column alone: c_n > ?. */
static sqlq_result add_expanded(const sqlq_dialect *d, const sqlq_keyset_col *cols, size_t n,
                                size_t i, sqlq_buf *out, size_t *map, size_t *nmap)
{
    if (i + 1 == n)
        return add_cmp(d, &cols[i], ">", i, out, map, nmap);
    sqlq_result r = sqlq_buf_adds(out, "(");
    if (r == SQLQ_OK)
        r = add_cmp(d, &cols[i], ">", i, out, map, nmap);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " OR (");
    if (r == SQLQ_OK)
        r = add_cmp(d, &cols[i], "=", i, out, map, nmap);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " AND ");
    if (r == SQLQ_OK)
        r = add_expanded(d, cols, n, i + 1, out, map, nmap);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, "))");
    return r;
}

sqlq_result sqlq_keyset_after_sql(const sqlq_dialect *d, const sqlq_keyset_col *cols, size_t n,
                                  sqlq_buf *out, size_t *map, size_t map_cap, size_t *out_nmap)
{
    *out_nmap = 0;
    if (n == 0 || map_cap < 2 * n - 1)
        return SQLQ_E_INVALID;
    if (n == 1)
        return add_cmp(d, &cols[0], ">", 0, out, map, out_nmap);
    if (!d->row_values)
        return add_expanded(d, cols, n, 0, out, map, out_nmap);
    sqlq_result r = sqlq_buf_adds(out, "(");
    if (r == SQLQ_OK)
        r = add_list(d, cols, n, false, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") > (");
    if (r == SQLQ_OK)
        r = add_list(d, cols, n, true, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ")");
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        map[(*out_nmap)++] = i;
    return r;
}

sqlq_result sqlq_keyset_order_sql(const sqlq_dialect *d, const sqlq_keyset_col *cols, size_t n,
                                  sqlq_buf *out)
{
    return add_list(d, cols, n, false, out);
}

sqlq_result sqlq_keyset_param(const sqlq_keyset_col *c, const json_t *v, sqlq_param *out,
                              sqlq_error *err)
{
    if (c->cls == SQLQ_VALUE_INT || c->cls == SQLQ_VALUE_ROWVERSION) {
        int64_t x = 0;
        if (sqlq_json_int64(v, &x)) {
            *out = sqlq_param_int(x);
            return SQLQ_OK;
        }
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "checkpoint value of column %s is not an integer", c->name);
    }
    if (!json_is_string(v))
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "checkpoint value of column %s is not text", c->name);
    *out = sqlq_param_text(json_string_value(v));
    return SQLQ_OK;
}

char *sqlq_keyset_value_text(const json_t *v)
{
    if (json_is_integer(v)) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        return strdup(buf);
    }
    return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

json_t *sqlq_keyset_value_json(const sqlq_keyset_col *c, const char *text)
{
    int64_t x = 0;
    if ((c->cls == SQLQ_VALUE_INT || c->cls == SQLQ_VALUE_ROWVERSION) &&
        sqlq_json_int64_text(text, &x))
        return json_integer((json_int_t)x);
    return json_string(text);
}

/* Read exactly n digits. */
static bool digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char ch = (*p)[i];
        if (ch < '0' || ch > '9')
            return false;
        v = v * 10 + (ch - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool parse_zone(const char *p, int64_t *out_offset_s)
{
    *out_offset_s = 0;
    if (*p == '\0' || ((*p == 'Z' || *p == 'z') && p[1] == '\0'))
        return true;
    if (*p != '+' && *p != '-')
        return false;
    int sign = *p == '-' ? -1 : 1, hh = 0, mm = 0;
    p++;
    if (!digits(&p, 2, &hh))
        return false;
    if (*p == ':')
        p++;
    if (*p && !digits(&p, 2, &mm))
        return false;
    *out_offset_s = sign * (hh * 3600 + mm * 60);
    return *p == '\0';
}

bool sqlq_keyset_parse_iso(const char *text, int64_t *out_us)
{
    const char *p = text;
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    if (!p || !digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    int64_t frac_us = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
            return false;
        if (*p == ':') {
            p++;
            if (!digits(&p, 2, &s))
                return false;
            if (*p == '.') {
                p++;
                int64_t scale = 100000;
                if (*p < '0' || *p > '9')
                    return false;
                for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
                    frac_us += (*p - '0') * scale; /* digits beyond microseconds are dropped */
            }
        }
    }
    int64_t offset_s = 0;
    if (h > 23 || mi > 59 || s > 60 || !parse_zone(p, &offset_s))
        return false;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
    *out_us = secs * 1000000 + frac_us;
    return true;
}

bool sqlq_keyset_version(const sqlq_keyset_col *c, const json_t *v, int64_t *out)
{
    if (c->cls == SQLQ_VALUE_INT || c->cls == SQLQ_VALUE_ROWVERSION)
        return sqlq_json_int64(v, out);
    return json_is_string(v) && sqlq_keyset_parse_iso(json_string_value(v), out);
}
