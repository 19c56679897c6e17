#include "sink_param.h"

#include "codec.h"

#include <inttypes.h>
#include <math.h>
#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sqlq_result sqlq_sink_params_init(sqlq_sink_params *ps, size_t cap)
{
    memset(ps, 0, sizeof(*ps));
    ps->p = calloc(cap ? cap : 1, sizeof(*ps->p));
    ps->num = calloc(cap ? cap : 1, sizeof(*ps->num));
    ps->bin = calloc(cap ? cap : 1, sizeof(*ps->bin));
    ps->json = calloc(cap ? cap : 1, sizeof(*ps->json));
    ps->cap = cap;
    return ps->p && ps->num && ps->bin && ps->json ? SQLQ_OK : SQLQ_E_NOMEM;
}

void sqlq_sink_params_free(sqlq_sink_params *ps)
{
    for (size_t i = 0; ps->bin && i < ps->cap; i++)
        sqlq_buf_free(&ps->bin[i]);
    for (size_t i = 0; ps->json && i < ps->cap; i++)
        free(ps->json[i]);
    free(ps->p);
    free(ps->num);
    free(ps->bin);
    free(ps->json);
}

static bool integer_column(short t)
{
    return t == SQL_INTEGER || t == SQL_SMALLINT || t == SQL_BIGINT || t == SQL_TINYINT;
}

static bool float_column(short t)
{
    return t == SQL_REAL || t == SQL_FLOAT || t == SQL_DOUBLE;
}

/* "Inf", "-Inf" (how sqliteodbc writes an infinite REAL) or "Infinity" for a SQLite column of
 * REAL or NUMERIC affinity: as text, SQLite would store the word, not the number. */
static bool dynamic_infinity(const sqlq_dialect *d, const sqlq_column *col, const char *s,
                            double *out)
{
    if (!d->dynamic_types || !(float_column(col->sql_type) || col->sql_type == SQL_NUMERIC ||
                               col->sql_type == SQL_DECIMAL))
        return false;
    bool neg = *s == '-';
    const char *w = neg || *s == '+' ? s + 1 : s;
    if (strcmp(w, "Inf") != 0 && strcmp(w, "Infinity") != 0)
        return false;
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return true;
}

/* n decimal digits at *p into *out; *p moves past them. */
static bool digits(const char **p, int n, long *out)
{
    long v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return false;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (Howard Hinnant's algorithms). */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

static void civil_from_days(long z, long *y, long *m, long *d)
{
    z += 719468;
    long era = (z >= 0 ? z : z - 146096) / 146097;
    long doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp + (mp < 10 ? 3 : -9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* "YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}](Z|±HH[:]MM)" as the UTC wall time "YYYY-MM-DD HH:MM:SS[.f]";
 * false (bind the text as it is, the server judges it) for any other text. */
static bool utc_wall_time(const char *s, char out[40])
{
    long y, mo, d, h, mi, sec, oh = 0, om = 0;
    const char *p = s;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != ' ') || !digits((++p, &p), 2, &h) ||
        *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &sec))
        return false;
    char frac[8] = "";
    if (*p == '.') {
        size_t n = strspn(p + 1, "0123456789");
        if (n == 0 || n > 6)
            return false;
        snprintf(frac, sizeof(frac), "%.*s", (int)n + 1, p);
        p += n + 1;
    }
    int sign = *p == '-' ? -1 : 1;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        p++;
        if (!digits(&p, 2, &oh) || (*p == ':' && !p++) || !digits(&p, 2, &om))
            return false;
    } else {
        return false; /* no offset: already wall time */
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    long t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
             sign * (oh * 3600 + om * 60);
    long days = (t >= 0 ? t : t - 86399) / 86400, rem = t - days * 86400;
    civil_from_days(days, &y, &mo, &d);
    char text[160];
    int n = snprintf(text, sizeof(text), "%04ld-%02ld-%02ld %02ld:%02ld:%02ld%s", y, mo, d,
                     rem / 3600, rem / 60 % 60, rem % 60, frac);
    if (y < 1 || y > 9999 || n < 0 || n >= 40)
        return false;
    memcpy(out, text, (size_t)n + 1);
    return true;
}

sqlq_result sqlq_sink_params_add(sqlq_sink_params *ps, const sqlq_dialect *d,
                                 const sqlq_column *col, json_t *v, sqlq_error *err)
{
    size_t i = ps->n++;
    sqlq_param *p = &ps->p[i];
    json_t *b64 =
        json_is_object(v) && json_object_size(v) == 1 ? json_object_get(v, "$base64") : NULL;
    if (json_is_null(v) || !v) {
        *p = sqlq_param_null();
    } else if (json_is_boolean(v)) {
        /* PostgreSQL takes 'true'/'false' for boolean; SQLite and SQL Server bit take 1/0. */
        *p = d->bool_as_text ? sqlq_param_text(json_is_true(v) ? "true" : "false")
                             : sqlq_param_int(json_is_true(v) ? 1 : 0);
    } else if (json_is_integer(v) && integer_column(col->sql_type)) {
        *p = sqlq_param_int((int64_t)json_integer_value(v));
    } else if (json_is_integer(v)) {
        snprintf(ps->num[i], sizeof(ps->num[i]), "%" PRId64, (int64_t)json_integer_value(v));
        *p = sqlq_param_text(ps->num[i]);
    } else if (json_is_real(v) && float_column(col->sql_type)) {
        *p = (sqlq_param){.type = SQLQ_PARAM_DOUBLE, .f64 = json_real_value(v)};
    } else if (json_is_real(v)) {
        snprintf(ps->num[i], sizeof(ps->num[i]), "%.17g", json_real_value(v));
        *p = sqlq_param_text(ps->num[i]);
    } else if (json_is_string(v) && dynamic_infinity(d, col, json_string_value(v), &p->f64)) {
        p->type = SQLQ_PARAM_DOUBLE; /* SQLite writes an infinite REAL as "Inf": store a REAL */
    } else if (json_is_string(v) && d->time_param_utc_wall &&
               col->sql_type == SQL_TYPE_TIMESTAMP && utc_wall_time(json_string_value(v), ps->num[i])) {
        *p = sqlq_param_text(ps->num[i]);
    } else if (json_is_string(v)) {
        *p = sqlq_param_text(json_string_value(v));
    } else if (json_is_string(b64)) {
        sqlq_buf_init(&ps->bin[i], 0);
        const char *t = json_string_value(b64);
        if (sqlq_codec_decode(SQLQ_ENCODING_BASE64, t, strlen(t), &ps->bin[i], NULL) != SQLQ_OK)
            return sqlq_error_set(err, SQLQ_E_PARSE, false, "column %s: invalid $base64 value",
                                  col->name);
        *p = (sqlq_param){
            .type = SQLQ_PARAM_BINARY, .text = sqlq_buf_str(&ps->bin[i]), .len = ps->bin[i].len};
    } else {
        ps->json[i] = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!ps->json[i])
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        *p = sqlq_param_text(ps->json[i]);
    }
    return SQLQ_OK;
}
