/* cursor_column: whether a column can serve as a cursor. */
#include "cursor_column.h"

#include "dialect.h"

#include <sql.h>
#include <sqlext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *sqlq_cursor_column_unsafe(const sqlq_dialect *d, const sqlq_column *c,
                                      sqlq_value_class *out)
{
    const char *why = NULL;
    if (!sqlq_keyset_classify(d, c, out, &why))
        return why;
    switch (*out) {
    case SQLQ_VALUE_TEXT:
        return "text sorts by collation, not in the order rows change; use an integer, "
               "timestamp or rowversion column";
    case SQLQ_VALUE_EXACT:
        if (c->sql_type == SQL_TYPE_DATE || c->sql_type == SQL_DATE)
            return "a date has no time of day, so the rows of a day could only be read the next "
                   "day; use a timestamp column";
        if (c->sql_type == SQL_DECIMAL || c->sql_type == SQL_NUMERIC)
            return "decimal counters are not supported; use an integer (bigint) column";
        return "values of this type do not follow the order in which rows change";
    default:
        break;
    }
    /* A primary-key column cannot hold NULL, except on SQLite where only INTEGER PRIMARY KEY
     * (the rowid) is guaranteed not to. */
    bool key_not_null = c->in_key && (!d->key_may_be_null || *out == SQLQ_VALUE_INT);
    if (c->nullable && !key_not_null)
        return "it is nullable, and rows where it is NULL would never be read; declare it NOT "
               "NULL (and give existing rows a value) or choose another column";
    return NULL;
}

static const sqlq_column *find(const sqlq_table *t, const char *name, size_t *out_index)
{
    for (size_t i = 0; i < t->ncolumns; i++)
        if (strcmp(t->columns[i].name, name) == 0) {
            *out_index = i;
            return &t->columns[i];
        }
    const sqlq_column *found = NULL;
    for (size_t i = 0; i < t->ncolumns; i++)
        if (strcasecmp(t->columns[i].name, name) == 0) {
            if (found)
                return NULL; /* ambiguous without the exact case */
            found = &t->columns[i];
            *out_index = i;
        }
    return found;
}

static sqlq_result not_found(const sqlq_table *t, const char *what, const char *name,
                             sqlq_error *err)
{
    char cols[400] = "";
    size_t used = 0;
    for (size_t i = 0; i < t->ncolumns && used + 2 < sizeof(cols); i++) {
        int n = snprintf(cols + used, sizeof(cols) - used, "%s%s", i ? ", " : "",
                         t->columns[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s '%s' is not a column of %s (columns: %s)",
                          what, name, t->name.name, cols);
}

/* With dynamic types (SQLite) any value is stored in any column: check the stored values fit
 * the declared type. */
static sqlq_result check_stored_values(sqlq_db *db, const sqlq_table *t, const sqlq_keyset_col *c,
                                       sqlq_error *err)
{
    sqlq_buf q;
    sqlq_buf_init(&q, 0);
    bool integer = c->cls == SQLQ_VALUE_INT;
    sqlq_result r = sqlq_buf_adds(&q, "SELECT count(*) FROM (SELECT 1 FROM ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(sqlq_db_dialect(db), &t->name, &q);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&q, integer ? " WHERE typeof(" : " WHERE typeof(");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(sqlq_db_dialect(db), c->name, &q);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&q, integer ? ") <> 'integer'" : ") <> 'text' OR julianday(");
    if (r == SQLQ_OK && !integer)
        r = sqlq_dialect_quote_ident(sqlq_db_dialect(db), c->name, &q);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&q, integer ? " LIMIT 1)" : ") IS NULL LIMIT 1)");
    int64_t bad = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, sqlq_buf_str(&q), NULL, 0, &bad, err);
    sqlq_buf_free(&q);
    if (r == SQLQ_OK && bad > 0)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           integer ? "cursor column %s of %s holds values that are not integers"
                                   : "cursor column %s of %s holds values that are not ISO 8601 "
                                     "text (YYYY-MM-DD HH:MM:SS[.fff], UTC, as CURRENT_TIMESTAMP "
                                     "writes): text order would not be time order",
                           c->name, t->name.name);
    return r;
}

static sqlq_result check_key(sqlq_db *db, const sqlq_table *t, sqlq_keyset_col *order,
                             size_t *n, sqlq_error *err)
{
    for (size_t k = 0; k < t->nkey; k++) {
        const sqlq_column *c = &t->columns[t->key[k]];
        if (strcmp(c->name, order[0].name) == 0)
            continue;
        const char *why = NULL;
        sqlq_value_class cls;
        if (!sqlq_keyset_classify(sqlq_db_dialect(db), c, &cls, &why))
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "primary key column %s (%s) of %s cannot break ties between "
                                  "rows: %s",
                                  c->name, c->type ? c->type : "?", t->name.name, why);
        order[*n] = (sqlq_keyset_col){c->name, c->type, cls};
        (*n)++;
    }
    return SQLQ_OK;
}

sqlq_result sqlq_cursor_column_check(sqlq_db *db, const sqlq_table *t, const char *cursor,
                                     const char *soft_delete, sqlq_keyset_col **out_order,
                                     size_t *out_norder, int *out_soft_delete, sqlq_error *err)
{
    *out_order = NULL;
    *out_norder = 0;
    *out_soft_delete = -1;
    if (!cursor || !*cursor)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the cursor source needs cursor_column: a NOT NULL integer, "
                              "timestamp or rowversion column that grows with every change");
    size_t idx = 0;
    const sqlq_column *c = find(t, cursor, &idx);
    if (!c)
        return not_found(t, "cursor column", cursor, err);
    sqlq_value_class cls;
    const char *why = sqlq_cursor_column_unsafe(sqlq_db_dialect(db), c, &cls);
    if (why)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "cursor column %s (%s) of %s cannot be used: %s", c->name,
                              c->type ? c->type : "?", t->name.name, why);
    if (soft_delete && *soft_delete) {
        size_t sd = 0;
        if (!find(t, soft_delete, &sd))
            return not_found(t, "soft-delete column", soft_delete, err);
        *out_soft_delete = (int)sd;
    }
    sqlq_keyset_col *order = calloc(t->nkey + 1, sizeof(*order));
    if (!order)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    order[0] = (sqlq_keyset_col){c->name, c->type, cls};
    size_t n = 1;
    sqlq_result r = check_key(db, t, order, &n, err);
    if (r == SQLQ_OK && sqlq_db_dialect(db)->dynamic_types)
        r = check_stored_values(db, t, &order[0], err);
    if (r != SQLQ_OK) {
        free(order);
        return r;
    }
    *out_order = order;
    *out_norder = n;
    return SQLQ_OK;
}

void sqlq_cursor_column_free(sqlq_keyset_col *order, size_t n)
{
    (void)n;
    free(order);
}

bool sqlq_cursor_column_soft_deleted(const json_t *v)
{
    if (!v || json_is_null(v) || json_is_false(v))
        return false;
    if (json_is_integer(v))
        return json_integer_value(v) != 0;
    if (json_is_real(v))
        return json_real_value(v) != 0.0;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        return !(*s == '\0' || strcmp(s, "0") == 0 || strcmp(s, "false") == 0 ||
                 strcmp(s, "f") == 0);
    }
    return true;
}
