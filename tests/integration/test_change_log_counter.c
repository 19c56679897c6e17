/* SQLite change-log versions on a real SQLite file through ODBC: the triggers write no counter
 * row; a version is one above the log's newest and above the floor fixed at setup, so versions
 * only grow across the log trim, a reconnect, a setup over a log of an earlier sqlq (whose
 * triggers bumped sqlq_counter) and a drop followed by a new setup (docs/capture.md, Versions). */
#include "capture.h"
#include "db.h"
#include "testdb.h"
#include "testenv.h"

// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct env {
    char *conn;
    sqlq_db *db;
} env;

static void env_open(env *e)
{
    char path[1024];
    e->conn = sqlq_test_sqlite_db("capture_versions", path, sizeof(path));
    e->db = NULL;
    SQLQ_TEST_OK(sqlq_db_connect(e->conn, &e->db, err));
}

static void reconnect(env *e)
{
    sqlq_db_close(e->db);
    e->db = NULL;
    SQLQ_TEST_OK(sqlq_db_connect(e->conn, &e->db, err));
}

static void env_close(env *e)
{
    sqlq_db_close(e->db);
    free(e->conn);
}

static sqlq_capture *open_cap(sqlq_db *db, const char *table, const char *bridge)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = table;
    cfg.bridge_name = bridge;
    cfg.instance_id = "i";
    cfg.lease_s = 60;
    cfg.max_batch_size = 100;
    sqlq_capture *cap = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(db, &cfg, &cap, err));
    return cap;
}

/* Polls, releases and advances until nothing is left; returns the changes delivered and the
 * op of the last one in *last_op. */
static size_t drain(sqlq_capture *cap, char *last_op)
{
    size_t total = 0;
    for (int round = 0; round < 20; round++) {
        sqlq_change_batch b;
        SQLQ_TEST_OK(sqlq_capture_poll(cap, &b, err));
        if (b.count > 0 && last_op)
            *last_op = sqlq_op_name(b.items[b.count - 1].op)[0];
        total += b.count;
        size_t lost = 0;
        if (b.count > 0)
            SQLQ_TEST_OK(sqlq_capture_release(cap, b.items, b.count, &lost, err));
        assert_int_equal(lost, 0);
        bool empty = b.count == 0;
        sqlq_change_batch_free(&b);
        SQLQ_TEST_OK(sqlq_capture_advance(cap, NULL, err));
        if (empty)
            break;
    }
    return total;
}

static int64_t newest(sqlq_db *db, const char *log)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT coalesce(max(sqlq_version), -1) FROM %s", log);
    return sqlq_test_db_int(db, sql);
}

/* No counter row is written per change: the counter stays, versions follow the log. */
static void test_versions_no_counter_write(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE a (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "a");
    int64_t counter =
        sqlq_test_db_int(e.db, "SELECT value FROM sqlq_counter WHERE name = 'version'");
    sqlq_test_db_exec(e.db, "INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z')");
    sqlq_test_db_exec(e.db, "UPDATE a SET id = 4 WHERE id = 1"); /* delete of 1 and insert of 4 */
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT value FROM sqlq_counter WHERE name = 'version'"), counter);
    assert_int_equal(sqlq_test_db_int(e.db,
                                      "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                                      "AND sql LIKE '%sqlq_counter%'"),
                     0);
    /* every row change its own version, in order: 1 2 3, then 5 (delete of 1), 6 (insert 4) */
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT count(DISTINCT sqlq_version) FROM sqlq_log_a"),
                     4);
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT sqlq_version FROM sqlq_log_a WHERE id = 1"),
                     counter + 4);
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT sqlq_version FROM sqlq_log_a WHERE id = 4"),
                     counter + 5);
    /* an 'I' row's since is its own version, left NULL; an update of the key stores it */
    assert_int_equal(sqlq_test_db_int(e.db,
                                      "SELECT count(*) FROM sqlq_log_a WHERE id = 4 AND sqlq_since "
                                      "IS NULL"),
                     1);
    sqlq_test_db_exec(e.db, "UPDATE a SET v = 'w' WHERE id = 4");
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT sqlq_since FROM sqlq_log_a WHERE id = 4"),
                     counter + 5);
    assert_int_equal(sqlq_test_db_int(e.db,
                                      "SELECT count(*) FROM sqlq_log_a WHERE id = 4 AND sqlq_op = "
                                      "'U' AND sqlq_version > sqlq_since"),
                     1);
    env_close(&e);
}

/* The trim keeps the log's newest row: after a full drain and a reconnect the next change
 * still takes a larger version and is delivered. */
static void test_versions_trim_keeps_newest(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE b (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "b");
    sqlq_test_db_exec(e.db, "INSERT INTO b VALUES (1, 'x'), (2, 'y'), (3, 'z')");
    sqlq_test_db_exec(e.db, "DELETE FROM b WHERE id = 3");
    int64_t top = newest(e.db, "sqlq_log_b");
    sqlq_capture *cap = open_cap(e.db, "b", "default");
    assert_int_equal(drain(cap, NULL), 3);
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT count(*) FROM sqlq_log_b"),
                     1); /* the newest stays */
    assert_int_equal(newest(e.db, "sqlq_log_b"), top);
    sqlq_capture_close(cap);
    reconnect(&e);
    sqlq_test_db_exec(e.db, "INSERT INTO b VALUES (3, 'again')"); /* the key of the row kept */
    assert_true(newest(e.db, "sqlq_log_b") > top);
    cap = open_cap(e.db, "b", "default");
    char op = '?';
    assert_int_equal(drain(cap, &op), 1);
    assert_int_equal(op, 'i');
    sqlq_capture_close(cap);
    env_close(&e);
}

/* The triggers of an earlier sqlq (the counter bumped per change, shared by every table) and
 * a bridge that started "now" from that counter: setup replaces the triggers, and the next
 * version is above the counter, the sync version and the log. */
static void test_versions_upgrade_counter_log(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE c (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "c");
    sqlq_test_db_exec(e.db, "DROP TRIGGER sqlq_log_c_ai");
    sqlq_test_db_exec(
        e.db, "CREATE TRIGGER sqlq_log_c_ai AFTER INSERT ON c FOR EACH ROW BEGIN UPDATE "
              "sqlq_counter SET value = value + 1 WHERE name = 'version'; INSERT INTO sqlq_log_c "
              "(id, sqlq_version, sqlq_op, sqlq_since) VALUES (NEW.id, (SELECT value FROM "
              "sqlq_counter WHERE name = 'version'), 'I', (SELECT value FROM sqlq_counter WHERE "
              "name = 'version')) ON CONFLICT (id) DO UPDATE SET sqlq_version = "
              "excluded.sqlq_version, sqlq_op = excluded.sqlq_op, sqlq_since = "
              "excluded.sqlq_since; END");
    sqlq_test_db_exec(
        e.db, "UPDATE sqlq_counter SET value = 1000 WHERE name = 'version'"); /* other tables */
    sqlq_test_db_exec(e.db, "INSERT INTO c VALUES (1, 'x'), (2, 'y')");       /* 1001, 1002 */
    assert_int_equal(newest(e.db, "sqlq_log_c"), 1002);
    sqlq_capture *cap = open_cap(e.db, "c", "old");
    sqlq_capture_close(cap);
    sqlq_test_db_exec(e.db, "UPDATE sqlq_counter SET value = 2000 WHERE name = 'version'");
    sqlq_test_db_exec(e.db,
                      "UPDATE sqlq_state SET sync_version = 2000"); /* started "now" at 2000 */
    sqlq_test_change_log_install(e.db, "c");
    sqlq_test_db_exec(e.db, "INSERT INTO c VALUES (3, 'z')");
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT sqlq_version FROM sqlq_log_c WHERE id = 3"),
                     2001);
    cap = open_cap(e.db, "c", "old");
    assert_int_equal(drain(cap, NULL), 1);
    sqlq_capture_close(cap);
    /* setup again over this log: the floor does not go back */
    sqlq_test_change_log_install(e.db, "c");
    sqlq_test_db_exec(e.db, "UPDATE c SET v = 'w' WHERE id = 3");
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT sqlq_version FROM sqlq_log_c WHERE id = 3"),
                     2002);
    env_close(&e);
}

/* A drop raises the floor to the log's newest version: the log set up again starts above it
 * (another table keeps sqlq's catalog, and its counter, in place). */
static void test_versions_drop_and_setup(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE d (id integer PRIMARY KEY, v text)");
    sqlq_test_db_exec(e.db, "CREATE TABLE other (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "other");
    sqlq_test_change_log_install(e.db, "d");
    sqlq_test_db_exec(e.db, "INSERT INTO d VALUES (1, 'x'), (2, 'y'), (3, 'z')");
    int64_t top = newest(e.db, "sqlq_log_d");
    sqlq_test_change_log_drop(e.db, "d");
    sqlq_test_change_log_install(e.db, "d");
    sqlq_test_db_exec(e.db, "INSERT INTO d VALUES (4, 'w')");
    assert_true(newest(e.db, "sqlq_log_d") > top);
    /* a bridge starting "now" skips what the log holds, and gets what follows */
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = "d";
    cfg.instance_id = "i";
    cfg.start_from = SQLQ_START_NOW;
    sqlq_capture *cap = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(e.db, &cfg, &cap, err));
    sqlq_test_db_exec(e.db, "DELETE FROM d WHERE id = 1");
    char op = '?';
    assert_int_equal(drain(cap, &op), 1);
    assert_int_equal(op, 'd');
    sqlq_capture_close(cap);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions_no_counter_write),
        cmocka_unit_test(test_versions_trim_keeps_newest),
        cmocka_unit_test(test_versions_upgrade_counter_log),
        cmocka_unit_test(test_versions_drop_and_setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
