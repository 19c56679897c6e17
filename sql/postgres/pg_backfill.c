/* pg_backfill: a backfilled row's floor F on the trigger log (backfill_version.h): the version
 * sequence's last value s, read before the page, once every transaction that held the log's
 * lock then has ended (so every version <= s is final and visible to the page's snapshot, and
 * later ones are above s), and at least the slowest bridge's sync version read in the page's
 * statement (a change trimmed meanwhile is at or below it). */
#include "pg_internal.h"

#include "catalog.h"
#include "clock.h"
#include "log.h"
#include "sql_text.h"

#include <stdlib.h>
#include <string.h>

#define WAIT_STEP_MS 20
#define WAIT_WARN_MS 5000

void sqlq_pg_backfill_floor_sql(sqlq_sql_text *q, const sqlq_catalog_names *n, bool *param)
{
    *param = true;
    sqlq_sql_text_add(q, "greatest(CAST(? AS bigint), coalesce((SELECT min(sync_version) FROM ");
    sqlq_catalog_object(q, "state");
    sqlq_sql_text_add(q, " WHERE table_name = ");
    sqlq_sql_text_literal(q, n->table_key);
    sqlq_sql_text_add(q, "), 0))");
}

/* The transactions holding the log's ROW EXCLUSIVE lock (writers), as their
 * virtual transaction ids, in an array. */
static sqlq_result writers(sqlq_db *db, const sqlq_catalog_names *n, json_t **out,
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

/* s, then wait until every writer holding the log's lock at that moment ended. */
sqlq_result sqlq_pg_backfill_floor(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out,
                                   bool *out_txn, sqlq_error *err)
{
    *out_txn = false;
    char seq[72];
    sqlq_pg_change_log_sequence(n, seq, sizeof(seq));
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
        r = writers(db, n, &first, err);
    uint64_t waited = 0, warned = 0;
    sqlq_clock clock = sqlq_clock_system(NULL);
    while (r == SQLQ_OK && json_array_size(first) > 0) {
        json_decref(now);
        now = NULL;
        r = writers(db, n, &now, err);
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

