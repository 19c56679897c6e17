/* backfill_version: a backfilled row's version where the source has none (see the header). */
#include "backfill_version.h"

#include "change_log.h"
#include "clock.h"
#include "dialect.h"
#include "log.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_STEP_MS 20
#define WAIT_WARN_MS 5000

/* "T"."k1" = alias."k1" AND … (T: the user table, fully qualified). */
static void key_match(sqlq_sql_text *q, const sqlq_table *t, const char *alias)
{
    for (size_t i = 0; i < t->nkey; i++) {
        const char *name = t->columns[t->key[i]].name;
        sqlq_sql_text_add(q, "%s%s.", i ? " AND " : "", alias);
        sqlq_sql_text_ident(q, name);
        sqlq_sql_text_add(q, " = ");
        sqlq_sql_text_table(q, &t->name);
        sqlq_sql_text_add(q, ".");
        sqlq_sql_text_ident(q, name);
    }
}

/* F as SQL (see the header); *param: one "?" in it. */
static void floor_sql(sqlq_sql_text *q, const sqlq_catalog_names *n, bool *param)
{
    sqlq_capture_shape shape = n->dialect->capture_shape;
    *param = shape == SQLQ_CAPTURE_LOG_SEQUENCE || shape == SQLQ_CAPTURE_LOG_STAMPED;
    if (shape == SQLQ_CAPTURE_LOG_SEQUENCE) {
        sqlq_sql_text_add(q, "greatest(CAST(? AS bigint), coalesce((SELECT min(sync_version) FROM ");
        sqlq_catalog_object(q, "state");
        sqlq_sql_text_add(q, " WHERE table_name = ");
        sqlq_sql_text_literal(q, n->table_key);
        sqlq_sql_text_add(q, "), 0))");
    } else if (shape == SQLQ_CAPTURE_LOG_STAMPED) {
        sqlq_sql_text_add(q, "CAST(? AS SIGNED)");
    } else { /* SQLite */
        char row[SQLQ_TABLE_KEY_MAX + 8];
        snprintf(row, sizeof(row), SQLQ_BACKFILL_FLOOR_ROW "%s", n->table_key);
        sqlq_sql_text_add(q, "max(coalesce((SELECT max(" SQLQ_COL_VERSION ") FROM ");
        sqlq_catalog_object(q, n->log_table);
        sqlq_sql_text_add(q, "), 0), coalesce((SELECT value FROM ");
        sqlq_catalog_object(q, "counter");
        sqlq_sql_text_add(q, " WHERE name = ");
        sqlq_sql_text_literal(q, row);
        sqlq_sql_text_add(q, "), 0))");
    }
}

/* SQL Server change tracking: one below the oldest version change tracking still keeps. */
static void ct_floor_sql(sqlq_sql_text *q, const sqlq_table *t)
{
    sqlq_sql_text_add(q, "(CHANGE_TRACKING_MIN_VALID_VERSION(OBJECT_ID(");
    sqlq_sql_text sub;
    sqlq_sql_text_init(&sub, q->dialect);
    sqlq_sql_text_table(&sub, &t->name);
    char *name = NULL;
    if (sqlq_sql_text_take(&sub, &name, NULL) == SQLQ_OK)
        sqlq_sql_text_literal(q, name);
    free(name);
    sqlq_sql_text_add(q, ")) - 1)");
}

/* SQL Server change tracking: the version of the row's last tracked change, else the floor. */
static void ct_version_sql(sqlq_sql_text *q, const sqlq_table *t, const char *floor)
{
    sqlq_sql_text_add(q, "COALESCE((SELECT ct.SYS_CHANGE_VERSION FROM CHANGETABLE(VERSION ");
    sqlq_sql_text_table(q, &t->name);
    sqlq_sql_text_add(q, ", (");
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(q, i ? ", " : "");
        sqlq_sql_text_ident(q, t->columns[t->key[i]].name);
    }
    sqlq_sql_text_add(q, "), (");
    for (size_t i = 0; i < t->nkey; i++) {
        sqlq_sql_text_add(q, i ? ", " : "");
        sqlq_sql_text_table(q, &t->name);
        sqlq_sql_text_add(q, ".");
        sqlq_sql_text_ident(q, t->columns[t->key[i]].name);
    }
    sqlq_sql_text_add(q, ")) AS ct), %s)", floor);
}

sqlq_result sqlq_backfill_version_sql(sqlq_db *db, const sqlq_catalog_names *n,
                                      const sqlq_table *t, bool change_tracking, char **out_floor,
                                      char **out_version, bool *out_param, sqlq_error *err)
{
    *out_param = false;
    *out_floor = *out_version = NULL;
    sqlq_sql_text f;
    sqlq_sql_text_init(&f, sqlq_db_dialect(db));
    if (change_tracking)
        ct_floor_sql(&f, t);
    else
        floor_sql(&f, n, out_param);
    sqlq_result r = sqlq_sql_text_take(&f, out_floor, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    if (change_tracking) {
        ct_version_sql(&q, t, *out_floor);
    } else {
        /* MariaDB/MySQL: 0 is "not stamped yet", which the floor covers too */
        bool stamped = n->dialect->capture_shape == SQLQ_CAPTURE_LOG_STAMPED;
        sqlq_sql_text_add(&q, "COALESCE((SELECT %s FROM ",
                          stamped ? "NULLIF(l." SQLQ_COL_VERSION ", 0)" : "l." SQLQ_COL_VERSION);
        sqlq_catalog_object(&q, n->log_table);
        sqlq_sql_text_add(&q, " l WHERE ");
        key_match(&q, t, "l");
        sqlq_sql_text_add(&q, "), %s)", *out_floor);
    }
    r = sqlq_sql_text_take(&q, out_version, err);
    if (r != SQLQ_OK) {
        free(*out_floor);
        *out_floor = NULL;
    }
    return r;
}

/* PostgreSQL: the transactions holding the log's ROW EXCLUSIVE lock (writers), as their
 * virtual transaction ids, in an array. */
static sqlq_result pg_writers(sqlq_db *db, const sqlq_catalog_names *n, json_t **out,
                              sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "SELECT DISTINCT virtualtransaction AS vx FROM pg_locks WHERE locktype "
                          "= 'relation' AND mode = 'RowExclusiveLock' AND database = (SELECT oid "
                          "FROM pg_database WHERE datname = current_database()) AND relation = "
                          "to_regclass(");
    sqlq_sql_text t;
    sqlq_sql_text_init(&t, q.dialect);
    sqlq_catalog_object(&t, n->log_table);
    char *log = NULL, *sql = NULL;
    sqlq_result r = sqlq_sql_text_take(&t, &log, err);
    if (r == SQLQ_OK)
        sqlq_sql_text_literal(&q, log);
    free(log);
    sqlq_sql_text_add(&q, ") AND pid IS DISTINCT FROM pg_backend_pid()");
    if (r == SQLQ_OK)
        r = sqlq_sql_text_take(&q, &sql, err);
    else
        sqlq_sql_text_free(&q);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, sql, NULL, 0, out, err);
    free(sql);
    return r;
}

static bool any_left(const json_t *before, const json_t *now)
{
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(before, i, a) {
        json_array_foreach(now, j, b) {
            const char *x = json_string_value(json_object_get(a, "vx"));
            const char *y = json_string_value(json_object_get(b, "vx"));
            if (x && y && strcmp(x, y) == 0)
                return true;
        }
    }
    return false;
}

/* PostgreSQL: s, then wait until every writer holding the log's lock at that moment ended. */
static sqlq_result pg_floor(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out,
                            sqlq_error *err)
{
    char seq[72];
    sqlq_change_log_sequence(n, seq, sizeof(seq));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "SELECT " SQLQ_PG_SEQUENCE_LAST " FROM ");
    sqlq_catalog_object(&q, seq);
    char *sql = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, sql, NULL, 0, out, err);
    free(sql);
    json_t *first = NULL, *now = NULL;
    if (r == SQLQ_OK)
        r = pg_writers(db, n, &first, err);
    uint64_t waited = 0, warned = 0;
    sqlq_clock clock = sqlq_clock_system(NULL);
    while (r == SQLQ_OK && json_array_size(first) > 0) {
        json_decref(now);
        now = NULL;
        r = pg_writers(db, n, &now, err);
        if (r != SQLQ_OK || !any_left(first, now))
            break;
        if (waited - warned >= WAIT_WARN_MS) {
            warned = waited;
            SQLQ_WARN("backfill_waits_for_writers", "table=%s waited_ms=%llu note=\"a "
                      "transaction that wrote the change log is still open: a page waits for it "
                      "(its versions may still commit; see sqlq status)\"",
                      n->table_key, (unsigned long long)waited);
        }
        (void)sqlq_clock_sleep_ms(&clock, WAIT_STEP_MS);
        waited += WAIT_STEP_MS;
    }
    json_decref(first);
    json_decref(now);
    return r;
}

sqlq_result sqlq_backfill_floor_begin(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out,
                                      bool *out_txn, sqlq_error *err)
{
    *out = 0;
    *out_txn = false;
    sqlq_capture_shape shape = n->dialect->capture_shape;
    if (shape == SQLQ_CAPTURE_LOG_SEQUENCE)
        return pg_floor(db, n, out, err);
    if (shape != SQLQ_CAPTURE_LOG_STAMPED)
        return SQLQ_OK;
    sqlq_result r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    *out_txn = true;
    r = sqlq_db_exec(db, "UPDATE sqlq.counter SET value = LAST_INSERT_ID(value + 1) WHERE "
                         "name = 'version'", NULL, 0, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db, "SELECT LAST_INSERT_ID()", NULL, 0, out, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        *out_txn = false;
    }
    return r;
}

sqlq_result sqlq_backfill_floor_end(sqlq_db *db, bool ok, sqlq_error *err)
{
    if (ok)
        return sqlq_db_commit(db, err);
    sqlq_db_rollback(db);
    return SQLQ_OK;
}
