/* The queue service goes away for a while (a private Azurite with on-disk persistence, stopped
 * and started again on the same port): the bridge keeps running, waits, catches up, loses
 * nothing, counts no attempts (nothing goes to poison), and still stops cleanly. Two instances
 * run with a lease (2 s) much shorter than the outage (8 s): the renewal thread keeps the
 * waiting changes leased, so the other instance never publishes them too (no duplicate id). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_support.h"
#include "testenv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char dir[512];

static int stop_azurite(void **state)
{
    (void)state;
    sqlq_test_sh("bash '%s/tests/support/azurite.sh' stop '%s' >/dev/null 2>&1", sqlq_test_source_dir(), dir);
    return 0;
}

static char *start_azurite(const char *port)
{
    if (sqlq_test_sh("bash '%s/tests/support/azurite.sh' start '%s' %s --disk >&2", sqlq_test_source_dir(), dir,
                     port ? port : "") != 0)
        fail_msg("private Azurite did not start");
    char path[600];
    snprintf(path, sizeof(path), "%s/conn", dir);
    FILE *f = fopen(path, "r");
    char *conn = calloc(1, 1024);
    assert_non_null(f);
    assert_non_null(fgets(conn, 1023, f));
    fclose(f);
    conn[strcspn(conn, "\r\n")] = '\0';
    return conn;
}

static void insert_range(sqlq_db *db, int from, int to)
{
    for (int i = from; i < to; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "INSERT INTO o VALUES (%d, 'row %d')", i, i);
        bt_exec(db, sql);
    }
}

static size_t count_keys(json_t *msgs)
{
    json_t *by = bt_by_key(msgs);
    size_t n = json_object_size(by);
    json_decref(by);
    return n;
}

static void test_bridge_outage_waits_and_catches_up(void **state)
{
    (void)state;
    const char *env = getenv("SQLQ_TEST_ENV_DIR");
    char name[64];
    sqlq_test_unique_name("outage", name, sizeof(name));
    snprintf(dir, sizeof(dir), "%s/%s", env && *env ? env : "testenv", name);
    char *conn_q = start_azurite(NULL);
    char port[32] = "";
    char path[600];
    snprintf(path, sizeof(path), "%s/port", dir);
    FILE *pf = fopen(path, "r");
    assert_non_null(pf);
    assert_non_null(fgets(port, sizeof(port), pf));
    fclose(pf);
    port[strcspn(port, "\r\n")] = '\0';

    char dbpath[512], log[512], queue[64];
    char *conn = sqlq_test_sqlite_db("outage", dbpath, sizeof(dbpath));
    sqlq_test_unique_name("outage", queue, sizeof(queue));
    bt_log_path("outage", log, sizeof(log));
    sqlq_db *db = bt_db(conn);
    bt_exec(db, "CREATE TABLE o (id INTEGER PRIMARY KEY, v TEXT)");
    bt_setup(conn, "o");
    const char *args[] = {"--db", conn, "--table", "o", "--queue", queue, "--polling-interval-ms", "50",
                          "--lease-s", "2", NULL};
    char log_b[512];
    bt_log_path("outage-b", log_b, sizeof(log_b));
    pid_t pid = bt_bridge_start(conn_q, log, args);
    pid_t pid_b = bt_bridge_start(conn_q, log_b, args);
    bt_queue q;
    bt_queue_open(&q, conn_q);
    insert_range(db, 0, 50);
    json_t *msgs = json_array();
    for (int i = 0; i < 50 && count_keys(msgs) < 50; i++) {
        json_t *more = bt_drain(&q, queue, 200, 2000);
        json_array_extend(msgs, more);
        json_decref(more);
    }
    assert_int_equal(count_keys(msgs), 50);

    stop_azurite(NULL); /* the queue service is gone */
    insert_range(db, 50, 250);
    bt_sleep_ms(8000); /* longer than the client's own retries: the bridge waits and retries */
    int st = 0;
    assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still running */
    assert_int_equal(waitpid(pid_b, &st, WNOHANG), 0);
    free(start_azurite(port));                        /* back, same port, same data */

    for (int i = 0; i < 100 && count_keys(msgs) < 250; i++) {
        json_t *more = bt_drain(&q, queue, 300, 3000);
        json_array_extend(msgs, more);
        json_decref(more);
    }
    size_t keys = count_keys(msgs);
    if (keys != 250)
        bt_print_log(log);
    assert_int_equal(keys, 250);
    assert_int_equal(sqlq_test_sh("grep -q 'event=queue_outage' '%s' '%s'", log, log_b), 0); /* it did wait */
    size_t total = json_array_size(msgs), distinct = bt_distinct_ids(msgs);
    fprintf(stderr, "outage: %zu messages, %zu distinct ids\n", total, distinct);
    assert_int_equal(total, distinct); /* leases held through the outage: nothing published twice */
    char poison[80];
    snprintf(poison, sizeof(poison), "%s-poison", queue);
    bool exists = true;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_exists(q.client, poison, &exists, &err), SQLQ_OK);
    assert_false(exists); /* an outage is not a failed attempt */

    kill(pid, SIGTERM);
    kill(pid_b, SIGTERM);
    int code = bt_wait(pid, 30000), code_b = bt_wait(pid_b, 30000);
    if (code != 0)
        bt_print_log(log);
    if (code_b != 0)
        bt_print_log(log_b);
    assert_int_equal(code, 0);
    assert_int_equal(code_b, 0);
    json_decref(msgs);
    bt_queue_close(&q);
    sqlq_db_close(db);
    free(conn);
    free(conn_q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_bridge_outage_waits_and_catches_up, stop_azurite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
