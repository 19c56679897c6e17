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
static bool sqlite_infinity(const sqlq_dialect *d, const sqlq_column *col, const char *s,
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
    } else if (json_is_string(v) && sqlite_infinity(d, col, json_string_value(v), &p->f64)) {
        p->type = SQLQ_PARAM_DOUBLE; /* SQLite writes an infinite REAL as "Inf": store a REAL */
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
