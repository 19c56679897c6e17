/* kill -9 of `sqlq bridge` at random moments while writers keep writing a few thousand changes,
 * then restarts: every change arrives at least once (the newest message of every id written
 * matches the table), and duplicates stay within the work that was in flight at each kill.
 * On the database $SQLQ_TEST_DATABASE names. */
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
#include <unistd.h>

#define BATCH 50
#define LEASE_S "2"

static void crash_scenario(const char *conn, const char *kind)
{
    bt_queue q;
    bt_queue_open(&q, NULL);
    char queue[64], log[512], poison[80];
    sqlq_test_unique_name(kind, queue, sizeof(queue));
    snprintf(poison, sizeof(poison), "%s-poison", queue);
    bt_log_path(kind, log, sizeof(log));
    sqlq_db *db = bt_db(conn);
    bt_exec(db, "CREATE TABLE kv (id integer PRIMARY KEY, v integer)");
    sqlq_db_close(db);
    bt_setup(conn, "kv");

    bt_writers *w = bt_writers_start(conn, "kv", 2, 400, 1000, 2);
    const char *args[] = {"--db", conn, "--table", "kv", "--queue", queue, "--polling-interval-ms", "20",
                          "--lease-s", LEASE_S, "--max-batch-size", "50", NULL};
    unsigned seed = (unsigned)getpid();
    int kills = 0;
    while (!bt_writers_done(w)) {
        pid_t pid = bt_bridge_start(q.conn, log, args);
        bt_sleep_ms(200 + (int)(rand_r(&seed) % 800));
        kill(pid, SIGKILL);
        assert_int_equal(bt_wait(pid, 10000), 128 + SIGKILL);
        kills++;
    }
    long writes = bt_writers_join(w);
    bt_sleep_ms(2500); /* the killed instances' leases expire */
    const char *once[] = {"--db", conn, "--table", "kv", "--queue", queue, "--polling-interval-ms", "20",
                          "--lease-s", LEASE_S, "--max-batch-size", "50", "--once", NULL};
    assert_int_equal(bt_bridge_run(q.conn, log, once, 120000, 0), 0);

    json_t *msgs = bt_drain(&q, queue, 1000, 60000);
    json_t *changes = bt_flatten(msgs);
    json_t *poisoned = bt_drain(&q, poison, 300, 10000);
    size_t i;
    json_t *p;
    json_array_foreach(poisoned, i, p) json_array_append(changes, json_object_get(p, "message"));
    size_t total = json_array_size(changes), distinct = bt_distinct_ids(changes);
    fprintf(stderr, "%s: %ld writes, %d kills, %zu messages, %zu distinct ids, %zu duplicates, %zu poisoned\n",
            kind, writes, kills, total, distinct, total - distinct, json_array_size(poisoned));
    assert_true(kills >= 3);
    assert_true(writes >= 1500);
    bt_verify_final_state(conn, "kv", w, changes);
    /* Each kill can leave at most one batch published but not released. Not so for the logical
     * source: it tells the server its position at most once a second (docs/logical-source.md),
     * and a kill repeats what the instance released since then. */
    if (strcmp(sqlq_test_source(), "logical") != 0)
        assert_true(total - distinct <= (size_t)kills * BATCH);

    json_decref(poisoned);
    json_decref(changes);
    json_decref(msgs);
    bt_writers_free(w);
    bt_drop_slots(conn);
    bt_queue_drop(&q, queue);
    bt_queue_close(&q);
}

static void test_bridge_crash(void **state)
{
    (void)state;
    const char *db = sqlq_test_database();
    char *conn = sqlq_test_create_db(db, "crash");
    char kind[32];
    snprintf(kind, sizeof(kind), "crash-%s", db);
    crash_scenario(conn, kind);
    free(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bridge_crash),
    };
    return cmocka_run_group_tests_name(sqlq_test_database(), tests, NULL, NULL);
}
