/* The WebJobs rules for what happens to a message: run, delete, release or poison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "disposition.h"

static void test_disposition_success_deletes(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    for (long n = 1; n <= 5; n++)
        assert_int_equal(sqlq_disposition_on_result(&p, n, true), SQLQ_DISPOSE_DELETE);
}

static void test_disposition_failure_releases_until_max(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    assert_int_equal(p.max_dequeue_count, 5);
    for (long n = 1; n < 5; n++)
        assert_int_equal(sqlq_disposition_on_result(&p, n, false), SQLQ_DISPOSE_RELEASE);
    assert_int_equal(sqlq_disposition_on_result(&p, 5, false), SQLQ_DISPOSE_POISON);
    assert_int_equal(sqlq_disposition_on_result(&p, 9, false), SQLQ_DISPOSE_POISON);
    p.max_dequeue_count = 1;
    assert_int_equal(sqlq_disposition_on_result(&p, 1, false), SQLQ_DISPOSE_POISON);
}

static void test_disposition_over_limit_on_receipt_poisons(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    assert_int_equal(sqlq_disposition_on_receive(&p, 1, true), SQLQ_DISPOSE_RUN);
    /* == max still runs (the fifth attempt); only > max is over the limit */
    assert_int_equal(sqlq_disposition_on_receive(&p, 5, true), SQLQ_DISPOSE_RUN);
    assert_int_equal(sqlq_disposition_on_receive(&p, 6, true), SQLQ_DISPOSE_POISON);
}

static void test_disposition_undecodable_poisons_at_once(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    assert_int_equal(sqlq_disposition_on_receive(&p, 1, false), SQLQ_DISPOSE_POISON);
}

static void test_disposition_without_poison_queue_releases(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    p.has_poison_queue = false;
    assert_int_equal(sqlq_disposition_on_receive(&p, 1, false), SQLQ_DISPOSE_RELEASE);
    assert_int_equal(sqlq_disposition_on_receive(&p, 7, true), SQLQ_DISPOSE_RELEASE);
    assert_int_equal(sqlq_disposition_on_result(&p, 5, false), SQLQ_DISPOSE_RELEASE);
    assert_int_equal(sqlq_disposition_on_result(&p, 5, true), SQLQ_DISPOSE_DELETE);
}

static void test_disposition_release_visibility(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    assert_int_equal(sqlq_disposition_release_visibility(&p, 3), 0);
    p.visibility_timeout_s = 10;
    assert_int_equal(sqlq_disposition_release_visibility(&p, 1), 10);
    assert_int_equal(sqlq_disposition_release_visibility(&p, 4), 10);
    p.visibility_backoff = true;
    assert_int_equal(sqlq_disposition_release_visibility(&p, 1), 10);
    assert_int_equal(sqlq_disposition_release_visibility(&p, 2), 20);
    assert_int_equal(sqlq_disposition_release_visibility(&p, 4), 80);
    p.visibility_max_s = 50;
    assert_int_equal(sqlq_disposition_release_visibility(&p, 4), 50);
    assert_int_equal(sqlq_disposition_release_visibility(&p, 1000), 50);
    p.visibility_max_s = 5; /* a cap below the base never shortens it */
    assert_int_equal(sqlq_disposition_release_visibility(&p, 3), 10);
    p.visibility_timeout_s = 0;
    assert_int_equal(sqlq_disposition_release_visibility(&p, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disposition_success_deletes),
        cmocka_unit_test(test_disposition_failure_releases_until_max),
        cmocka_unit_test(test_disposition_over_limit_on_receipt_poisons),
        cmocka_unit_test(test_disposition_undecodable_poisons_at_once),
        cmocka_unit_test(test_disposition_without_poison_queue_releases),
        cmocka_unit_test(test_disposition_release_visibility),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
