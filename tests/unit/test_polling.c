#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_clock.h"
#include "polling.h"

static void test_polling_webjobs_sequence_mid_jitter(void **state)
{
    (void)state;
    fake_clock f = {0}; /* random 0.5 -> factor 1.0 */
    sqlq_clock c = fake_clock_make(&f);
    sqlq_polling p;
    sqlq_polling_init(&p, 100, 60000, &c);
    assert_int_equal(p.current_ms, 100);
    const uint64_t want[] = {200, 300, 500, 900, 1700, 3300, 6500, 12900, 25700, 51300, 60000, 60000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(sqlq_polling_empty(&p), want[i]);
    assert_int_equal(sqlq_polling_reset(&p), 100);
    assert_int_equal(sqlq_polling_empty(&p), 200);
}

static void test_polling_jitter_range(void **state)
{
    (void)state;
    const double lo[] = {0.0};
    fake_clock f = {.randoms = lo, .nrandoms = 1};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_polling p;
    sqlq_polling_init(&p, 100, 60000, &c);
    assert_int_equal(sqlq_polling_empty(&p), 180); /* 100 + 0.8 * 100 */
    assert_int_equal(sqlq_polling_empty(&p), 260); /* 100 + 0.8 * 200 */
    const double hi[] = {0.9999999};
    f.randoms = hi;
    assert_int_equal(sqlq_polling_empty(&p), 579); /* 100 + ~1.2 * 400 */
}

static void test_polling_small_max_caps(void **state)
{
    (void)state;
    fake_clock f = {0};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_polling p;
    sqlq_polling_init(&p, 100, 2000, &c); /* Functions' development maximum */
    uint64_t last = 0;
    for (int i = 0; i < 20; i++)
        last = sqlq_polling_empty(&p);
    assert_int_equal(last, 2000);
}

static void test_polling_low_jitter_reaches_the_maximum(void **state)
{
    (void)state;
    const double lo[] = {0.0}; /* factor 0.8 every time */
    fake_clock f = {.randoms = lo, .nrandoms = 1};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_polling p;
    sqlq_polling_init(&p, 100, 1500, &c);
    const uint64_t want[] = {180, 260, 420, 740, 1380, 1500, 1500}; /* 100 + 0.8 * 3200 > 1500 */
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(sqlq_polling_empty(&p), want[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_polling_webjobs_sequence_mid_jitter),
        cmocka_unit_test(test_polling_jitter_range),
        cmocka_unit_test(test_polling_small_max_caps),
        cmocka_unit_test(test_polling_low_jitter_reaches_the_maximum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
