/* cursor_source on the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb):
 * inserts, updates, timestamp ties across batch boundaries (in each timestamp type the
 * database has), composite keys, soft deletes, the safety lag on the database's clock, unsafe
 * cursors refused, and a stale poller's commit rejected by the database after another instance
 * took the lease. What differs per database is in `databases` below. */
#include "capture.h"
#include "cursor_source.h"
#include "db.h"
#include "log.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct env env;

/* A database the cursor source runs on, and what differs there. */
typedef struct database {
    const char *name;
    const char *ts_types[2]; /* NOT NULL timestamp types (the second may be NULL) */
    const char *state_table;
    /* an SQL expression for the time ms before base (a column; NULL: the database's clock), in
     * the column's own format */
    void (*time_minus)(const char *base, int ms, char *out, size_t size);
    /* cursor_state's rows of this database: a condition after WHERE … (SQLite and PostgreSQL
     * keep one state table per database, MariaDB one per server) */
    const char *this_database;
    /* a column the database refuses as a cursor beyond the common ones: its table's DDL (after
     * table bad), the column and what the refusal says */
    const char *odd_create, *odd_insert, *odd_column, *odd_refusal;
} database;

struct env {
    const char *conn;
    const database *d;
    const char *ts_type; /* the NOT NULL timestamp type this run uses */
};

static sqlq_cursor_source *open_source(sqlq_db *db, const char *table, const char *cursor,
                                       const char *soft_delete, const char *instance, int batch,
                                       int lease_s, int lag_ms)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.source = SQLQ_SOURCE_CURSOR;
    cfg.table = table;
    cfg.instance_id = instance;
    cfg.cursor_column = cursor;
    cfg.soft_delete_column = soft_delete;
    cfg.max_batch_size = batch;
    cfg.lease_s = lease_s;
    cfg.safety_lag_ms = lag_ms;
    sqlq_cursor_source *cs = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_cursor_source_open(db, NULL, &cfg, &cs, &err) != SQLQ_OK)
        fail_msg("cursor source open: %s", err.message);
    return cs;
}

/* What a poll delivered: ids (key "id") and ops, appended. */
typedef struct seen {
    int64_t ids[512];
    sqlq_op ops[512];
    size_t n;
    size_t batches;
} seen;

static size_t poll_release(sqlq_cursor_source *cs, seen *s, bool release)
{
    sqlq_change_batch b;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_cursor_source_poll(cs, &b, &err) != SQLQ_OK)
        fail_msg("poll: %s", err.message);
    for (size_t i = 0; i < b.count && s->n < 512; i++) {
        s->ids[s->n] = (int64_t)json_integer_value(json_object_get(b.items[i].key, "id"));
        s->ops[s->n++] = b.items[i].op;
        if (b.items[i].op == SQLQ_OP_DELETE)
            assert_null(b.items[i].row);
        else
            assert_non_null(json_object_get(b.items[i].row, "name"));
    }
    if (b.count > 0)
        s->batches++;
    if (release && b.count > 0) {
        size_t lost = 99;
        if (sqlq_cursor_source_release(cs, b.items, b.count, &lost, &err) != SQLQ_OK)
            fail_msg("release: %s", err.message);
        assert_int_equal(lost, 0);
    }
    size_t n = b.count;
    sqlq_change_batch_free(&b);
    return n;
}

static void drain(sqlq_cursor_source *cs, seen *s)
{
    for (int guard = 0; guard < 200 && poll_release(cs, s, true) > 0; guard++)
        ;
}

/* 25 rows share one timestamp (microseconds on PostgreSQL); batches of 10 split the tie group
 * twice; a restart in the middle resumes after the last committed key. */
static void ties_updates_soft_delete(const env *e)
{
    sqlq_db *db = sqlq_test_db_open(e->conn);
    sqlq_test_db_execf(db,
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, name VARCHAR(50) NOT NULL, "
            "updated_at %s NOT NULL, deleted_at %s NULL)",
            e->ts_type, e->ts_type);
    for (int i = 25; i >= 1; i--) /* inserted in reverse: order must come from the key */
        sqlq_test_db_execf(db, "INSERT INTO orders VALUES (%d, 'n%d', '2024-01-01 10:00:00.123456', NULL)", i,
                i);
    sqlq_cursor_source *cs = open_source(db, "orders", "updated_at", "deleted_at", "a", 10, 30, 0);
    seen s = {0};
    assert_int_equal(poll_release(cs, &s, true), 10);
    sqlq_cursor_source_close(cs); /* restart between two batches of one tie group */
    cs = open_source(db, "orders", "updated_at", "deleted_at", "b", 10, 30, 0);
    drain(cs, &s);
    assert_int_equal(s.n, 25);
    for (size_t i = 0; i < 25; i++) {
        assert_int_equal(s.ids[i], (int64_t)i + 1); /* each once, in key order */
        assert_int_equal(s.ops[i], SQLQ_OP_UPDATE);
    }
    /* Updates move the cursor: exactly the updated rows come again. */
    sqlq_test_db_execf(db, "UPDATE orders SET name = 'x', updated_at = '2024-01-01 11:00:00' WHERE id IN (7, 3)");
    sqlq_test_db_execf(db, "UPDATE orders SET deleted_at = '2024-01-01 12:00:00', "
                "updated_at = '2024-01-01 12:00:00' WHERE id = 5");
    seen u = {0};
    drain(cs, &u);
    assert_int_equal(u.n, 3);
    assert_int_equal(u.ids[0], 3);
    assert_int_equal(u.ids[1], 7);
    assert_int_equal(u.ids[2], 5);
    assert_int_equal(u.ops[2], SQLQ_OP_DELETE);
    /* The checkpoint holds the last row exactly. */
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE table_name LIKE '%%orders'%s AND "
             "key_json = '[5]' AND rows_done = 28", e->d->state_table, e->d->this_database);
    assert_int_equal(sqlq_test_db_query_int(db, sql, NULL, 0), 1);
    sqlq_cursor_source_close(cs);
    sqlq_db_close(db);
}

/* Composite key (text, integer) as tiebreaker under an integer version cursor. */
static void composite_key_integer_cursor(const env *e)
{
    sqlq_db *db = sqlq_test_db_open(e->conn);
    sqlq_test_db_execf(db, "CREATE TABLE items (tenant VARCHAR(20) NOT NULL, id INTEGER NOT NULL, "
                "name VARCHAR(50) NOT NULL, version BIGINT NOT NULL, PRIMARY KEY (tenant, id))");
    const char *tenants[] = {"b", "a", "c"};
    for (int t = 0; t < 3; t++)
        for (int i = 1; i <= 4; i++)
            sqlq_test_db_execf(db, "INSERT INTO items VALUES ('%s', %d, 'n', %d)", tenants[t], i,
                    i <= 2 ? 1 : 2);
    sqlq_cursor_source *cs = open_source(db, "items", "version", NULL, "a", 5, 30, 0);
    char order[64] = "";
    size_t used = 0;
    for (int guard = 0; guard < 20; guard++) {
        sqlq_change_batch b;
        sqlq_error err;
        sqlq_error_clear(&err);
        assert_int_equal(sqlq_cursor_source_poll(cs, &b, &err), SQLQ_OK);
        if (b.count == 0)
            break;
        for (size_t i = 0; i < b.count; i++) {
            int n = snprintf(order + used, sizeof(order) - used, "%s%d ",
                             json_string_value(json_object_get(b.items[i].key, "tenant")),
                             (int)json_integer_value(json_object_get(b.items[i].key, "id")));
            assert_true(n > 0 && (size_t)n < sizeof(order) - used);
            used += (size_t)n;
        }
        assert_int_equal(sqlq_cursor_source_release(cs, b.items, b.count, NULL, &err), SQLQ_OK);
        sqlq_change_batch_free(&b);
    }
    assert_string_equal(order, "a1 a2 b1 b2 c1 c2 a3 a4 b3 b4 c3 c4 ");
    sqlq_cursor_source_close(cs);
    sqlq_db_close(db);
}

static void now_minus(const env *e, int ms, char *out, size_t size)
{
    e->d->time_minus(NULL, ms, out, size);
}

/* The lag: a row stamped within the lag before a poll is read once the lag passed; a row
 * stamped before the checkpoint (committed later than the lag) is not read: documented. */
static void safety_lag(const env *e)
{
    sqlq_db *db = sqlq_test_db_open(e->conn);
    sqlq_test_db_execf(db, "CREATE TABLE ev (id INTEGER PRIMARY KEY, name VARCHAR(50) NOT NULL, "
                "updated_at %s NOT NULL)", e->ts_type);
    char expr[160];
    now_minus(e, 5000, expr, sizeof(expr));
    sqlq_test_db_execf(db, "INSERT INTO ev VALUES (1, 'old', %s)", expr);
    now_minus(e, 300, expr, sizeof(expr));
    sqlq_test_db_execf(db, "INSERT INTO ev VALUES (2, 'recent', %s)", expr);
    sqlq_cursor_source *cs = open_source(db, "ev", "updated_at", NULL, "a", 10, 30, 2000);
    seen s = {0};
    drain(cs, &s);
    assert_int_equal(s.n, 1); /* 2 is younger than the lag */
    assert_int_equal(s.ids[0], 1);
    /* A transaction that took its timestamp before 2's commits only now: within the lag. */
    e->d->time_minus("updated_at", 200, expr, sizeof(expr));
    sqlq_test_db_execf(db, "INSERT INTO ev SELECT 3, 'late', %s FROM ev WHERE id = 2", expr);
    usleep(2100 * 1000);
    drain(cs, &s);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.ids[1], 3); /* stamped before 2 */
    assert_int_equal(s.ids[2], 2);
    /* Committed later than the lag allows: below the checkpoint, never read. */
    now_minus(e, 60000, expr, sizeof(expr));
    sqlq_test_db_execf(db, "INSERT INTO ev VALUES (4, 'too late', %s)", expr);
    drain(cs, &s);
    assert_int_equal(s.n, 3);
    sqlq_cursor_source_close(cs);
    sqlq_db_close(db);
}

static void expect_refused(sqlq_db *db, const char *table, const char *cursor, const char *fragment)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.source = SQLQ_SOURCE_CURSOR;
    cfg.table = table;
    cfg.cursor_column = cursor;
    sqlq_cursor_source *cs = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_cursor_source_open(db, NULL, &cfg, &cs, &err), SQLQ_E_INVALID);
    assert_null(cs);
    if (!strstr(err.message, fragment))
        fail_msg("'%s' does not say '%s'", err.message, fragment);
}

static void unsafe_cursors(const env *e)
{
    sqlq_db *db = sqlq_test_db_open(e->conn);
    sqlq_test_db_execf(db, "CREATE TABLE bad (id INTEGER PRIMARY KEY, ts_null %s NULL, score REAL NOT NULL, "
                "label VARCHAR(20) NOT NULL, day DATE NOT NULL)", e->ts_type);
    expect_refused(db, "bad", "ts_null", "nullable");
    expect_refused(db, "bad", "score", "floating-point");
    expect_refused(db, "bad", "label", "collation");
    expect_refused(db, "bad", "nope", "is not a column");
    if (e->d->odd_create)
        sqlq_test_db_exec(db, e->d->odd_create);
    if (e->d->odd_insert)
        sqlq_test_db_exec(db, e->d->odd_insert);
    expect_refused(db, e->d->odd_create ? "odd" : "bad", e->d->odd_column, e->d->odd_refusal);
    sqlq_db_close(db);
}

/* A poller whose lease was taken over cannot move the checkpoint: its commit is rejected by the
 * database, and the checkpoint the new owner committed stays. */
static void stale_commit_rejected(const env *e)
{
    sqlq_db *db_a = sqlq_test_db_open(e->conn), *db_b = sqlq_test_db_open(e->conn);
    sqlq_test_db_execf(db_a, "CREATE TABLE st (id INTEGER PRIMARY KEY, name VARCHAR(50) NOT NULL, "
                  "updated_at %s NOT NULL)", e->ts_type);
    for (int i = 1; i <= 6; i++)
        sqlq_test_db_execf(db_a, "INSERT INTO st VALUES (%d, 'n', '2024-01-01 00:00:0%d')", i, i);
    sqlq_cursor_source *a = open_source(db_a, "st", "updated_at", NULL, "inst-a", 3, 1, 0);
    sqlq_cursor_source *b = open_source(db_b, "st", "updated_at", NULL, "inst-b", 3, 1, 0);
    sqlq_change_batch ba;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_cursor_source_poll(a, &ba, &err), SQLQ_OK);
    assert_int_equal(ba.count, 3);
    assert_true(sqlq_cursor_source_leader(a));
    seen sb = {0};
    assert_int_equal(poll_release(b, &sb, true), 0); /* standby while a's lease lives */
    assert_false(sqlq_cursor_source_leader(b));
    /* A second handle of instance a (the bridge's renewal thread) extends a's lease; b's
     * handle cannot. */
    sqlq_db *db_a2 = sqlq_test_db_open(e->conn);
    sqlq_cursor_source *a2 = open_source(db_a2, "st", "updated_at", NULL, "inst-a", 3, 1, 0);
    assert_int_equal(sqlq_cursor_source_renew(a2, NULL, 0, &err), SQLQ_OK);
    assert_int_equal(sqlq_cursor_source_renew(b, NULL, 0, &err), SQLQ_E_LEASE_LOST);
    sqlq_error_clear(&err);
    sqlq_cursor_source_close(a2);
    sqlq_db_close(db_a2);
    usleep(1300 * 1000); /* a stalls past its 1 s lease */
    drain(b, &sb);       /* b takes over (token + 1) and re-reads a's uncommitted batch */
    assert_true(sqlq_cursor_source_leader(b));
    assert_int_equal(sb.n, 6);
    assert_int_equal(sb.ids[0], 1);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT batch_id FROM %s WHERE table_name LIKE '%%st'%s",
             e->d->state_table, e->d->this_database);
    int64_t committed = sqlq_test_db_query_int(db_a, sql, NULL, 0);
    assert_int_equal(committed, 2);
    size_t lost = 0;
    assert_int_equal(sqlq_cursor_source_release(a, ba.items, ba.count, &lost, &err),
                     SQLQ_E_LEASE_LOST);
    assert_int_equal(lost, 3);
    assert_non_null(strstr(err.message, "rejected"));
    assert_int_equal(sqlq_test_db_query_int(db_a, sql, NULL, 0), committed); /* not moved back */
    assert_false(sqlq_cursor_source_leader(a));
    sqlq_change_batch_free(&ba);
    sqlq_cursor_source_close(a);
    sqlq_cursor_source_close(b);
    sqlq_db_close(db_a);
    sqlq_db_close(db_b);
}

static void sqlite_time_minus(const char *base, int ms, char *out, size_t size)
{
    snprintf(out, size, "strftime('%%Y-%%m-%%d %%H:%%M:%%f', %s, '-%d.%03d seconds')",
             base ? base : "'now'", ms / 1000, ms % 1000);
}

static void postgres_time_minus(const char *base, int ms, char *out, size_t size)
{
    snprintf(out, size, "%s - interval '%d milliseconds'", base ? base : "clock_timestamp()", ms);
}

static void mariadb_time_minus(const char *base, int ms, char *out, size_t size)
{
    snprintf(out, size, "%s - INTERVAL %d MICROSECOND", base ? base : "UTC_TIMESTAMP(6)", ms * 1000);
}

static const database databases[] = {
    /* SQLite takes any value in any column: a timestamp column holding numbers is refused. */
    {"sqlite", {"TIMESTAMP", NULL}, "sqlq_cursor_state", sqlite_time_minus, "",
     "CREATE TABLE odd (id INTEGER PRIMARY KEY, ts TIMESTAMP NOT NULL)",
     "INSERT INTO odd VALUES (1, 1714564800)", "ts", "ISO 8601"},
    /* timestamptz, and naive timestamps with microseconds round-tripping through the checkpoint */
    {"postgres", {"timestamptz", "timestamp"}, "sqlq.cursor_state", postgres_time_minus, "", NULL,
     NULL, "day", "time of day"},
    {"mariadb", {"datetime(6)", "timestamp(6)"}, "sqlq.cursor_state", mariadb_time_minus,
     " AND table_name LIKE CONCAT(DATABASE(), '.%')", NULL, NULL, "day", "time of day"},
};

static const database *db_under_test;

/* Each case on a fresh database of the kind under test, in its first timestamp type. */
#define CASE(fn)                                                                                   \
    static void test_cursor_##fn(void **state)                                                     \
    {                                                                                              \
        (void)state;                                                                               \
        env e = {sqlq_test_create_db(db_under_test->name, "cur_" #fn), db_under_test,              \
                 db_under_test->ts_types[0]};                                                      \
        fn(&e);                                                                                    \
        free((char *)(uintptr_t)e.conn);                                                           \
    }

CASE(ties_updates_soft_delete)
CASE(composite_key_integer_cursor)
CASE(safety_lag)
CASE(unsafe_cursors)
CASE(stale_commit_rejected)

/* Ties in the database's second timestamp type (PostgreSQL: naive timestamps with microseconds
 * round-trip exactly through the checkpoint). */
static void test_cursor_ties_second_timestamp_type(void **state)
{
    (void)state;
    if (!db_under_test->ts_types[1]) {
        print_message("%s has one timestamp type\n", db_under_test->name);
        skip();
    }
    env e = {sqlq_test_create_db(db_under_test->name, "cur_ts2"), db_under_test,
             db_under_test->ts_types[1]};
    ties_updates_soft_delete(&e);
    free((char *)(uintptr_t)e.conn);
}

int main(void)
{
    sqlq_log_set_level(SQLQ_LOG_WARN);
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_ties_updates_soft_delete),
        cmocka_unit_test(test_cursor_ties_second_timestamp_type),
        cmocka_unit_test(test_cursor_composite_key_integer_cursor),
        cmocka_unit_test(test_cursor_safety_lag),
        cmocka_unit_test(test_cursor_unsafe_cursors),
        cmocka_unit_test(test_cursor_stale_commit_rejected),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
