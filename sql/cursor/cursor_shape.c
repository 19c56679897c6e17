/* cursor_shape: the watched table's shape under the cursor source (see the header). */
#include "cursor_shape.h"

#include "cursor_column.h"
#include "setup_hint.h"
#include "table_key.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_order(const sqlq_keyset_col *a, size_t na, const sqlq_keyset_col *b, size_t nb)
{
    bool same = na == nb;
    for (size_t i = 0; same && i < na; i++)
        same = strcmp(a[i].name, b[i].name) == 0 && strcmp(a[i].type, b[i].type) == 0 &&
               a[i].cls == b[i].cls;
    return same;
}

/* The cursor, key and soft-delete columns of `now` against `was`'s; *out the new order. */
static sqlq_result same_columns(sqlq_db *db, const char *bridge, const char *table_key,
                                const sqlq_table *was, const sqlq_keyset_col *order,
                                size_t norder, int soft_delete, const sqlq_table *now,
                                sqlq_cursor_shape *out, sqlq_error *err)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = SQLQ_OK;
    if (sqlq_table_compare(was, now) == SQLQ_TABLE_KEY_CHANGED) {
        char a[300], b[300];
        sqlq_table_key_text(was, a, sizeof(a));
        sqlq_table_key_text(now, b, sizeof(b));
        r = sqlq_error_set(&e, SQLQ_E_INVALID, false, "its primary key changed (was: %s; now: %s)",
                           a, b);
    } else {
        const char *soft = soft_delete >= 0 ? was->columns[soft_delete].name : NULL;
        r = sqlq_cursor_column_check(db, now, order[0].name, soft, &out->order, &out->norder,
                                     &out->soft_delete, &e);
        if (r == SQLQ_OK && !same_order(order, norder, out->order, out->norder))
            r = sqlq_error_set(&e, SQLQ_E_INVALID, false,
                               "its cursor or key columns were renamed or retyped");
    }
    if (r == SQLQ_OK)
        return SQLQ_OK;
    if (e.code == SQLQ_E_SQL) { /* the check's own query failed: nothing is known yet */
        if (err && err->code == SQLQ_OK)
            *err = e;
        return e.code;
    }
    SQLQ_ERROR("table_key_changed", "bridge=%s table=%s source=cursor err=\"%s\"", bridge,
               table_key, e.message);
    if (err)
        sqlq_error_clear(err); /* replaces the poll's SQL error, if any */
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg_text(table_key, NULL, arg, sizeof arg);
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "table %s changed under the cursor source: %s. Its checkpoint holds "
                          "values of the old columns, so polling cannot go on: forget it with "
                          "`sqlq setup --table %s --source cursor --drop`, then start again",
                          table_key, e.message, arg);
}

sqlq_result sqlq_cursor_shape_check(sqlq_db *db, const char *bridge, const char *table_key,
                                    const sqlq_table *was, const sqlq_keyset_col *order,
                                    size_t norder, int soft_delete, sqlq_result ran,
                                    bool *out_changed, sqlq_cursor_shape *out, sqlq_error *err)
{
    *out_changed = false;
    memset(out, 0, sizeof(*out));
    out->soft_delete = -1;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_table *now = NULL;
    if (sqlq_table_key_describe_again(db, was, &now, &e) != SQLQ_OK) {
        if (ran != SQLQ_OK)
            return ran;
        if (err && err->code == SQLQ_OK)
            *err = e;
        return e.code;
    }
    if (sqlq_table_compare(was, now) == SQLQ_TABLE_SAME) {
        sqlq_table_free(now);
        return ran;
    }
    sqlq_result r = same_columns(db, bridge, table_key, was, order, norder, soft_delete, now,
                                 out, err);
    if (r == SQLQ_OK && !(out->columns = calloc(now->ncolumns, sizeof(*out->columns))))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r != SQLQ_OK) {
        sqlq_cursor_column_free(out->order, out->norder);
        sqlq_table_free(now);
        memset(out, 0, sizeof(*out));
        return r;
    }
    for (size_t i = 0; i < now->ncolumns; i++)
        out->columns[i] = now->columns[i].name;
    char what[400];
    sqlq_table_change_text(was, now, what, sizeof(what));
    SQLQ_INFO("table_shape_changed", "bridge=%s table=%s source=cursor %s columns=%zu", bridge,
              table_key, what, now->ncolumns);
    out->table = now;
    if (err && ran != SQLQ_OK)
        sqlq_error_clear(err); /* the failure came from the old column list */
    *out_changed = true;
    return SQLQ_OK;
}
