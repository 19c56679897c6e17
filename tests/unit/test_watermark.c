/* watermark: the bound of integer cursors with a safety lag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "watermark.h"

static void test_watermark_nothing_until_lag_passed(void **state)
{
    (void)state;
    sqlq_watermark w;
    sqlq_watermark_init(&w, 1000);
    int64_t b = 0;
    sqlq_watermark_observe(&w, 5000, 10);
    assert_false(sqlq_watermark_bound(&w, 5000, &b));
    assert_false(sqlq_watermark_bound(&w, 5999, &b));
    assert_true(sqlq_watermark_bound(&w, 6000, &b));
    assert_int_equal(b, 10);
}

static void test_watermark_uses_newest_old_enough_sample(void **state)
{
    (void)state;
    sqlq_watermark w;
    sqlq_watermark_init(&w, 1000);
    int64_t b = 0;
    sqlq_watermark_observe(&w, 0, 10);
    sqlq_watermark_observe(&w, 400, 20);
    sqlq_watermark_observe(&w, 800, 30);
    sqlq_watermark_observe(&w, 1200, 40);
    assert_true(sqlq_watermark_bound(&w, 1500, &b));
    assert_int_equal(b, 20); /* seen at 400, the newest at least 1000 ms old */
    assert_true(sqlq_watermark_bound(&w, 2300, &b));
    assert_int_equal(b, 40);
    assert_int_equal(w.count, 1); /* older samples forgotten */
}

static void test_watermark_never_goes_down(void **state)
{
    (void)state;
    sqlq_watermark w;
    sqlq_watermark_init(&w, 0);
    int64_t b = 0;
    sqlq_watermark_observe(&w, 0, 50);
    sqlq_watermark_observe(&w, 10, 20); /* rows deleted: the max fell */
    assert_true(sqlq_watermark_bound(&w, 10, &b));
    assert_int_equal(b, 50);
}

static void test_watermark_keeps_bounded_history(void **state)
{
    (void)state;
    sqlq_watermark w;
    sqlq_watermark_init(&w, 1000000);
    for (int i = 0; i < 1000; i++)
        sqlq_watermark_observe(&w, (uint64_t)i, i);
    assert_int_equal(w.count, SQLQ_WATERMARK_SAMPLES);
    int64_t b = 0;
    assert_true(sqlq_watermark_bound(&w, 2000000, &b));
    assert_int_equal(b, 999);
}

/* --once waits this long for the first bound: the first sample's age up to the lag. */
static void test_watermark_wait_until_first_sample_is_lag_old(void **state)
{
    (void)state;
    sqlq_watermark w;
    sqlq_watermark_init(&w, 10000);
    assert_int_equal(sqlq_watermark_wait_ms(&w, 5), 0); /* nothing seen: nothing held back */
    sqlq_watermark_observe(&w, 1000, 7);
    sqlq_watermark_observe(&w, 3000, 9);
    assert_int_equal(sqlq_watermark_wait_ms(&w, 4000), 7000);
    int64_t b = 0;
    assert_false(sqlq_watermark_bound(&w, 10999, &b));
    assert_true(sqlq_watermark_bound(&w, 11000, &b));
    assert_int_equal(b, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watermark_nothing_until_lag_passed),
        cmocka_unit_test(test_watermark_uses_newest_old_enough_sample),
        cmocka_unit_test(test_watermark_never_goes_down),
        cmocka_unit_test(test_watermark_keeps_bounded_history),
        cmocka_unit_test(test_watermark_wait_until_first_sample_is_lag_old),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
