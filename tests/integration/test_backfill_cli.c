/* `sqlq backfill` end to end with Azurite, on the database $SQLQ_TEST_DATABASE names (sqlite,
 * postgres, mariadb):
 *  - 100k rows, kill -9 halfway, the same command again: every row arrives at least once, in
 *    key order inside every message, at most one page twice, one run id throughout;
 *  - row messages, --where: exactly the filtered rows, each message the row shape with op
 *    "read"; a second run says it already finished.
 * The tables and their rows per database are in `databases` below. */
#include "bridge_support.h"
#include "db.h"
#include "log.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* A database the backfill runs on: its tables and their rows. */
typedef struct database {
    const char *name;
    const char *big;    /* big (id, name NOT NULL, v NOT NULL): ids 1..100000, v = id % 97 */
    const char *big_rows;
    const char *orders; /* orders (id, name NOT NULL, created NOT NULL with a default): 1..1500 */
    const char *orders_rows;
} database;

static const database databases[] = {
    {"sqlite", "CREATE TABLE big (id INTEGER PRIMARY KEY, name TEXT NOT NULL, v INTEGER NOT NULL)",
     "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 100000) "
     "INSERT INTO big SELECT i, 'name-' || i, i % 97 FROM s",
     "CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
     "created TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)",
     "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1500) "
     "INSERT INTO orders (id, name) SELECT i, 'o' || i FROM s"},
    {"postgres", "CREATE TABLE big (id integer PRIMARY KEY, name text NOT NULL, v integer NOT NULL)",
     "INSERT INTO big SELECT i, 'name-' || i, i % 97 FROM generate_series(1, 100000) i",
     "CREATE TABLE orders (id integer PRIMARY KEY, name text NOT NULL, "
     "created timestamptz NOT NULL DEFAULT now())",
     "INSERT INTO orders (id, name) SELECT i, 'o' || i FROM generate_series(1, 1500) i"},
    {"mariadb", "CREATE TABLE big (id int PRIMARY KEY, name text NOT NULL, v int NOT NULL)",
     "INSERT INTO big SELECT seq, CONCAT('name-', seq), seq % 97 FROM seq_1_to_100000",
     "CREATE TABLE orders (id int PRIMARY KEY, name text NOT NULL, "
     "created datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))",
     "INSERT INTO orders (id, name) SELECT seq, CONCAT('o', seq) FROM seq_1_to_1500"},
};

static const database *db_under_test;
static pid_t running;

static pid_t start_backfill(const char *const *args, const char *log_path)
{
    char *qconn = sqlq_test_azurite_conn();
    const char *argv[32];
    size_t n = 0;
    argv[n++] = sqlq_test_bin();
    argv[n++] = "backfill";
    for (size_t i = 0; args[i] && n < 30; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("SQLQ_QUEUE_CONNECTION", qconn, 1);
        FILE *f = freopen(log_path, "a", stderr);
        (void)f;
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    free(qconn);
    running = pid;
    return pid;
}

static int run_backfill(const char *const *args, const char *log_path, int timeout_ms)
{
    pid_t pid = start_backfill(args, log_path);
    int rc = bt_wait(pid, timeout_ms);
    running = 0;
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    if (running > 0) {
        kill(running, SIGKILL);
        waitpid(running, NULL, 0);
        running = 0;
    }
    return 0;
}

static int64_t rows_done(sqlq_db *db, const char *sql)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t v = 0;
    if (sqlq_db_query_int(db, sql, NULL, 0, &v, &err) != SQLQ_OK)
        return 0; /* not created yet */
    return v;
}

static void test_backfill_cli_kill9_resume_100k(void **state)
{
    (void)state;
    const int n = 100000;
    char log_path[1024], queue[64];
    char *conn = sqlq_test_create_db(db_under_test->name, "bf_cli");
    sqlq_db *db = bt_db(conn);
    bt_exec(db, db_under_test->big);
    bt_exec(db, db_under_test->big_rows);
    bt_queue q;
    bt_queue_open(&q, NULL);
    sqlq_test_unique_name("backfill-100k", queue, sizeof(queue));
    bt_log_path("backfill_cli", log_path, sizeof(log_path));
    const char *args[] = {"--db", conn, "--table", "big", "--queue", queue, "--format", "batch",
                          "--batch-size", "500", "--lease-s", "3", "--log-level", "warn", NULL};
    char progress_sql[256];
    const sqlq_test_sql *d = sqlq_test_sql_under_test();
    snprintf(progress_sql, sizeof(progress_sql),
             "SELECT rows_done FROM %scursor_state WHERE bridge_name = 'backfill:default'%s",
             d->sqlq, d->this_database);
    uint64_t t0 = (uint64_t)sqlq_clock_wall_ms();
    pid_t pid = start_backfill(args, log_path);
    while (rows_done(db, progress_sql) < 30000 && waitpid(pid, NULL, WNOHANG) == 0 &&
           (uint64_t)sqlq_clock_wall_ms() - t0 < 60000)
        usleep(5 * 1000);
    assert_int_equal(kill(pid, SIGKILL), 0); /* fails if it already exited */
    waitpid(pid, NULL, 0);
    running = 0;
    int64_t at_kill = rows_done(db, progress_sql);
    fprintf(stderr, "killed with %lld of %d rows committed\n", (long long)at_kill, n);
    assert_true(at_kill >= 30000 && at_kill < n);

    /* Resumed at once: it waits for the killed run's lease (3 s) to expire. */
    int rc = run_backfill(args, log_path, 60000);
    if (rc != 0)
        bt_print_log(log_path);
    assert_int_equal(rc, 0);
    assert_int_equal(rows_done(db, progress_sql), n);

    json_t *messages = bt_drain(&q, queue, 1500, 60000);
    char *seen = calloc((size_t)n + 1, 1);
    size_t rows = 0, dup = 0, i, j;
    json_t *m, *c;
    json_int_t version = -1;
    json_array_foreach(messages, i, m)
    {
        json_int_t prev = 0;
        json_array_foreach(json_object_get(m, "changes"), j, c)
        {
            json_int_t id = json_integer_value(json_object_get(json_object_get(c, "key"), "id"));
            assert_true(id >= 1 && id <= n);
            if (id <= prev)
                fail_msg("message %zu: key %lld after %lld", i, (long long)id, (long long)prev);
            prev = id;
            assert_string_equal(json_string_value(json_object_get(c, "op")), "read");
            json_int_t v = json_integer_value(json_object_get(c, "version"));
            assert_true(version == -1 || v == version); /* resumed run keeps the run id */
            version = v;
            dup += seen[id];
            seen[id] = 1;
            rows++;
        }
    }
    for (int id = 1; id <= n; id++)
        if (!seen[id])
            fail_msg("row %d never arrived (%zu rows in %zu messages)", id, rows,
                     json_array_size(messages));
    fprintf(stderr, "%zu messages, %zu rows, %zu twice, %llu ms in all\n",
            json_array_size(messages), rows, dup,
            (unsigned long long)((uint64_t)sqlq_clock_wall_ms() - t0));
    assert_true(dup <= 500); /* at most the page in flight at the kill */
    free(seen);
    json_decref(messages);
    bt_queue_drop(&q, queue);
    bt_queue_close(&q);
    sqlq_db_close(db);
    free(conn);
}

static void test_backfill_cli_rows_where(void **state)
{
    (void)state;
    char log_path[1024], queue[64];
    char *conn = sqlq_test_create_db(db_under_test->name, "bf_cli");
    sqlq_db *db = bt_db(conn);
    bt_exec(db, db_under_test->orders);
    bt_exec(db, db_under_test->orders_rows);
    bt_queue q;
    bt_queue_open(&q, NULL);
    sqlq_test_unique_name("backfill-rows", queue, sizeof(queue));
    bt_log_path("backfill_cli_rows", log_path, sizeof(log_path));
    const char *args[] = {"--db", conn, "--table", "orders", "--queue", queue, "--where",
                          "id % 3 = 0 -- every third", "--batch-size", "100", NULL};
    int rc = run_backfill(args, log_path, 60000);
    if (rc != 0)
        bt_print_log(log_path);
    assert_int_equal(rc, 0);
    json_t *messages = bt_drain(&q, queue, 1500, 60000);
    assert_int_equal(json_array_size(messages), 500);
    char seen[1501] = {0};
    size_t i;
    json_t *m;
    static const char *const fields[] = {"id", "op", "table", "key", "row", "version", "bridge", "ts"};
    json_array_foreach(messages, i, m)
    {
        for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
            assert_non_null(json_object_get(m, fields[f]));
        assert_int_equal(json_object_size(m), 8);
        assert_string_equal(json_string_value(json_object_get(m, "op")), "read");
        assert_string_equal(json_string_value(json_object_get(m, "table")), "orders");
        assert_string_equal(json_string_value(json_object_get(m, "bridge")), "default");
        json_int_t id = json_integer_value(json_object_get(json_object_get(m, "key"), "id"));
        assert_true(id > 0 && id <= 1500 && id % 3 == 0);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "row"), "id")), id);
        assert_false(seen[id]); /* no crash here: each exactly once */
        seen[id] = 1;
    }
    json_decref(messages);
    /* Finished: a second run publishes nothing and says so. */
    assert_int_equal(run_backfill(args, log_path, 30000), 0);
    json_t *again = bt_drain(&q, queue, 800, 10000);
    assert_int_equal(json_array_size(again), 0);
    json_decref(again);
    bt_queue_drop(&q, queue);
    bt_queue_close(&q);
    sqlq_db_close(db);
    free(conn);
}

int main(void)
{
    sqlq_log_set_level(SQLQ_LOG_WARN);
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_backfill_cli_kill9_resume_100k, teardown),
        cmocka_unit_test_teardown(test_backfill_cli_rows_where, teardown),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
