/* logical_fetch: a change's row read by key, as the capture poll and backfill read rows (the
 * trigger source's JSON), for what pgoutput cannot give. */
#include "logical_fetch.h"

#include "dialect.h"
#include "row_json.h"
#include "sql_text.h"

#include <stdlib.h>

/* SELECT <every column as the capture poll and backfill read it (row_json.h)> FROM t WHERE
 * <key> = ? …: the row by key, in the trigger source's JSON. */
static sqlq_result fetch_sql(const sqlq_table *t, char **out, sqlq_error *err)
{
    const sqlq_dialect *d = &sqlq_dialect_postgres;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result rc = sqlq_buf_adds(&b, "SELECT ");
    for (size_t i = 0; rc == SQLQ_OK && i < t->ncolumns; i++) {
        const sqlq_column *c = &t->columns[i];
        rc = sqlq_buf_adds(&b, i ? ", " : "");
        if (rc == SQLQ_OK)
            rc = sqlq_row_json_select_sql(d, NULL, c, &b);
        if (rc == SQLQ_OK && sqlq_row_json_needs_text(d, c)) {
            rc = sqlq_buf_adds(&b, " AS ");
            if (rc == SQLQ_OK)
                rc = sqlq_dialect_quote_ident(d, c->name, &b);
        }
    }
    sqlq_sql_text s;
    sqlq_sql_text_init(&s, d);
    sqlq_sql_text_add(&s, "%s FROM ", sqlq_buf_str(&b));
    sqlq_buf_free(&b);
    sqlq_sql_text_table(&s, &t->name);
    for (size_t k = 0; k < t->nkey; k++) {
        sqlq_sql_text_add(&s, k ? " AND " : " WHERE ");
        sqlq_sql_text_ident(&s, t->columns[t->key[k]].name);
        sqlq_sql_text_add(&s, " = ?");
    }
    if (rc != SQLQ_OK) {
        sqlq_sql_text_free(&s);
        return sqlq_error_set(err, rc, false, "out of memory");
    }
    return sqlq_sql_text_take(&s, out, err);
}

/* A change that came with a 'u' and nothing to fill it (or a column pgoutput cannot give): the
 * row as it is now, read by key as the trigger source reads it (a row gone since is published
 * as a delete, as the trigger source does). */
sqlq_result sqlq_logical_fetch_row(sqlq_db *db, const sqlq_table *t, char **sql,
                                   sqlq_logical_change *c, sqlq_error *err)
{
    if (!*sql) {
        sqlq_result rc = fetch_sql(t, sql, err);
        if (rc != SQLQ_OK)
            return rc;
    }
    sqlq_param p[32];
    size_t np = 0;
    for (size_t k = 0; k < t->nkey && np < 32; k++, np++) {
        const json_t *v = json_object_get(c->key, t->columns[t->key[k]].name);
        p[np] = json_is_integer(v) ? sqlq_param_int((int64_t)json_integer_value(v))
                                   : sqlq_param_text(json_string_value(v));
    }
    json_t *rows = NULL;
    sqlq_result rc = sqlq_db_query(db, *sql, p, np, &rows, err);
    if (rc != SQLQ_OK)
        return rc;
    json_decref(c->row);
    c->row = json_incref(json_array_get(rows, 0));
    if (!c->row)
        c->op = SQLQ_OP_DELETE;
    c->fetch_row = false;
    json_decref(rows);
    return SQLQ_OK;
}

