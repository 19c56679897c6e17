#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backoff.h"
#include "fake_clock.h"

static void test_backoff_doubles_to_cap_without_jitter(void **state)
{
    (void)state;
    fake_clock f = {0};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_backoff_policy p = {.initial_ms = 100, .max_delay_ms = 1000, .max_total_ms = 0, .max_retries = 0, .jitter = 0};
    sqlq_backoff b;
    sqlq_backoff_init(&b, &p, &c);
    const uint64_t want[] = {100, 200, 400, 800, 1000, 1000};
    for (size_t i = 0; i < 6; i++) {
        uint64_t d;
        assert_true(sqlq_backoff_next(&b, 0, &d));
        assert_int_equal(d, want[i]);
        sqlq_clock_sleep_ms(&c, d);
    }
}

static void test_backoff_jitter_bounds_exact(void **state)
{
    (void)state;
    const double r[] = {0.0, 0.999999, 0.5};
    fake_clock f = {.randoms = r, .nrandoms = 3};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_backoff_policy p = {.initial_ms = 1000, .max_delay_ms = 100000, .jitter = 0.2};
    sqlq_backoff b;
    sqlq_backoff_init(&b, &p, &c);
    uint64_t d;
    assert_true(sqlq_backoff_next(&b, 0, &d));
    assert_int_equal(d, 800); /* 1000 * 0.8 */
    assert_true(sqlq_backoff_next(&b, 0, &d));
    assert_int_equal(d, 2399); /* 2000 * ~1.2 */
    assert_true(sqlq_backoff_next(&b, 0, &d));
    assert_int_equal(d, 4000); /* 4000 * 1.0 */
}

static void test_backoff_total_budget_stops(void **state)
{
    (void)state;
    fake_clock f = {0};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_backoff_policy p = {.initial_ms = 1000, .max_delay_ms = 10000, .max_total_ms = 5000, .jitter = 0};
    sqlq_backoff b;
    sqlq_backoff_init(&b, &p, &c);
    uint64_t d, total = 0;
    int n = 0;
    while (sqlq_backoff_next(&b, 0, &d)) {
        sqlq_clock_sleep_ms(&c, d);
        total += d;
        n++;
    }
    /* 1000 + 2000 + then clipped to the 2000 left. */
    assert_int_equal(n, 3);
    assert_int_equal(total, 5000);
    assert_int_equal(f.slept[2], 2000);
}

static void test_backoff_max_retries(void **state)
{
    (void)state;
    fake_clock f = {0};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_backoff_policy p = {.initial_ms = 10, .max_delay_ms = 10, .max_retries = 2};
    sqlq_backoff b;
    sqlq_backoff_init(&b, &p, &c);
    uint64_t d;
    assert_true(sqlq_backoff_next(&b, 0, &d));
    assert_true(sqlq_backoff_next(&b, 0, &d));
    assert_false(sqlq_backoff_next(&b, 0, &d));
    sqlq_backoff_reset(&b);
    assert_true(sqlq_backoff_next(&b, 0, &d));
}

static void test_backoff_server_hint_is_lower_bound(void **state)
{
    (void)state;
    fake_clock f = {0};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_backoff_policy p = {.initial_ms = 100, .max_delay_ms = 1000, .max_total_ms = 60000, .jitter = 0};
    sqlq_backoff b;
    sqlq_backoff_init(&b, &p, &c);
    uint64_t d;
    assert_true(sqlq_backoff_next(&b, 5000, &d));
    assert_int_equal(d, 5000); /* beyond the cap: the server asked for it */
    assert_true(sqlq_backoff_next(&b, 50, &d));
    assert_int_equal(d, 200); /* our own delay is longer */
    f.now_ms = 59000;
    assert_true(sqlq_backoff_next(&b, 5000, &d));
    assert_int_equal(d, 1000); /* still within the total budget */
}

static void test_backoff_server_hint_parsing(void **state)
{
    (void)state;
    assert_int_equal(sqlq_backoff_server_hint(NULL, "1500", 0), 1500);
    assert_int_equal(sqlq_backoff_server_hint("7", "250", 0), 250); /* ms header wins */
    assert_int_equal(sqlq_backoff_server_hint("7", NULL, 0), 7000);
    assert_int_equal(sqlq_backoff_server_hint(" 3 ", NULL, 0), 3000);
    assert_int_equal(sqlq_backoff_server_hint("abc", "x1", 0), 0);
    assert_int_equal(sqlq_backoff_server_hint("-5", NULL, 0), 0);
    /* Sun, 06 Nov 1994 08:49:37 GMT = 784111777 */
    assert_int_equal(sqlq_backoff_server_hint("Sun, 06 Nov 1994 08:49:37 GMT", NULL, 784111770), 7000);
    assert_int_equal(sqlq_backoff_server_hint("Sun, 06 Nov 1994 08:49:37 GMT", NULL, 784111800), 0);
    assert_int_equal(sqlq_backoff_server_hint(NULL, NULL, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_doubles_to_cap_without_jitter),
        cmocka_unit_test(test_backoff_jitter_bounds_exact),
        cmocka_unit_test(test_backoff_total_budget_stops),
        cmocka_unit_test(test_backoff_max_retries),
        cmocka_unit_test(test_backoff_server_hint_is_lower_bound),
        cmocka_unit_test(test_backoff_server_hint_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
