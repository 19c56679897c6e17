/* The visibility renewal schedule: half the lease, sooner after transient failures, never again
 * after ownership is lost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "renewal.h"

static void test_renewal_at_half_the_lease(void **state)
{
    (void)state;
    sqlq_renewal r;
    sqlq_renewal_start(&r, 600000, 1000); /* 10 min lease, received at t=1 s */
    assert_int_equal(r.next_ms, 1000 + 300000);
    assert_int_equal(r.held_until_ms, 1000 + 600000);
    assert_false(sqlq_renewal_due(&r, 300999));
    assert_true(sqlq_renewal_due(&r, 301000));
    assert_int_equal(sqlq_renewal_record(&r, 301050, SQLQ_OK), SQLQ_RENEWAL_RENEWED);
    assert_int_equal(r.next_ms, 301050 + 300000);
    assert_int_equal(r.held_until_ms, 301050 + 600000);
}

static void test_renewal_short_lease(void **state)
{
    (void)state;
    sqlq_renewal r;
    sqlq_renewal_start(&r, 2000, 0);
    uint64_t t = 0;
    for (int i = 0; i < 5; i++) {
        t = r.next_ms;
        assert_true(sqlq_renewal_due(&r, t));
        assert_int_equal(sqlq_renewal_record(&r, t, SQLQ_OK), SQLQ_RENEWAL_RENEWED);
        assert_int_equal(r.next_ms, t + 1000);
    }
    assert_int_equal(t, 5000); /* renewed every second: 1, 2, 3, 4, 5 s */
}

static void test_renewal_transient_failure_retries_sooner(void **state)
{
    (void)state;
    sqlq_renewal r;
    sqlq_renewal_start(&r, 600000, 0);
    /* at 300 s: 300 s still held; retry after a quarter of that, capped at a quarter lease */
    assert_int_equal(sqlq_renewal_record(&r, 300000, SQLQ_E_HTTP), SQLQ_RENEWAL_RETRY);
    assert_int_equal(r.next_ms, 300000 + 75000);
    assert_int_equal(r.failures, 1);
    assert_int_equal(sqlq_renewal_record(&r, 375000, SQLQ_E_NETWORK), SQLQ_RENEWAL_RETRY);
    assert_int_equal(r.next_ms, 375000 + 56250);
    /* each retry lands before the lease ends */
    uint64_t t = r.next_ms;
    for (int i = 0; i < 20; i++) {
        assert_true(t < r.held_until_ms || r.next_ms - t == SQLQ_RENEWAL_MIN_RETRY_MS);
        sqlq_renewal_record(&r, t, SQLQ_E_HTTP);
        t = r.next_ms;
    }
    /* success resets the schedule */
    assert_int_equal(sqlq_renewal_record(&r, t, SQLQ_OK), SQLQ_RENEWAL_RENEWED);
    assert_int_equal(r.failures, 0);
    assert_int_equal(r.next_ms, t + 300000);
}

static void test_renewal_retry_has_a_floor(void **state)
{
    (void)state;
    sqlq_renewal r;
    sqlq_renewal_start(&r, 2000, 0);
    assert_int_equal(sqlq_renewal_record(&r, 1990, SQLQ_E_HTTP), SQLQ_RENEWAL_RETRY);
    assert_int_equal(r.next_ms, 1990 + SQLQ_RENEWAL_MIN_RETRY_MS);
    assert_int_equal(sqlq_renewal_record(&r, 5000, SQLQ_E_HTTP), SQLQ_RENEWAL_RETRY);
    assert_int_equal(r.next_ms, 5000 + SQLQ_RENEWAL_MIN_RETRY_MS);
}

static void test_renewal_ownership_lost_stops(void **state)
{
    (void)state;
    const sqlq_result lost[] = {SQLQ_E_POP_RECEIPT, SQLQ_E_NOT_FOUND, SQLQ_E_CONFLICT};
    for (size_t i = 0; i < 3; i++) {
        sqlq_renewal r;
        sqlq_renewal_start(&r, 2000, 0);
        assert_true(sqlq_renewal_ownership_lost(lost[i]));
        assert_int_equal(sqlq_renewal_record(&r, 1000, lost[i]), SQLQ_RENEWAL_LOST);
        assert_true(r.lost);
        assert_false(sqlq_renewal_due(&r, 1000000));
    }
    assert_false(sqlq_renewal_ownership_lost(SQLQ_E_HTTP));
    assert_false(sqlq_renewal_ownership_lost(SQLQ_E_NETWORK));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renewal_at_half_the_lease),
        cmocka_unit_test(test_renewal_short_lease),
        cmocka_unit_test(test_renewal_transient_failure_retries_sooner),
        cmocka_unit_test(test_renewal_retry_has_a_floor),
        cmocka_unit_test(test_renewal_ownership_lost_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
