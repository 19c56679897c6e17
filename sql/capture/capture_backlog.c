/* capture_backlog: a bridge's backlog read from the change log alone (see the header). */
#include "capture_backlog.h"

#include "catalog.h"
#include "capture_internal.h"
#include "dialect.h"
#include "json_int.h"
#include "sql_text.h"
#include "table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sqlq_backlog {
    sqlq_db *db;
    sqlq_catalog_names names;
    char *sql;
    sqlq_pending_marks marks;
};

double sqlq_pending_marks_age(sqlq_pending_marks *m, int64_t newest, int64_t sync,
                              uint64_t now_ms)
{
    size_t n = m->n, drop = 0, max = sizeof(m->at) / sizeof(m->at[0]);
    while (drop < n && m->at[drop].version <= sync)
        drop++;
    memmove(m->at, m->at + drop, (n - drop) * sizeof(m->at[0]));
    n -= drop;
    if (newest > sync && (n == 0 || m->at[n - 1].version < newest)) {
        if (n == max) { /* merge the two oldest: the age stays that of the oldest */
            m->at[1].seen_ms = m->at[0].seen_ms;
            memmove(m->at, m->at + 1, (n - 1) * sizeof(m->at[0]));
            n--;
        }
        m->at[n].version = newest;
        m->at[n].seen_ms = now_ms;
        n++;
    }
    m->n = n;
    return n && now_ms > m->at[0].seen_ms ? (double)(now_ms - m->at[0].seen_ms) / 1000.0 : 0;
}

/* x.k = l.k AND … for the log's key columns. */
static void key_match(sqlq_sql_text *q, const sqlq_table *log)
{
    for (size_t i = 0; i < log->nkey; i++) {
        const char *k = log->columns[log->key[i]].name;
        sqlq_sql_text_add(q, "%sx.", i ? " AND " : "");
        sqlq_sql_text_ident(q, k);
        sqlq_sql_text_add(q, " = l.");
        sqlq_sql_text_ident(q, k);
    }
}

/* m_sync (NULL without a state row), m_pending, m_leased, m_newest, m_unstamped. Released
 * leases at the change's version are delivered; everything else after the sync version waits
 * (MariaDB/MySQL: rows not stamped yet, version 0, too). */
static sqlq_result build(sqlq_backlog *b, const sqlq_table *log, bool leases, sqlq_error *err)
{
    const sqlq_dialect *d = b->names.dialect;
    const sqlq_change_source_ops *src = sqlq_change_source_find(d, SQLQ_SOURCE_CHANGE_LOG);
    bool stamped = src && src->leased && src->leased->sql->unstamped;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "SELECT s.v AS m_sync, (SELECT count(*) FROM ");
    sqlq_catalog_object(&q, b->names.log_table);
    sqlq_sql_text_add(&q, " l WHERE (l." SQLQ_COL_VERSION " > COALESCE(s.v, 0)%s)",
                      stamped ? " OR l." SQLQ_COL_VERSION " = 0" : "");
    if (leases) {
        sqlq_sql_text_add(&q, " AND NOT EXISTS (SELECT 1 FROM ");
        sqlq_catalog_object(&q, b->names.leases_table);
        sqlq_sql_text_add(&q, " x WHERE ");
        key_match(&q, log);
        sqlq_sql_text_add(&q, " AND x." SQLQ_COL_VERSION " = l." SQLQ_COL_VERSION
                              " AND x." SQLQ_COL_EXPIRES " IS NULL)");
    }
    sqlq_sql_text_add(&q, ") AS m_pending, ");
    if (leases) {
        sqlq_sql_text_add(&q, "(SELECT count(*) FROM ");
        sqlq_catalog_object(&q, b->names.leases_table);
        sqlq_sql_text_add(&q, " WHERE " SQLQ_COL_EXPIRES " > %s) AS m_leased, ",
                          sqlq_dialect_now_ms(d));
    } else {
        sqlq_sql_text_add(&q, "0 AS m_leased, ");
    }
    sqlq_sql_text_add(&q, "(SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_catalog_object(&q, b->names.log_table);
    sqlq_sql_text_add(&q, ") AS m_newest, (SELECT count(*) FROM ");
    sqlq_catalog_object(&q, b->names.log_table);
    sqlq_sql_text_add(&q, " WHERE " SQLQ_COL_VERSION " = 0) AS m_unstamped FROM (SELECT "
                          "max(sync_version) AS v FROM ");
    sqlq_catalog_object(&q, "state");
    sqlq_sql_text_add(&q, " WHERE bridge_name = ? AND table_name = ?) s");
    return sqlq_sql_text_take(&q, &b->sql, err);
}

/* The log's name and key, and whether the bridge's leases table exists. */
static sqlq_result describe(sqlq_backlog *b, sqlq_table **log, bool *leases, sqlq_error *err)
{
    bool exists = false;
    sqlq_result r = sqlq_catalog_object_exists(b->db, b->names.log_table, &exists, err);
    if (r == SQLQ_OK && !exists)
        return sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "table %s has no change log",
                              b->names.table_key);
    sqlq_table_name ln;
    sqlq_catalog_log_name(&b->names, &ln);
    if (r == SQLQ_OK)
        r = sqlq_table_describe(b->db, &ln, log, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(b->db, b->names.leases_table, leases, err);
    return r;
}

sqlq_result sqlq_backlog_open(sqlq_db *db, const char *table, const char *bridge,
                              sqlq_backlog **out, sqlq_error *err)
{
    *out = NULL;
    if (!sqlq_change_source_find(sqlq_db_dialect(db), SQLQ_SOURCE_CHANGE_LOG))
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "no change log on this database: no backlog to read");
    sqlq_backlog *b = calloc(1, sizeof(*b));
    if (!b)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    b->db = db;
    sqlq_table_name parsed, canon;
    sqlq_table *log = NULL;
    bool leases = false;
    sqlq_result r = sqlq_table_name_parse(table, &parsed, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_resolve(db, table, &parsed, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_find(db, &canon, bridge, &b->names, err);
    if (r == SQLQ_OK)
        r = describe(b, &log, &leases, err);
    if (r == SQLQ_OK)
        r = build(b, log, leases, err);
    sqlq_table_free(log);
    if (r != SQLQ_OK) {
        sqlq_backlog_close(b);
        return r;
    }
    *out = b;
    return SQLQ_OK;
}

sqlq_result sqlq_backlog_read(sqlq_backlog *b, uint64_t now_ms, sqlq_backlog_counts *out,
                              sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    sqlq_param p[2] = {sqlq_param_text(b->names.bridge), sqlq_param_text(b->names.table_key)};
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(b->db, b->sql, p, 2, &rows, err);
    json_t *row = json_array_get(rows, 0);
    int64_t sync = 0, pending = 0, leased = 0, newest = 0, unstamped = 0;
    out->have_state = r == SQLQ_OK && sqlq_json_int64(json_object_get(row, "m_sync"), &sync);
    if (r == SQLQ_OK && (!sqlq_json_int64(json_object_get(row, "m_pending"), &pending) ||
                         !sqlq_json_int64(json_object_get(row, "m_leased"), &leased)))
        r = sqlq_error_set(err, SQLQ_E_PARSE, false, "unexpected backlog row for %s",
                           b->names.table_key);
    if (r == SQLQ_OK && !sqlq_json_int64(json_object_get(row, "m_newest"), &newest))
        newest = sync; /* an empty log */
    if (r == SQLQ_OK && sqlq_json_int64(json_object_get(row, "m_unstamped"), &unstamped) &&
        unstamped > 0 && newest <= sync)
        newest = sync + 1; /* waiting, with no version yet */
    json_decref(rows);
    if (r != SQLQ_OK)
        return r;
    out->sync_version = sync;
    out->pending = pending;
    out->leased = leased;
    out->oldest_pending_age_s = sqlq_pending_marks_age(&b->marks, newest, sync, now_ms);
    return SQLQ_OK;
}

void sqlq_backlog_close(sqlq_backlog *b)
{
    if (!b)
        return;
    free(b->sql);
    free(b);
}
