/* sink_repair: a sink's bookkeeping of repair manifests, and the sweep (see the header). */
#include "sink_repair.h"

#include "dialect.h"
#include "json_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_COLS "target_table = ? AND run_id = ?"

sqlq_result sqlq_sink_repair_init(sqlq_sink_repair *rp, const sqlq_table_name *versions,
                                  const char *target, sqlq_error *err)
{
    memset(rp, 0, sizeof(*rp));
    rp->versions = *versions;
    rp->target = target;
    snprintf(rp->table.schema, sizeof(rp->table.schema), "%s", versions->schema);
    if (strlen(versions->name) + 8 > sizeof(rp->table.name) - 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "version table name %s is too long for its repair table",
                              versions->name);
    snprintf(rp->table.name, sizeof(rp->table.name), "%s_repair", versions->name);
    return SQLQ_OK;
}

/* head + quoted table + tail into *out (malloc'd). */
static sqlq_result text(sqlq_db *db, const sqlq_table_name *t, const char *head, const char *tail,
                        char **out, sqlq_error *err)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_buf_adds(&b, head);
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(sqlq_db_dialect(db), t, &b);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&b, tail);
    *out = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static sqlq_result exec_on(sqlq_db *db, const sqlq_table_name *t, const char *head, const char *tail,
                       const sqlq_param *p, size_t n, long long *rows, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_result r = text(db, t, head, tail, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, n, rows, err);
    free(sql);
    return r;
}

sqlq_result sqlq_sink_repair_install(sqlq_db *db, const sqlq_sink_repair *rp, sqlq_error *err)
{
    static const char cols[] =
        " (target_table VARCHAR(256) NOT NULL, run_id BIGINT NOT NULL, kind CHAR(1) NOT NULL, "
        "page BIGINT NOT NULL, attempt BIGINT NOT NULL, item VARCHAR(64) NOT NULL, n BIGINT NOT "
        "NULL, PRIMARY KEY (target_table, run_id, kind, page, attempt, item))";
    if (sqlq_db_dialect(db)->create_if_not_exists)
        return exec_on(db, &rp->table, "CREATE TABLE IF NOT EXISTS ", cols, NULL, 0, NULL, err);
    char *name = NULL, *create = NULL;
    sqlq_result r = text(db, &rp->table, "", "", &name, err);
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    if (r == SQLQ_OK && (sqlq_buf_adds(&b, "IF OBJECT_ID(N") != SQLQ_OK ||
                         sqlq_dialect_quote_literal(sqlq_db_dialect(db), name, &b) != SQLQ_OK ||
                         sqlq_buf_printf(&b, ", N'U') IS NULL CREATE TABLE %s%s", name, cols) !=
                             SQLQ_OK))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    create = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, create, NULL, 0, NULL, err);
    free(name);
    free(create);
    return r;
}

sqlq_result sqlq_sink_repair_lock(sqlq_db *db, const sqlq_sink_repair *rp, int64_t run,
                                  sqlq_error *err)
{
    sqlq_param p[2] = {sqlq_param_text(rp->target), sqlq_param_int(run)};
    long long rows = 0;
    sqlq_result r = exec_on(db, &rp->table, "UPDATE ",
                        " SET n = n + 1 WHERE " KEY_COLS " AND kind = 'L'", p, 2, &rows, err);
    if (r == SQLQ_OK && rows == 0)
        r = sqlq_sink_repair_add(db, rp, run, 'L', 0, 0, "", 0, err);
    return r;
}

sqlq_result sqlq_sink_repair_add(sqlq_db *db, const sqlq_sink_repair *rp, int64_t run, char kind,
                                 int64_t page, int64_t attempt, const char *item, int64_t n,
                                 sqlq_error *err)
{
    char k[2] = {kind, '\0'};
    sqlq_param p[7] = {sqlq_param_text(rp->target), sqlq_param_int(run), sqlq_param_text(k),
                       sqlq_param_int(page), sqlq_param_int(attempt), sqlq_param_text(item),
                       sqlq_param_int(n)};
    const sqlq_dialect *d = sqlq_db_dialect(db);
    static const char cols[] = " (target_table, run_id, kind, page, attempt, item, n) VALUES "
                               "(?, ?, ?, ?, ?, ?, ?)";
    if (d->insert_ignore_head) {
        char tail[200];
        snprintf(tail, sizeof(tail), "%s%s", cols, d->insert_ignore_tail);
        return exec_on(db, &rp->table, d->insert_ignore_head, tail, p, 7, NULL, err);
    }
    /* Without one: under the run's lock row, a test first is enough */
    int64_t have = 0;
    char *sql = NULL;
    sqlq_result r = text(db, &rp->table, "SELECT count(*) FROM ",
                         " WHERE " KEY_COLS " AND kind = ? AND page = ? AND attempt = ? AND "
                         "item = ?", &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, sql, p, 6, &have, err);
    free(sql);
    if (r == SQLQ_OK && have == 0)
        r = exec_on(db, &rp->table, "INSERT INTO ", cols, p, 7, NULL, err);
    return r;
}

/* One integer of the run's rows (*found false when the query returns none or NULL). */
static sqlq_result one(sqlq_db *db, const sqlq_sink_repair *rp, const char *head, const char *tail,
                       const sqlq_param *p, size_t n, int64_t *out, bool *found, sqlq_error *err)
{
    char *sql = NULL;
    json_t *rows = NULL;
    sqlq_result r = text(db, &rp->table, head, tail, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, p, n, &rows, err);
    free(sql);
    json_t *row = json_array_get(rows, 0);
    const char *k = NULL;
    json_t *v = NULL;
    json_object_foreach(row, k, v) break;
    *found = r == SQLQ_OK && v && sqlq_json_int64(v, out);
    json_decref(rows);
    return r;
}

sqlq_result sqlq_sink_repair_due(sqlq_db *db, const sqlq_sink_repair *rp, int64_t run,
                                 bool *out_due, int64_t *out_version, int64_t *out_pages,
                                 sqlq_error *err)
{
    *out_due = false;
    *out_version = *out_pages = 0;
    sqlq_param p[3] = {sqlq_param_text(rp->target), sqlq_param_int(run), sqlq_param_int(0)};
    int64_t swept = 0, complete = 0;
    bool found = false, have_end = false, have_v = false;
    sqlq_result r = one(db, rp, "SELECT count(*) AS n FROM ",
                        " WHERE " KEY_COLS " AND kind = 's'", p, 2, &swept, &found, err);
    if (r == SQLQ_OK && swept == 0)
        r = one(db, rp, "SELECT n FROM ", " WHERE " KEY_COLS " AND kind = 'e'", p, 2, out_pages,
                &have_end, err);
    if (r != SQLQ_OK || swept > 0 || !have_end)
        return r;
    if (*out_pages == 0) { /* nothing was read: nothing to compare with */
        *out_due = true;
        return SQLQ_OK;
    }
    p[2] = sqlq_param_int(*out_pages);
    /* the pages 1..N whose committed manifest has all its parts */
    char *t = NULL;
    r = text(db, &rp->table, "", "", &t, err);
    if (r != SQLQ_OK)
        return r;
    char tail[1600];
    snprintf(tail, sizeof(tail),
             " c WHERE c.target_table = ? AND c.run_id = ? AND c.kind = 'c' AND c.page BETWEEN 1 "
             "AND ? AND (SELECT count(*) FROM %s p WHERE p.target_table = c.target_table AND "
             "p.run_id = c.run_id AND p.kind = 'p' AND p.page = c.page AND p.attempt = c.n) = "
             "(SELECT max(q.n) FROM %s q WHERE q.target_table = c.target_table AND q.run_id = "
             "c.run_id AND q.kind = 'p' AND q.page = c.page AND q.attempt = c.n)",
             t, t);
    free(t);
    r = one(db, rp, "SELECT count(DISTINCT c.page) AS n FROM ", tail, p, 3, &complete, &found,
            err);
    if (r == SQLQ_OK)
        r = one(db, rp, "SELECT n FROM ", " WHERE " KEY_COLS " AND kind = 'c' AND page = 1", p,
                2, out_version, &have_v, err);
    *out_due = r == SQLQ_OK && complete == *out_pages && have_v;
    return r;
}

sqlq_result sqlq_sink_repair_gone(sqlq_db *db, const sqlq_sink_repair *rp, int64_t run,
                                  int64_t version, json_t **out, sqlq_error *err)
{
    *out = NULL;
    char *g = NULL, *t = NULL, *sql = NULL;
    sqlq_result r = text(db, &rp->versions, "", "", &g, err);
    if (r == SQLQ_OK)
        r = text(db, &rp->table, "", "", &t, err);
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    if (r == SQLQ_OK &&
        sqlq_buf_printf(&b,
                        "SELECT g.key_hash, g.key_json FROM %s g WHERE g.target_table = ? AND "
                        "g.version < ? AND g.key_json IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
                        "%s k JOIN %s c ON c.target_table = k.target_table AND c.run_id = "
                        "k.run_id AND c.kind = 'c' AND c.page = k.page AND c.n = k.attempt "
                        "WHERE k.target_table = g.target_table AND k.run_id = ? AND k.kind = 'k' "
                        "AND k.item = g.key_hash)",
                        g, t, t) != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sql = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    sqlq_param p[3] = {sqlq_param_text(rp->target), sqlq_param_int(version), sqlq_param_int(run)};
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, p, 3, out, err);
    free(g);
    free(t);
    free(sql);
    return r;
}

sqlq_result sqlq_sink_repair_done(sqlq_db *db, const sqlq_sink_repair *rp, int64_t run,
                                  sqlq_error *err)
{
    sqlq_param p[3] = {sqlq_param_text(rp->target), sqlq_param_int(run), sqlq_param_int(run)};
    sqlq_result r = sqlq_sink_repair_add(db, rp, run, 's', 0, 0, "", 0, err);
    if (r == SQLQ_OK)
        r = exec_on(db, &rp->table, "DELETE FROM ",
                " WHERE target_table = ? AND ((run_id = ? AND kind IN ('k', 'p')) OR run_id < ?)",
                p, 3, NULL, err);
    return r;
}
