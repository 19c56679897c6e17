/* TEMPORARY stand-in for pg_text.c (engineer pgtext's module, pg_text.h): the common types only,
 * so the logical source builds and runs until the real conversion lands. DELETE THIS FILE when
 * sql/postgres/pg_text.c arrives; nothing else changes (the source calls pg_text.h only). */
#include "pg_text.h"

#include "dialect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sqlq_result sqlq_pg_text_type_read(sqlq_db *db, sqlq_pg_text_type *t, sqlq_error *err)
{
    (void)db;
    (void)err;
    t->base_oid = t->oid;
    return SQLQ_OK;
}

void sqlq_pg_text_column_init(sqlq_pg_text_column *c, const sqlq_pg_text_type *t,
                              const char *declared)
{
    (void)declared;
    memset(c, 0, sizeof *c);
    switch (t->base_oid ? t->base_oid : t->oid) {
    case 16: c->kind = SQLQ_VALUE_BOOL; break;
    case 20: case 21: case 23: case 26: c->kind = SQLQ_VALUE_INT; break;
    case 1700: c->kind = SQLQ_VALUE_DECIMAL; break;
    case 700: case 701: c->kind = SQLQ_VALUE_FLOAT; break;
    case 17: c->kind = SQLQ_VALUE_BINARY; c->bytea = true; break;
    case 1082: case 1083: case 1114: case 1184: case 1266: c->kind = SQLQ_VALUE_PG_TEMPORAL; break;
    case 2950: c->kind = SQLQ_VALUE_GUID; break;
    default: c->kind = SQLQ_VALUE_TEXT; break;
    }
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

json_t *sqlq_pg_text_value(const sqlq_pg_text_column *c, const char *text, size_t len)
{
    if (!text)
        return json_null();
    if (c->bytea && len >= 2 && text[0] == '\\' && text[1] == 'x') {
        size_t n = (len - 2) / 2;
        char *bytes = malloc(n ? n : 1);
        if (!bytes)
            return NULL;
        for (size_t i = 0; i < n; i++)
            bytes[i] = (char)(hexval(text[2 + 2 * i]) * 16 + hexval(text[3 + 2 * i]));
        json_t *v = sqlq_column_value(SQLQ_VALUE_BINARY, &sqlq_dialect_postgres, bytes, n);
        free(bytes);
        return v;
    }
    return sqlq_column_value(c->kind, &sqlq_dialect_postgres, text, len);
}

sqlq_result sqlq_pg_text_options(const char *interval_style, const char *lc_monetary,
                                 sqlq_buf *out)
{
    (void)interval_style;
    (void)lc_monetary;
    return sqlq_buf_adds(out, "-c DateStyle=ISO -c TimeZone=UTC -c extra_float_digits=2 "
                              "-c bytea_output=hex -c client_encoding=UTF8");
}

sqlq_result sqlq_pg_text_options_read(sqlq_db *db, sqlq_buf *out, sqlq_error *err)
{
    (void)db;
    (void)err;
    return sqlq_pg_text_options(NULL, NULL, out);
}
