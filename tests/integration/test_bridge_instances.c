/* Two `sqlq bridge` instances with the same bridge name on one table while writers write:
 * nothing is lost, both share the work, and no change is in flight in both at once: with
 * leases that never expire during the test, no idempotency id arrives twice. On the database
 * $SQLQ_TEST_DATABASE names. */
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

/* changes=N from the bridge_done line of a log. */
static long long changes_done(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[2048];
    long long n = -1;
    while (f && fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "bridge_done");
        p = p ? strstr(p, "changes=") : NULL;
        if (p)
            n = strtoll(p + 8, NULL, 10);
    }
    if (f)
        fclose(f);
    return n;
}

static void instances_scenario(const char *conn, const char *kind)
{
    bt_queue q;
    bt_queue_open(&q, NULL);
    char queue[64], log_a[512], log_b[512];
    sqlq_test_unique_name(kind, queue, sizeof(queue));
    bt_log_path("inst-a", log_a, sizeof(log_a));
    bt_log_path("inst-b", log_b, sizeof(log_b));
    sqlq_db *db = bt_db(conn);
    bt_exec(db, "CREATE TABLE kv (id integer PRIMARY KEY, v integer)");
    sqlq_db_close(db);
    bt_setup(conn, "kv");

    const char *args[] = {"--db", conn, "--table", "kv", "--queue", queue, "--polling-interval-ms", "20",
                          "--lease-s", "60", "--max-batch-size", "20", NULL};
    pid_t a = bt_bridge_start(q.conn, log_a, args);
    pid_t b = bt_bridge_start(q.conn, log_b, args);
    bt_writers *w = bt_writers_start(conn, "kv", 2, 500, 700, 1);
    long writes = bt_writers_join(w);
    json_t *msgs = bt_drain_until_final(&q, queue, conn, "kv", w, 90000);
    kill(a, SIGTERM);
    kill(b, SIGTERM);
    int ca = bt_wait(a, 30000), cb = bt_wait(b, 30000);
    if (ca != 0)
        bt_print_log(log_a);
    if (cb != 0)
        bt_print_log(log_b);
    assert_int_equal(ca, 0);
    assert_int_equal(cb, 0);
    json_t *late = bt_drain(&q, queue, 300, 5000); /* anything published while stopping */
    json_array_extend(msgs, late);
    json_decref(late);

    size_t total = json_array_size(msgs), distinct = bt_distinct_ids(msgs);
    long long na = changes_done(log_a), nb = changes_done(log_b);
    fprintf(stderr, "%s: %ld writes, %zu messages, %zu distinct ids; instance a %lld changes, b %lld\n", kind,
            writes, total, distinct, na, nb);
    bt_verify_final_state(conn, "kv", w, msgs);
    assert_int_equal(total, distinct); /* no change was published by both */
    assert_true(na > 0 && nb > 0);     /* both took part */

    json_decref(msgs);
    bt_writers_free(w);
    bt_queue_drop(&q, queue);
    bt_queue_close(&q);
}

static void test_bridge_two_instances(void **state)
{
    (void)state;
    const char *db = sqlq_test_database();
    char *conn = sqlq_test_create_db(db, "inst");
    char kind[32];
    snprintf(kind, sizeof(kind), "inst-%s", db);
    instances_scenario(conn, kind);
    free(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bridge_two_instances),
    };
    return cmocka_run_group_tests_name(sqlq_test_database(), tests, NULL, NULL);
}
