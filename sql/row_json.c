#include "row_json.h"

#include "buf.h"
#include "dialect.h"
#include "diag.h"
#include "wtext.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <sqlext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* SQL Server driver types (msodbcsql.h) that have no generic ODBC name. */
#define SS_TIME2 (-154)
#define SS_TIMESTAMPOFFSET (-155)

#define CHUNK 8192
#define MAX_SAFE_INT 9007199254740992LL /* 2^53: larger integers do not survive a JSON double */

typedef enum {
    KIND_TEXT,
    KIND_BOOL,
    KIND_INT,
    KIND_DECIMAL,
    KIND_FLOAT,
    KIND_BINARY,
    KIND_DATE,
    KIND_TIME,
    KIND_TIMESTAMP,
    KIND_TIMESTAMP_UTC, /* PostgreSQL timestamptz: psqlODBC drops the offset; the session is UTC */
    KIND_GUID,
    KIND_PG_TEMPORAL /* a PostgreSQL date/time as the server's text (SQLQ_ROW_JSON_PG_TEMPORAL) */
} value_kind;

typedef struct row_column {
    char *name;
    char type_name[64];
    SQLSMALLINT sql_type;
    value_kind kind;
    bool exact;  /* SQLQ_ROW_JSON_EXACT_COL: the exact text of the next column's REAL value */
    bool marker; /* SQLQ_ROW_JSON_PG_TEMPORAL: the next column is a date/time as text */
} row_column;

struct sqlq_row_json {
    SQLHSTMT stmt;
    const sqlq_dialect *dialect;
    row_column *cols;
    size_t ncols;
    sqlq_buf value; /* scratch for one value, reused across columns and rows */
};

static bool type_is(const char *type_name, const char *prefix)
{
    return strncasecmp(type_name, prefix, strlen(prefix)) == 0;
}

/* The JSON shape of a column. The ODBC type decides, except where the declared type name
 * knows better: sqliteodbc reports NUMERIC/DECIMAL columns as DOUBLE or VARCHAR, and a
 * psqlODBC connection without BoolsAsChar=0 reports booleans as text. */
static value_kind kind_of(short sql_type, const char *type_name, const sqlq_dialect *d)
{
    if (type_is(type_name, "bool"))
        return KIND_BOOL;
    if (d->dynamic_types && (type_is(type_name, "numeric") || type_is(type_name, "decimal")))
        return KIND_DECIMAL;
    if (d->tz_text_in_utc &&
        strcasecmp(type_name, d->utc_type_name ? d->utc_type_name : "timestamptz") == 0)
        return KIND_TIMESTAMP_UTC;
    switch (sql_type) {
    case SQL_BIT: return KIND_BOOL;
    case SQL_TINYINT:
    case SQL_SMALLINT:
    case SQL_INTEGER:
    case SQL_BIGINT: return KIND_INT;
    case SQL_DECIMAL:
    case SQL_NUMERIC: return KIND_DECIMAL;
    case SQL_REAL:
    case SQL_FLOAT:
    case SQL_DOUBLE: return KIND_FLOAT;
    case SQL_BINARY:
    case SQL_VARBINARY:
    case SQL_LONGVARBINARY: return KIND_BINARY;
    case SQL_TYPE_DATE:
    case SQL_DATE: return KIND_DATE;
    case SQL_TYPE_TIME:
    case SQL_TIME:
    case SS_TIME2: return KIND_TIME;
    case SQL_TYPE_TIMESTAMP:
    case SQL_TIMESTAMP:
    case SS_TIMESTAMPOFFSET: return KIND_TIMESTAMP;
    case SQL_GUID: return KIND_GUID;
    default: return KIND_TEXT; /* char, varchar, wide text, interval, json, xml … */
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
static json_t *temporal_value(value_kind kind, const char *text, size_t len)
{
    size_t date = 0;
    if (kind == KIND_TIMESTAMP || kind == KIND_TIMESTAMP_UTC) {
        if (len < 11 || !is_digits(text, 4) || text[4] != '-' || !is_digits(text + 5, 2) ||
            text[7] != '-' || !is_digits(text + 8, 2) || (text[10] != ' ' && text[10] != 'T'))
            return text_value(text, len);
        date = 11;
    } else if (kind == KIND_DATE) {
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
    else if (ok && kind == KIND_TIMESTAMP_UTC)
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
static json_t *pg_temporal_value(const char *text, size_t len)
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

static json_t *value_of_kind(value_kind kind, const sqlq_dialect *d, const char *text, size_t len)
{
    if (!text)
        return json_null();
    switch (kind) {
    case KIND_BOOL: return bool_value(text, len);
    case KIND_INT: return int_value(text, len, d);
    case KIND_FLOAT: return float_value(text, len);
    case KIND_DECIMAL: return text_value(text, len);
    case KIND_BINARY: return base64_object(text, len);
    case KIND_DATE:
    case KIND_TIME:
    case KIND_TIMESTAMP:
    case KIND_TIMESTAMP_UTC: return temporal_value(kind, text, len);
    case KIND_GUID: return guid_value(text, len);
    case KIND_PG_TEMPORAL: return pg_temporal_value(text, len);
    case KIND_TEXT: break;
    }
    return text_value(text, len);
}

json_t *sqlq_row_json_value(short sql_type, const char *type_name, const sqlq_dialect *dialect,
                            const char *text, size_t len)
{
    return value_of_kind(kind_of(sql_type, type_name ? type_name : "", dialect), dialect, text,
                         len);
}

/* SQL Server's narrow calls follow the client code page; its text is read as UTF-16. */
static bool wide_text(const sqlq_row_json *r, value_kind kind)
{
    return r->dialect->wide_text && kind != KIND_BINARY;
}

/* Read column col (1-based) whole into r->value with SQLGetData, piece by piece (01004 =
 * more data). *is_null is set for SQL NULL. */
static sqlq_result read_column(sqlq_row_json *r, SQLUSMALLINT col, value_kind kind, bool *is_null,
                               sqlq_error *err)
{
    SQLSMALLINT ctype = kind == KIND_BINARY ? SQL_C_BINARY : SQL_C_CHAR;
    size_t terminator = kind == KIND_BINARY ? 0 : 1;
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
static json_t *exact_value(json_t *v, value_kind kind, const char *exact)
{
    char *end = NULL;
    double x = strtod(exact, &end);
    if (!v || end == exact || *end != '\0' || !isfinite(x) || kind == KIND_BOOL)
        return v;
    json_t *e = json_is_real(v) || json_is_integer(v) || kind == KIND_FLOAT ? json_real(x)
                : json_is_string(v)                                         ? shortest_text(x)
                                                                            : NULL;
    if (!e)
        return v;
    json_decref(v);
    return e;
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
                   : value_of_kind(c->kind, r->dialect, r->value.data ? r->value.data : "",
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
        sqlq_result res = r->cols[i].exact ? exact_text(r, i, &v, err) : column_value(r, i, &v, err);
        if (res == SQLQ_OK && r->cols[i].exact) {
            json_decref(exact);
            exact = v;
            continue;
        }
        if (res == SQLQ_OK && json_is_string(exact) && !json_is_null(v))
            v = exact_value(v, r->cols[i].kind, json_string_value(exact));
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
        c->kind = kind_of(c->sql_type, c->type_name, dialect);
        c->exact = strcmp(c->name, SQLQ_ROW_JSON_EXACT_COL) == 0;
        c->marker = strcmp(c->name, SQLQ_ROW_JSON_PG_TEMPORAL) == 0;
        if (i > 0 && r->cols[i - 1].marker)
            c->kind = KIND_PG_TEMPORAL;
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

/* SQLite affinity of the declared type (lowercase): TEXT affinity (char, clob, text, unless
 * int) turns every REAL it is given into text; every other affinity may hold a REAL. */
static bool sqlite_may_hold_real(const sqlq_column *c)
{
    const char *t = c->type ? c->type : "";
    return !(strstr(t, "char") || strstr(t, "clob") || strstr(t, "text")) || strstr(t, "int");
}

/* CASE WHEN typeof(p"c") = 'real' THEN quote(p"c") END AS "__sqlq_exact", */
static sqlq_result exact_sql(const char *prefix, const char *name, sqlq_buf *out)
{
    const sqlq_dialect *d = &sqlq_dialect_sqlite;
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
static sqlq_result pg_text_sql(const char *prefix, const sqlq_column *c, sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "CAST(");
    if (r == SQLQ_OK && prefix)
        r = sqlq_buf_adds(out, prefix);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(&sqlq_dialect_postgres, c->name, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " AS text)");
    return r;
}

sqlq_result sqlq_row_json_select_sql(const sqlq_dialect *d, const char *prefix,
                                     const sqlq_column *c, sqlq_buf *out)
{
    if (sqlq_row_json_needs_text(d, c)) {
        sqlq_result r = sqlq_buf_adds(out, "NULL AS \"" SQLQ_ROW_JSON_PG_TEMPORAL "\", ");
        return r == SQLQ_OK ? pg_text_sql(prefix, c, out) : r;
    }
    sqlq_result r = SQLQ_OK;
    if (d->dynamic_types && sqlite_may_hold_real(c))
        r = exact_sql(prefix, c->name, out);
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
    return sqlq_row_json_needs_text(d, c) || (d->dynamic_types && sqlite_may_hold_real(c)) ||
           tinyint1(d, c);
}

sqlq_result sqlq_row_json_fixup_sql(const sqlq_dialect *d, const char *prefix, const sqlq_column *c,
                                    sqlq_buf *out)
{
    if (sqlq_row_json_needs_text(d, c))
        return pg_text_sql(prefix, c, out);
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
        json_t *t = pg_temporal_value(text, strlen(text));
        if (!t)
            return v;
        json_decref(v);
        return t;
    }
    return exact_value(v, kind_of(c->sql_type, c->type ? c->type : "", d), text);
}
