/* cursor_status: the recorded rule of each cursor source, for `sqlq status` (see the header). */
#include "cursor_status.h"

#include "catalog.h"
#include "cursor_state.h"
#include "log.h"
#include "sql_text.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static sqlq_result has_column(sqlq_db *db, bool *out, sqlq_error *err)
{
    int64_t n = 0;
    sqlq_result r =
        sqlq_db_query_int(db, sqlq_db_dialect(db)->cursor_lag_rule_exists, NULL, 0, &n, err);
    *out = r == SQLQ_OK && n > 0;
    return r;
}

static sqlq_result keyed_sql(const sqlq_dialect *d, const char *head, const char *tail, char **out,
                             sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "%s", head);
    sqlq_catalog_object(&q, SQLQ_CURSOR_STATE_OBJECT);
    sqlq_sql_text_add(&q, "%s", tail);
    return sqlq_sql_text_take(&q, out, err);
}

void sqlq_cursor_status_note(sqlq_db *db, const char *bridge, const char *table,
                             const char *rule)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    bool present = false;
    char *sql = NULL;
    sqlq_result r = has_column(db, &present, &err);
    if (r == SQLQ_OK && !present)
        r = sqlq_db_exec(db, sqlq_db_dialect(db)->cursor_lag_rule_add, NULL, 0, NULL, &err);
    if (r == SQLQ_OK)
        r = keyed_sql(sqlq_db_dialect(db), "UPDATE ",
                      " SET lag_rule = ? WHERE bridge_name = ? AND table_name = ?", &sql, &err);
    sqlq_param p[3] = {sqlq_param_text(rule), sqlq_param_text(bridge), sqlq_param_text(table)};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, 3, NULL, &err);
    free(sql);
    if (r != SQLQ_OK)
        SQLQ_WARN("cursor_rule_not_recorded",
                  "table=%s err=\"%s\" note=\"sqlq status cannot show this source's rule\"", table,
                  err.message);
}

sqlq_result sqlq_cursor_status_list(sqlq_db *db, json_t **out, sqlq_error *err)
{
    *out = json_array();
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    bool table = false, rule = false;
    sqlq_result r = sqlq_catalog_object_exists(db, SQLQ_CURSOR_STATE_OBJECT, &table, err);
    if (r != SQLQ_OK || !table)
        return r;
    r = has_column(db, &rule, err);
    const sqlq_dialect *d = sqlq_db_dialect(db);
    char head[800];
    int n = snprintf(head, sizeof(head),
             "SELECT bridge_name AS bridge, table_name AS \"table\", %s AS rule, "
             "CASE WHEN lease_expires_ms > %s THEN lease_owner ELSE NULL END AS owner, "
             "lease_expires_ms - %s AS lease_expires_in_ms, rows_done, cursor_value FROM ",
             rule ? "lag_rule" : "NULL", sqlq_dialect_now_ms(d), sqlq_dialect_now_ms(d));
    if (n < 0 || (size_t)n >= sizeof(head))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cursor status query too long");
    char *sql = NULL;
    if (r == SQLQ_OK)
        r = keyed_sql(d, head, " WHERE bridge_name NOT LIKE 'backfill:%' ORDER BY table_name, "
                               "bridge_name",
                      &sql, err);
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, NULL, 0, &rows, err);
    free(sql);
    if (r == SQLQ_OK) {
        json_decref(*out);
        *out = rows;
    } else {
        json_decref(rows);
    }
    return r;
}
