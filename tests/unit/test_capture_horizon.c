/* capture_horizon: the safe read horizon of a PostgreSQL change log from the holders of its
 * lock, remembered across observations. */
#include "pg_horizon.h"

// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <stdio.h>
#include <string.h>

static sqlq_horizon_writer w(const char *xid, int pid)
{
    sqlq_horizon_writer x;
    memset(&x, 0, sizeof(x));
    snprintf(x.xid, sizeof(x.xid), "%s", xid);
    x.pid = pid;
    return x;
}

/* Nobody holds the log: everything handed out is final. */
static void test_capture_horizon_no_writers(void **state)
{
    (void)state;
    sqlq_horizon h;
    sqlq_horizon_init(&h);
    assert_int_equal(sqlq_horizon_observe(&h, 42, 10, NULL, 0, 1000), 42);
    assert_null(sqlq_horizon_blocker(&h));
    sqlq_horizon_free(&h);
}

/* Writers present at the first observation may hold any version above the sync version. */
static void test_capture_horizon_first_observation_uses_sync(void **state)
{
    (void)state;
    sqlq_horizon h;
    sqlq_horizon_init(&h);
    sqlq_horizon_writer seen[] = {w("700", 11)};
    assert_int_equal(sqlq_horizon_observe(&h, 42, 10, seen, 1, 1000), 10);
    const sqlq_horizon_writer *b = sqlq_horizon_blocker(&h);
    assert_non_null(b);
    assert_string_equal(b->xid, "700");
    assert_int_equal(b->pid, 11);
    sqlq_horizon_free(&h);
}

/* A writer first seen now took the lock after the previous observation: bound = its s. The
 * bound stays while the writer is seen, even when it changes pid (PREPARE TRANSACTION); a
 * writer gone is forgotten. Entries without an xid hold no version. */
static void test_capture_horizon_bounds_remembered(void **state)
{
    (void)state;
    sqlq_horizon h;
    sqlq_horizon_init(&h);
    assert_int_equal(sqlq_horizon_observe(&h, 20, 5, NULL, 0, 1000), 20);
    sqlq_horizon_writer a[] = {w("700", 11), w("", 12)};
    assert_int_equal(sqlq_horizon_observe(&h, 30, 5, a, 2, 2000), 20);
    assert_int_equal(h.count, 1);
    sqlq_horizon_writer ab[] = {w("701", 13), w("700", 0)};
    assert_int_equal(sqlq_horizon_observe(&h, 50, 5, ab, 2, 3000), 20);
    const sqlq_horizon_writer *b = sqlq_horizon_blocker(&h);
    assert_string_equal(b->xid, "700");
    assert_int_equal(b->pid, 0);
    assert_int_equal(b->first_seen_ms, 2000);
    sqlq_horizon_writer only_b[] = {w("701", 13)};
    assert_int_equal(sqlq_horizon_observe(&h, 60, 5, only_b, 1, 4000), 30);
    assert_int_equal(sqlq_horizon_observe(&h, 60, 5, NULL, 0, 5000), 60);
    /* a writer that appears again is new: its versions are above the last s */
    assert_int_equal(sqlq_horizon_observe(&h, 70, 5, a, 1, 6000), 60);
    sqlq_horizon_free(&h);
}

/* The sync version (moved by another instance) is a floor for a new writer's bound. */
static void test_capture_horizon_sync_floor(void **state)
{
    (void)state;
    sqlq_horizon h;
    sqlq_horizon_init(&h);
    assert_int_equal(sqlq_horizon_observe(&h, 20, 5, NULL, 0, 1000), 20);
    sqlq_horizon_writer a[] = {w("700", 11)};
    assert_int_equal(sqlq_horizon_observe(&h, 40, 35, a, 1, 2000), 35);
    sqlq_horizon_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_horizon_no_writers),
        cmocka_unit_test(test_capture_horizon_first_observation_uses_sync),
        cmocka_unit_test(test_capture_horizon_bounds_remembered),
        cmocka_unit_test(test_capture_horizon_sync_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
