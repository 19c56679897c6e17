#include "upsert.h"

#include "dialect_parts.h"

#include <string.h>

static bool is_key(const char *col, const char *const *key, size_t nkey)
{
    for (size_t i = 0; i < nkey; i++)
        if (strcmp(col, key[i]) == 0)
            return true;
    return false;
}

/* "a", "b", "c" (prefix. before each when prefix is not NULL) */
static sqlq_result ident_list(const sqlq_dialect *d, const char *prefix, const char *const *names,
                              size_t n, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        if (i)
            r = sqlq_buf_adds(out, ", ");
        if (r == SQLQ_OK && prefix)
            r = sqlq_buf_adds(out, prefix);
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, names[i], out);
    }
    return r;
}

/* lhs_prefix."c" = rhs_prefix."c" joined by sep, for the columns selected by want_key. */
static sqlq_result assignments(const sqlq_dialect *d, const char *lhs, const char *rhs,
                               const char *sep, const char *const *cols, size_t ncols,
                               const char *const *key, size_t nkey, bool want_key, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    bool first = true;
    for (size_t i = 0; r == SQLQ_OK && i < ncols; i++) {
        if (is_key(cols[i], key, nkey) != want_key)
            continue;
        if (!first)
            r = sqlq_buf_adds(out, sep);
        first = false;
        if (r == SQLQ_OK && lhs)
            r = sqlq_buf_adds(out, lhs);
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, cols[i], out);
        if (r == SQLQ_OK)
            r = sqlq_buf_printf(out, " = %s", rhs);
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, cols[i], out);
    }
    return r;
}

static sqlq_result placeholders(size_t n, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        r = sqlq_buf_adds(out, i ? ", ?" : "?");
    return r;
}

static sqlq_result check_args(const char *const *cols, size_t ncols, const char *const *key,
                              size_t nkey, sqlq_error *err)
{
    if (nkey == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "upsert: the table has no key columns");
    for (size_t i = 0; cols && i < nkey; i++)
        if (!is_key(key[i], cols, ncols))
            return sqlq_error_set(err, SQLQ_E_INVALID, false, "upsert: key column %s has no value",
                                  key[i]);
    return SQLQ_OK;
}

sqlq_result sqlq_upsert_sql_on_conflict(const sqlq_dialect *d, const sqlq_table_name *t,
                                        const char *const *cols, size_t ncols,
                                        const char *const *key, size_t nkey, sqlq_buf *out)
{
    const char *excluded = d->upsert_excluded;
    sqlq_result r = sqlq_buf_adds(out, "INSERT INTO ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, t, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " (");
    if (r == SQLQ_OK)
        r = ident_list(d, NULL, cols, ncols, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") VALUES (");
    if (r == SQLQ_OK)
        r = placeholders(ncols, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") ON CONFLICT (");
    if (r == SQLQ_OK)
        r = ident_list(d, NULL, key, nkey, out);
    if (r != SQLQ_OK)
        return r;
    if (ncols == nkey)
        return sqlq_buf_adds(out, ") DO NOTHING");
    r = sqlq_buf_adds(out, ") DO UPDATE SET ");
    if (r == SQLQ_OK)
        r = assignments(d, NULL, excluded, ", ", cols, ncols, key, nkey, false, out);
    return r;
}

sqlq_result sqlq_upsert_sql_merge(const sqlq_dialect *d, const sqlq_table_name *t,
                                  const char *const *cols, size_t ncols, const char *const *key,
                                  size_t nkey, sqlq_buf *out)
{
    sqlq_result r = sqlq_buf_adds(out, "MERGE INTO ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, t, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " WITH (HOLDLOCK) AS [target] USING (SELECT ");
    for (size_t i = 0; r == SQLQ_OK && i < ncols; i++) {
        r = sqlq_buf_adds(out, i ? ", ? AS " : "? AS ");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, cols[i], out);
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") AS [source] ON (");
    if (r == SQLQ_OK)
        r = assignments(d, "[target].", "[source].", " AND ", key, nkey, key, nkey, true, out);
    if (r == SQLQ_OK && ncols > nkey) {
        r = sqlq_buf_adds(out, ") WHEN MATCHED THEN UPDATE SET ");
        if (r == SQLQ_OK)
            r = assignments(d, "[target].", "[source].", ", ", cols, ncols, key, nkey, false, out);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(out, " WHEN NOT MATCHED THEN INSERT (");
    } else if (r == SQLQ_OK) {
        r = sqlq_buf_adds(out, ") WHEN NOT MATCHED THEN INSERT (");
    }
    if (r == SQLQ_OK)
        r = ident_list(d, NULL, cols, ncols, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ") VALUES (");
    if (r == SQLQ_OK)
        r = ident_list(d, "[source].", cols, ncols, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, ");");
    return r;
}

sqlq_result sqlq_upsert_sql(const sqlq_dialect *d, const sqlq_table_name *t,
                            const char *const *cols, size_t ncols, const char *const *key,
                            size_t nkey, sqlq_buf *out, sqlq_error *err)
{
    sqlq_result r = check_args(cols, ncols, key, nkey, err);
    if (r != SQLQ_OK)
        return r;
    r = d->upsert_sql(d, t, cols, ncols, key, nkey, out);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "upsert: cannot build the statement (%s)",
                              sqlq_strerror(r));
    return SQLQ_OK;
}

sqlq_result sqlq_upsert_delete_sql(const sqlq_dialect *d, const sqlq_table_name *t,
                                   const char *const *key, size_t nkey, sqlq_buf *out,
                                   sqlq_error *err)
{
    sqlq_result r = check_args(NULL, 0, key, nkey, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_buf_adds(out, "DELETE FROM ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, t, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " WHERE ");
    for (size_t i = 0; r == SQLQ_OK && i < nkey; i++) {
        if (i)
            r = sqlq_buf_adds(out, " AND ");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, key[i], out);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(out, " = ?");
    }
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "delete: cannot build the statement (%s)",
                              sqlq_strerror(r));
    return SQLQ_OK;
}
