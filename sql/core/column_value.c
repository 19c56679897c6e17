/* column_value: see column_value.h. */
#include "column_value.h"

#include "buf.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <sqlext.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* SQL Server driver types (msodbcsql.h) that have no generic ODBC name. */
#define SS_TIME2 (-154)
#define SS_TIMESTAMPOFFSET (-155)

#define MAX_SAFE_INT 9007199254740992LL /* 2^53: larger integers do not survive a JSON double */

static bool type_is(const char *type_name, const char *prefix)
{
    return strncasecmp(type_name, prefix, strlen(prefix)) == 0;
}

sqlq_value_kind sqlq_column_value_kind(short sql_type, const char *type_name, const sqlq_dialect *d)
{
    if (type_is(type_name, "bool"))
        return SQLQ_VALUE_BOOL;
    if (d->dynamic_types && (type_is(type_name, "numeric") || type_is(type_name, "decimal")))
        return SQLQ_VALUE_DECIMAL;
    if (d->tz_text_in_utc &&
        strcasecmp(type_name, d->utc_type_name ? d->utc_type_name : "timestamptz") == 0)
        return SQLQ_VALUE_TIMESTAMP_UTC;
    switch (sql_type) {
    case SQL_BIT: return SQLQ_VALUE_BOOL;
    case SQL_TINYINT:
    case SQL_SMALLINT:
    case SQL_INTEGER:
    case SQL_BIGINT: return SQLQ_VALUE_INT;
    case SQL_DECIMAL:
    case SQL_NUMERIC: return SQLQ_VALUE_DECIMAL;
    case SQL_REAL:
    case SQL_FLOAT:
    case SQL_DOUBLE: return SQLQ_VALUE_FLOAT;
    case SQL_BINARY:
    case SQL_VARBINARY:
    case SQL_LONGVARBINARY: return SQLQ_VALUE_BINARY;
    case SQL_TYPE_DATE:
    case SQL_DATE: return SQLQ_VALUE_DATE;
    case SQL_TYPE_TIME:
    case SQL_TIME:
    case SS_TIME2: return SQLQ_VALUE_TIME;
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP:
    case SS_TIMESTAMPOFFSET: return SQLQ_VALUE_TIMESTAMP;
    case SQL_GUID: return SQLQ_VALUE_GUID;
    default: return SQLQ_VALUE_TEXT; /* char, varchar, wide text, interval, json, xml … */
    }
}

static json_t *base64_object(const char *bytes, size_t len)
{
    if (len > (size_t)INT32_MAX / 2)
        return NULL;
    size_t n = 4 * ((len + 2) / 3) + 1;
    unsigned char *b64 = malloc(n);
    if (!b64)
        return NULL;
    int written = EVP_EncodeBlock(b64, (const unsigned char *)bytes, (int)len);
    json_t *s = written >= 0 ? json_stringn((const char *)b64, (size_t)written) : NULL;
    free(b64);
    if (!s)
        return NULL;
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "$base64", s) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Text as a JSON string; bytes that are not UTF-8 (possible in SQLite) as {"$base64": …}. */
static json_t *text_value(const char *text, size_t len)
{
    json_t *s = json_stringn(text, len); /* NULL when not valid UTF-8 */
    return s ? s : base64_object(text, len);
}

static bool is_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

static json_t *int_value(const char *text, size_t len, const sqlq_dialect *d);

static json_t *float_value(const char *text, size_t len)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || (size_t)(end - text) != len || !isfinite(v))
        return text_value(text, len); /* NaN, Infinity, or text stored in a SQLite REAL column */
    return json_real(v);
}

static json_t *int_value(const char *text, size_t len, const sqlq_dialect *d)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || (size_t)(end - text) != len) {
        /* SQLite keeps whatever was stored: a REAL or text in an INTEGER column. */
        return d->dynamic_types ? float_value(text, len) : text_value(text, len);
    }
    if (errno == ERANGE || v > MAX_SAFE_INT || v < -MAX_SAFE_INT)
        return json_stringn(text, len); /* exact digits, beyond what a double holds */
    return json_integer((json_int_t)v);
}

static json_t *bool_value(const char *text, size_t len)
{
    static const char *const yes[] = {"1", "t", "true", "y", "yes", "on"};
    static const char *const no[] = {"0", "f", "false", "n", "no", "off"};
    if (len == 1 && (text[0] == '\1' || text[0] == '\0')) /* MySQL BIT(1): the bit as a byte */
        return text[0] ? json_true() : json_false();
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strlen(yes[i]) == len && strncasecmp(text, yes[i], len) == 0)
            return json_true();
        if (strlen(no[i]) == len && strncasecmp(text, no[i], len) == 0)
            return json_false();
    }
    return text_value(text, len);
}

/* Append a UTC offset written as +HH, +HHMM or +HH:MM in ISO 8601 form (+HH:MM); false when
 * tail is not such an offset. */
static bool add_offset(const char *tail, size_t n, sqlq_buf *out)
{
    if (n > 1 && tail[0] == ' ') /* SQL Server datetimeoffset: "… 12:00:00.0000000 +02:00" */
        tail++, n--;
    if (n == 1 && tail[0] == 'Z')
        return sqlq_buf_addc(out, 'Z') == SQLQ_OK;
    if (n < 3 || (tail[0] != '+' && tail[0] != '-') || !is_digits(tail + 1, 2))
        return false;
    const char *mm = "00";
    if (n == 5 && is_digits(tail + 3, 2))
        mm = tail + 3;
    else if (n == 6 && tail[3] == ':' && is_digits(tail + 4, 2))
        mm = tail + 4;
    else if (n != 3)
        return false;
    return sqlq_buf_printf(out, "%c%.2s:%.2s", tail[0], tail + 1, mm) == SQLQ_OK;
}

/* Length of HH:MM[:SS[.fff…]] at s, 0 when s does not start with a time of day. */
static size_t time_len(const char *s, size_t n)
{
    if (n < 5 || !is_digits(s, 2) || s[2] != ':' || !is_digits(s + 3, 2))
        return 0;
    size_t i = 5;
    if (i + 3 <= n && s[i] == ':' && is_digits(s + i + 1, 2)) {
        i += 3;
        if (i < n && s[i] == '.') {
            size_t j = i + 1;
            while (j < n && isdigit((unsigned char)s[j]))
                j++;
            if (j > i + 1)
                i = j;
        }
    }
    return i;
}

/* Drivers write "2024-05-01 12:00:00.5+02" (PostgreSQL) or "2024-05-01 12:00:00" (SQLite,
 * SQL Server); JSON gets ISO 8601: "2024-05-01T12:00:00.5+02:00". Anything else (infinity,
 * BC dates, free text in SQLite) is passed through as a string. */
static json_t *temporal_value(sqlq_value_kind kind, const char *text, size_t len)
{
    size_t date = 0;
    if (kind == SQLQ_VALUE_TIMESTAMP || kind == SQLQ_VALUE_TIMESTAMP_UTC) {
        if (len < 11 || !is_digits(text, 4) || text[4] != '-' || !is_digits(text + 5, 2) ||
            text[7] != '-' || !is_digits(text + 8, 2) || (text[10] != ' ' && text[10] != 'T'))
            return text_value(text, len);
        date = 11;
    } else if (kind == SQLQ_VALUE_DATE) {
        return text_value(text, len);
    }
    size_t t = time_len(text + date, len - date);
    if (t == 0)
        return text_value(text, len);
    sqlq_buf b;
    sqlq_buf_init(&b, 256);
    bool ok = true;
    if (date)
        ok = sqlq_buf_add(&b, text, 10) == SQLQ_OK && sqlq_buf_addc(&b, 'T') == SQLQ_OK;
    ok = ok && sqlq_buf_add(&b, text + date, t) == SQLQ_OK;
    size_t rest = len - date - t;
    if (ok && rest > 0)
        ok = add_offset(text + date + t, rest, &b);
    else if (ok && kind == SQLQ_VALUE_TIMESTAMP_UTC)
        ok = sqlq_buf_adds(&b, "+00:00") == SQLQ_OK;
    json_t *v = ok ? json_stringn(b.data, b.len) : text_value(text, len);
    sqlq_buf_free(&b);
    return v;
}

/* A PostgreSQL date, time, timetz, timestamp or timestamptz as the server writes it with
 * DateStyle ISO (sql/db.c sets it) turned into the form to_json() writes (XSD, ISO 8601), byte
 * for byte: "2024-05-01 10:00:00.5+00" becomes "2024-05-01T10:00:00.5+00:00", "4713-01-01
 * 00:00:00 BC" "4713-01-01T00:00:00 BC". A timestamp's date and time are joined by T and an
 * offset of whole hours gets ":00" (EncodeDateTime and EncodeTimezone differ only there);
 * dates, times, timetz (to_json writes its ISO text), infinity and -infinity stay as they are.
 * The cast spares the server to_json's JSON text and its parsing again by #>> (0.15 vs 0.5 us
 * per value; docs/benchmarks.md). */
json_t *sqlq_column_value_time_text(const char *text, size_t len)
{
    size_t y = 0;
    while (y < len && isdigit((unsigned char)text[y]))
        y++;
    size_t t = y + 7; /* after "-MM-DD " */
    if (y < 4 || t >= len || text[y] != '-' || text[y + 3] != '-' || text[y + 6] != ' ' ||
        !is_digits(text + y + 1, 2) || !is_digits(text + y + 4, 2))
        return text_value(text, len); /* a date alone, a time, infinity */
    size_t tl = time_len(text + t, len - t);
    if (tl == 0)
        return text_value(text, len);
    size_t z = t + tl; /* the offset (timestamptz), " BC" or the end */
    bool hours_only = z + 3 <= len && (text[z] == '+' || text[z] == '-') &&
                      is_digits(text + z + 1, 2) && (z + 3 == len || text[z + 3] == ' ');
    char b[96];
    if (len + 3 >= sizeof(b))
        return text_value(text, len);
    memcpy(b, text, len);
    b[y + 6] = 'T';
    size_t n = len;
    if (hours_only) {
        memmove(b + z + 6, b + z + 3, len - z - 3);
        memcpy(b + z + 3, ":00", 3);
        n += 3;
    }
    return json_stringn(b, n);
}

/* GUIDs in lower case, as PostgreSQL writes them (psqlODBC and SQL Server upper-case them). */
static json_t *guid_value(const char *text, size_t len)
{
    char g[64];
    if (len >= sizeof(g))
        return text_value(text, len);
    for (size_t i = 0; i < len; i++)
        g[i] = (char)tolower((unsigned char)text[i]);
    return json_stringn(g, len);
}

json_t *sqlq_column_value(sqlq_value_kind kind, const sqlq_dialect *d, const char *text, size_t len)
{
    if (!text)
        return json_null();
    switch (kind) {
    case SQLQ_VALUE_BOOL: return bool_value(text, len);
    case SQLQ_VALUE_INT: return int_value(text, len, d);
    case SQLQ_VALUE_FLOAT: return float_value(text, len);
    case SQLQ_VALUE_DECIMAL: return text_value(text, len);
    case SQLQ_VALUE_BINARY: return base64_object(text, len);
    case SQLQ_VALUE_DATE:
    case SQLQ_VALUE_TIME:
    case SQLQ_VALUE_TIMESTAMP:
    case SQLQ_VALUE_TIMESTAMP_UTC: return temporal_value(kind, text, len);
    case SQLQ_VALUE_GUID: return guid_value(text, len);
    case SQLQ_VALUE_TIME_TEXT: return sqlq_column_value_time_text(text, len);
    case SQLQ_VALUE_TEXT: break;
    }
    return text_value(text, len);
}

/* The shortest decimal text that reads back as x (what the sqliteodbc text lost). */
static json_t *shortest_text(double x)
{
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof(buf), "%.*g", digits, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    return json_string(buf);
}

/* A REAL read exactly (SQLQ_ROW_JSON_EXACT_COL) replaces v, the value made of the driver's
 * 15-digit text: a number stays a number, a string (decimal, a date column holding a julian
 * day) becomes the shortest exact text. */
json_t *sqlq_column_value_exact(json_t *v, sqlq_value_kind kind, const char *exact)
{
    char *end = NULL;
    double x = strtod(exact, &end);
    if (!v || end == exact || *end != '\0' || !isfinite(x) || kind == SQLQ_VALUE_BOOL)
        return v;
    json_t *e = json_is_real(v) || json_is_integer(v) || kind == SQLQ_VALUE_FLOAT ? json_real(x)
                : json_is_string(v)                                               ? shortest_text(x)
                                                                                  : NULL;
    if (!e)
        return v;
    json_decref(v);
    return e;
}
