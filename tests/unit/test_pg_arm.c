/* sql/pg_arm: the listener's wake-up lock as a state machine: when an arm is a hint (the
 * version sequence above what the last poll covered and above the previous arm's), when the
 * unlock goes out (a hint, now or once a pending arm is granted), failures and lock timeouts. */
#include "pg_arm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static sqlq_pg_arm fresh(void)
{
    sqlq_pg_arm a = {0};
    sqlq_pg_arm_init(&a);
    return a;
}

/* Send an arm at t and answer it with l against covered; the hint, and *release. */
static bool arm(sqlq_pg_arm *a, uint64_t t, int64_t l, int64_t covered, bool *release)
{
    assert_true(sqlq_pg_arm_due(a, t));
    sqlq_pg_arm_sent(a, t);
    assert_int_equal(a->state, SQLQ_PG_ARM_PENDING);
    assert_false(sqlq_pg_arm_due(a, t));
    return sqlq_pg_arm_granted(a, l, covered, release);
}

static void test_pg_arm_quiet_table_stays_armed(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    bool release = true;
    /* the last poll covered every version up to 40, and 40 is the last one handed out */
    assert_false(arm(&a, 100, 40, 40, &release));
    assert_false(release);
    assert_int_equal(a.state, SQLQ_PG_ARM_ON);
    assert_false(sqlq_pg_arm_due(&a, 200)); /* armed: nothing more to send while idle */
    /* versions below what the poll covered (it read past them) are no hint either */
    sqlq_pg_arm b = fresh();
    assert_false(arm(&b, 100, 30, 40, &release));
}

static void test_pg_arm_commit_since_poll_is_hint(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    bool release = false;
    /* 41 was taken after the poll (covered 40) by a writer that held the lock shared: the
     * grant waited for it, it did not notify */
    assert_true(arm(&a, 100, 41, 40, &release));
    assert_true(release);
    assert_int_equal(a.state, SQLQ_PG_ARM_RELEASING);
    assert_false(sqlq_pg_arm_due(&a, 101)); /* the unlock is in flight */
    sqlq_pg_arm_released(&a);
    assert_int_equal(a.state, SQLQ_PG_ARM_OFF);
    assert_true(sqlq_pg_arm_due(&a, 102));
    /* nothing known to the last poll: any version is a hint */
    sqlq_pg_arm b = fresh();
    assert_true(arm(&b, 100, 1, INT64_MIN, &release));
}

/* A poll held back below the sequence by an open writer covers less than L: after one hint
 * for what the arm found, the next arm counts from that L, not from the poll (else every arm
 * would be a hint until the writer ends: a poll storm). */
static void test_pg_arm_held_back_poll_no_storm(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    bool release = false;
    assert_true(arm(&a, 100, 50, 40, &release)); /* horizon 40 held by a writer, s = 50 */
    sqlq_pg_arm_released(&a);
    /* the poll that followed is held back at 40 again; nothing taken since the arm read 50 */
    assert_false(arm(&a, 110, 50, 40, &release));
    assert_false(release);
    assert_int_equal(a.state, SQLQ_PG_ARM_ON);
    /* later: a notification, the poll still held back, and a version taken while not armed */
    assert_true(sqlq_pg_arm_hint(&a));
    sqlq_pg_arm_released(&a);
    assert_true(arm(&a, 120, 51, 40, &release));
    assert_true(release);
}

static void test_pg_arm_hint_releases(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    bool release = true;
    assert_false(sqlq_pg_arm_hint(&a)); /* not armed: nothing to let go */
    assert_false(arm(&a, 100, 10, 10, &release));
    assert_true(sqlq_pg_arm_hint(&a)); /* armed: a notification lets the lock go at once */
    assert_int_equal(a.state, SQLQ_PG_ARM_RELEASING);
    assert_false(sqlq_pg_arm_hint(&a)); /* already going */
    sqlq_pg_arm_released(&a);
    assert_true(sqlq_pg_arm_due(&a, 101));
}

static void test_pg_arm_hint_while_pending_releases_on_grant(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    sqlq_pg_arm_sent(&a, 100);
    assert_false(sqlq_pg_arm_hint(&a)); /* nothing to send yet: the lock is not granted */
    assert_int_equal(a.state, SQLQ_PG_ARM_PENDING);
    bool release = false;
    assert_false(sqlq_pg_arm_granted(&a, 10, 10, &release)); /* no hint of its own */
    assert_true(release);                                    /* but the lock goes at once */
    assert_int_equal(a.state, SQLQ_PG_ARM_RELEASING);
    assert_int_equal(a.last_l, 10);
}

static void test_pg_arm_lock_timeout_asks_again(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    sqlq_pg_arm_sent(&a, 100);
    assert_int_equal(sqlq_pg_arm_waited_ms(&a, 30100), 30000);
    uint64_t retry = 99;
    assert_false(sqlq_pg_arm_failed(&a, true, 30100, &retry)); /* not held: no unlock */
    assert_int_equal(retry, 0);
    assert_int_equal(a.state, SQLQ_PG_ARM_OFF);
    assert_true(sqlq_pg_arm_due(&a, 30100)); /* at once */
    sqlq_pg_arm_sent(&a, 30100);
    /* the wait is counted from the first send, through the timeout */
    assert_int_equal(sqlq_pg_arm_waited_ms(&a, 40100), 40000);
    bool release = true;
    assert_false(sqlq_pg_arm_granted(&a, 5, 5, &release));
    assert_int_equal(sqlq_pg_arm_waited_ms(&a, 40200), 0);
}

static void test_pg_arm_failure_backs_off(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    uint64_t retry = 0;
    sqlq_pg_arm_sent(&a, 1000);
    assert_true(sqlq_pg_arm_failed(&a, false, 1000, &retry)); /* the lock may be held: unlock */
    assert_int_equal(retry, SQLQ_PG_ARM_RETRY_FIRST_MS);
    assert_int_equal(a.state, SQLQ_PG_ARM_RELEASING);
    sqlq_pg_arm_released(&a);
    assert_false(sqlq_pg_arm_due(&a, 1999));
    assert_true(sqlq_pg_arm_due(&a, 2000));
    uint64_t t = 2000, last = 0;
    for (int i = 0; i < 10; i++) {
        sqlq_pg_arm_sent(&a, t);
        (void)sqlq_pg_arm_failed(&a, false, t, &retry);
        sqlq_pg_arm_released(&a);
        assert_true(retry >= last);
        last = retry;
        t += retry;
    }
    assert_int_equal(retry, SQLQ_PG_ARM_RETRY_MAX_MS);
    /* a new connection keeps backing off (the cause is likely still there)... */
    sqlq_pg_arm_init(&a);
    assert_false(sqlq_pg_arm_due(&a, t - 1));
    /* ...and an arm that works resets it */
    bool release = false;
    sqlq_pg_arm_sent(&a, t);
    (void)sqlq_pg_arm_granted(&a, 1, 1, &release);
    assert_true(sqlq_pg_arm_hint(&a));
    sqlq_pg_arm_released(&a);
    sqlq_pg_arm_sent(&a, t);
    (void)sqlq_pg_arm_failed(&a, false, t, &retry);
    assert_int_equal(retry, SQLQ_PG_ARM_RETRY_FIRST_MS);
}

static void test_pg_arm_new_connection_forgets(void **state)
{
    (void)state;
    sqlq_pg_arm a = fresh();
    bool release = false;
    assert_false(arm(&a, 100, 50, 50, &release));
    sqlq_pg_arm_init(&a); /* the connection was lost: the server let the lock go */
    assert_int_equal(a.state, SQLQ_PG_ARM_OFF);
    assert_int_equal(a.last_l, INT64_MIN);
    /* the previous L no longer counts: only what the poll covered */
    assert_true(arm(&a, 200, 50, 40, &release));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_arm_quiet_table_stays_armed),
        cmocka_unit_test(test_pg_arm_commit_since_poll_is_hint),
        cmocka_unit_test(test_pg_arm_held_back_poll_no_storm),
        cmocka_unit_test(test_pg_arm_hint_releases),
        cmocka_unit_test(test_pg_arm_hint_while_pending_releases_on_grant),
        cmocka_unit_test(test_pg_arm_lock_timeout_asks_again),
        cmocka_unit_test(test_pg_arm_failure_backs_off),
        cmocka_unit_test(test_pg_arm_new_connection_forgets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
