/* capture_presence: the rows of running bridge instances (see the header). */
#include "capture_presence.h"

#include "capture_internal.h"
#include "catalog.h"
#include "dialect.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INSTANCE_MAX 128 /* the column's width on MariaDB and SQL Server */

/* "<verb> <object> <rest>" with sqlq's name for its table `object`; the caller frees. */
static char *statement_on(sqlq_db *db, const char *object, const char *head, const char *tail)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "%s", head);
    sqlq_catalog_object(&q, object);
    sqlq_sql_text_add(&q, "%s", tail);
    char *sql = NULL;
    return sqlq_sql_text_take(&q, &sql, NULL) == SQLQ_OK ? sql : NULL;
}

static char *statement(sqlq_db *db, const char *head, const char *tail)
{
    return statement_on(db, "instances", head, tail);
}

static sqlq_result run(sqlq_db *db, char *sql, const sqlq_param *p, size_t n, long long *rows,
                       sqlq_error *err)
{
    sqlq_result r = sql ? sqlq_db_exec(db, sql, p, n, rows, err)
                        : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    free(sql);
    return r;
}

sqlq_result sqlq_presence_touch(sqlq_db *db, const char *bridge, const char *table_key,
                                const char *instance, int lease_s, sqlq_error *err)
{
    char id[INSTANCE_MAX + 1], tail[256];
    snprintf(id, sizeof(id), "%s", instance);
    const char *now = sqlq_dialect_now_ms(sqlq_db_dialect(db));
    snprintf(tail, sizeof(tail), " SET seen_until_ms = %s + %lld WHERE bridge_name = ? AND "
             "table_name = ? AND instance_id = ?", now, (long long)lease_s * 1000);
    sqlq_param p[3] = {sqlq_param_text(bridge), sqlq_param_text(table_key), sqlq_param_text(id)};
    long long rows = 0;
    sqlq_result r = run(db, statement(db, "UPDATE ", tail), p, 3, &rows, err);
    if (r != SQLQ_OK || rows > 0)
        return r;
    snprintf(tail, sizeof(tail), " (bridge_name, table_name, instance_id, seen_until_ms) "
             "VALUES (?, ?, ?, %s + %lld)", now, (long long)lease_s * 1000);
    return run(db, statement(db, "INSERT INTO ", tail), p, 3, NULL, err);
}

sqlq_result sqlq_presence_leave(sqlq_db *db, const char *bridge, const char *table_key,
                                const char *instance, sqlq_error *err)
{
    char id[INSTANCE_MAX + 1];
    snprintf(id, sizeof(id), "%s", instance);
    sqlq_param p[3] = {sqlq_param_text(bridge), sqlq_param_text(table_key), sqlq_param_text(id)};
    return run(db, statement(db, "DELETE FROM ",
                             " WHERE bridge_name = ? AND table_name = ? AND instance_id = ?"),
               p, 3, NULL, err);
}

sqlq_result sqlq_presence_forget(sqlq_db *db, const char *table_key, const char *bridge,
                                 sqlq_error *err)
{
    bool exists = false;
    sqlq_result r = sqlq_catalog_object_exists(db, "instances", &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    sqlq_param p[2] = {sqlq_param_text(table_key), sqlq_param_text(bridge ? bridge : "")};
    const char *where = bridge ? " WHERE table_name = ? AND bridge_name = ?" : " WHERE table_name = ?";
    r = run(db, statement(db, "DELETE FROM ", where), p, bridge ? 2 : 1, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, "instance_rates", &exists, err);
    if (r == SQLQ_OK && exists)
        r = run(db, statement_on(db, "instance_rates", "DELETE FROM ", where), p, bridge ? 2 : 1,
                NULL, err);
    return r;
}

/* Rows of instances gone for an hour: removed by the next report of the table. */
#define RATES_KEPT_MS 3600000LL

sqlq_result sqlq_presence_rate(sqlq_db *db, const char *bridge, const char *table_key,
                               const char *instance, double per_s, const char *queues,
                               int ttl_s, sqlq_error *err)
{
    char id[INSTANCE_MAX + 1], tail[320];
    snprintf(id, sizeof(id), "%s", instance);
    const char *now = sqlq_dialect_now_ms(sqlq_db_dialect(db));
    sqlq_param p[5] = {sqlq_param_double(per_s), sqlq_param_text(queues), sqlq_param_text(bridge),
                       sqlq_param_text(table_key), sqlq_param_text(id)};
    snprintf(tail, sizeof(tail), " SET per_s = ?, queues = ?, seen_until_ms = %s + %lld WHERE "
             "bridge_name = ? AND table_name = ? AND instance_id = ?", now, (long long)ttl_s * 1000);
    long long rows = 0;
    sqlq_result r = run(db, statement_on(db, "instance_rates", "UPDATE ", tail), p, 5, &rows, err);
    if (r == SQLQ_OK && rows == 0) {
        snprintf(tail, sizeof(tail), " (per_s, queues, bridge_name, table_name, instance_id, "
                 "seen_until_ms) VALUES (?, ?, ?, ?, ?, %s + %lld)", now, (long long)ttl_s * 1000);
        r = run(db, statement_on(db, "instance_rates", "INSERT INTO ", tail), p, 5, NULL, err);
        snprintf(tail, sizeof(tail), " WHERE table_name = ? AND seen_until_ms < %s - %lld", now,
                 RATES_KEPT_MS);
        if (r == SQLQ_OK) /* a new instance: the rows of those long gone go */
            r = run(db, statement_on(db, "instance_rates", "DELETE FROM ", tail), &p[3], 1, NULL,
                    err);
    }
    return r;
}

sqlq_result sqlq_presence_rates(sqlq_db *db, const char *table_key, const char *bridge,
                                json_t **out, sqlq_error *err)
{
    *out = json_array();
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    bool exists = false;
    sqlq_result r = sqlq_catalog_object_exists(db, "instance_rates", &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    char tail[400];
    snprintf(tail, sizeof(tail), " WHERE table_name = ? AND seen_until_ms > %s%s "
             "ORDER BY bridge_name, instance_id", sqlq_dialect_now_ms(sqlq_db_dialect(db)),
             bridge ? " AND bridge_name = ?" : "");
    char *sql = statement_on(db, "instance_rates", "SELECT bridge_name AS bridge, instance_id AS "
                             "instance, per_s, queues FROM ", tail);
    sqlq_param p[2] = {sqlq_param_text(table_key), sqlq_param_text(bridge ? bridge : "")};
    json_t *rows = NULL;
    r = sql ? sqlq_db_query(db, sql, p, bridge ? 2 : 1, &rows, err)
            : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    free(sql);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) { /* queues: the JSON object the instance wrote */
        json_t *q = json_loads(json_string_value(json_object_get(row, "queues")), 0, NULL);
        json_object_set_new(row, "queues", json_is_object(q) ? q : json_object());
        if (q && !json_is_object(q))
            json_decref(q);
    }
    if (r == SQLQ_OK) {
        json_decref(*out);
        *out = rows;
    } else {
        json_decref(rows);
    }
    return r;
}

sqlq_result sqlq_presence_list(sqlq_db *db, const char *table_key, const char *bridge,
                               json_t **out, sqlq_error *err)
{
    *out = json_array();
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    bool exists = false;
    sqlq_result r = sqlq_catalog_object_exists(db, "instances", &exists, err);
    if (r != SQLQ_OK || !exists)
        return r;
    char tail[400];
    const char *now = sqlq_dialect_now_ms(sqlq_db_dialect(db));
    snprintf(tail, sizeof(tail), " WHERE table_name = ? AND seen_until_ms > %s%s "
             "ORDER BY bridge_name, instance_id", now, bridge ? " AND bridge_name = ?" : "");
    char head[200];
    snprintf(head, sizeof(head), "SELECT bridge_name AS bridge, instance_id AS instance, "
             "(seen_until_ms - %s) / 1000 AS left_s FROM ", now);
    char *sql = statement(db, head, tail);
    sqlq_param p[2] = {sqlq_param_text(table_key), sqlq_param_text(bridge ? bridge : "")};
    json_t *rows = NULL;
    r = sql ? sqlq_db_query(db, sql, p, bridge ? 2 : 1, &rows, err)
            : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    free(sql);
    if (r == SQLQ_OK) {
        json_decref(*out);
        *out = rows;
    }
    return r;
}

/* ---- a capture's own row ----------------------------------------------------------------- */

sqlq_result sqlq_capture_presence(sqlq_capture *cap, bool leaving, sqlq_error *err)
{
    if (!cap->leased) /* a source with its own leases knows its instances itself */
        return SQLQ_OK;
    return leaving ? sqlq_presence_leave(cap->db, cap->bridge, cap->names.table_key,
                                         cap->instance, err)
                   : sqlq_presence_touch(cap->db, cap->bridge, cap->names.table_key,
                                         cap->instance, cap->spec.lease_s, err);
}

sqlq_result sqlq_capture_rate(sqlq_capture *cap, double per_s, const char *queues, int ttl_s,
                              sqlq_error *err)
{
    const sqlq_table *t = sqlq_capture_table(cap);
    if (!t)
        return SQLQ_OK;
    sqlq_catalog_names n; /* every source's (cap->names are a leased source's) */
    sqlq_result r = sqlq_catalog_names_make(sqlq_db_dialect(cap->db), &t->name, cap->bridge, &n,
                                            err);
    return r != SQLQ_OK ? r : sqlq_presence_rate(cap->db, cap->bridge, n.table_key, cap->instance,
                                                 per_s, queues, ttl_s, err);
}
