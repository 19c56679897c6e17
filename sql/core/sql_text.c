#include "sql_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define SQL_TEXT_CAP ((size_t)4 * 1024 * 1024)

void sqlq_sql_text_init(sqlq_sql_text *s, const sqlq_dialect *d)
{
    sqlq_buf_init(&s->buf, SQL_TEXT_CAP);
    s->rc = SQLQ_OK;
    s->dialect = d;
}

void sqlq_sql_text_free(sqlq_sql_text *s)
{
    sqlq_buf_free(&s->buf);
}

static void keep(sqlq_sql_text *s, sqlq_result rc)
{
    if (s->rc == SQLQ_OK && rc != SQLQ_OK)
        s->rc = rc;
}

void sqlq_sql_text_add(sqlq_sql_text *s, const char *fmt, ...)
{
    if (s->rc != SQLQ_OK)
        return;
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        keep(s, SQLQ_E_INVALID);
        return;
    }
    if ((size_t)n < sizeof(small)) {
        keep(s, sqlq_buf_add(&s->buf, small, (size_t)n));
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        keep(s, SQLQ_E_NOMEM);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    keep(s, sqlq_buf_add(&s->buf, big, (size_t)n));
    free(big);
}

void sqlq_sql_text_ident(sqlq_sql_text *s, const char *ident)
{
    if (s->rc == SQLQ_OK)
        keep(s, sqlq_dialect_quote_ident(s->dialect, ident, &s->buf));
}

void sqlq_sql_text_col(sqlq_sql_text *s, const char *prefix, const char *ident)
{
    sqlq_sql_text_add(s, "%s", prefix);
    sqlq_sql_text_ident(s, ident);
}

void sqlq_sql_text_table(sqlq_sql_text *s, const sqlq_table_name *t)
{
    if (s->rc == SQLQ_OK)
        keep(s, sqlq_dialect_quote_table(s->dialect, t, &s->buf));
}

void sqlq_sql_text_literal(sqlq_sql_text *s, const char *text)
{
    if (s->rc == SQLQ_OK)
        keep(s, sqlq_dialect_quote_literal(s->dialect, text, &s->buf));
}

sqlq_result sqlq_sql_text_take(sqlq_sql_text *s, char **out, sqlq_error *err)
{
    *out = NULL;
    if (s->rc != SQLQ_OK) {
        sqlq_result rc = s->rc;
        sqlq_buf_free(&s->buf);
        return sqlq_error_set(err, rc, false, "building SQL text failed: %s", sqlq_strerror(rc));
    }
    *out = sqlq_buf_take(&s->buf, NULL);
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory building SQL text");
    return SQLQ_OK;
}
