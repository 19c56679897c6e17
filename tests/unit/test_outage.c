/* Unit tests of bridge/outage: the queue_outage log line comes at once, then at most once a
 * minute while the cause stays the same, at once when it changes, and queue_recovered once at
 * the end (captured through the log sink; time passed in, nothing waits). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log.h"
#include "outage.h"

#include <stdio.h>
#include <string.h>

typedef struct captured {
    int outage, recovered;
    char last[1024];
} captured;

static void sink(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    captured *c = ctx;
    (void)level;
    if (strcmp(event, "queue_outage") == 0)
        c->outage++;
    if (strcmp(event, "queue_recovered") == 0)
        c->recovered++;
    snprintf(c->last, sizeof(c->last), "%s", fields);
}

static void test_outage_log_is_rate_limited(void **state)
{
    (void)state;
    captured c = {0};
    sqlq_log_set_sink(sink, &c);
    sqlq_outage o;
    sqlq_outage_init(&o, "orders", "orders-q");
    assert_int_equal(sqlq_outage_ms(&o, 1000), 0);
    assert_true(sqlq_outage_failed(&o, 1000, "key rejected", "http=403"));
    assert_non_null(strstr(c.last, "cause=\"key rejected\""));
    for (uint64_t t = 2000; t < 61000; t += 1000) /* a failure a second: no new line */
        assert_false(sqlq_outage_failed(&o, t, "key rejected", "http=403"));
    assert_int_equal(c.outage, 1);
    assert_true(sqlq_outage_failed(&o, 61000, "key rejected", "http=403")); /* a minute on */
    assert_non_null(strstr(c.last, "for_s=60 failed_attempts=61"));
    assert_true(sqlq_outage_failed(&o, 62000, "permission missing", "http=403")); /* new cause */
    assert_int_equal(c.outage, 3);
    assert_int_equal(sqlq_outage_ms(&o, 70000), 69000);
    sqlq_outage_recovered(&o, 70000);
    sqlq_outage_recovered(&o, 71000); /* once */
    assert_int_equal(c.recovered, 1);
    assert_non_null(strstr(c.last, "after_s=69"));
    assert_int_equal(sqlq_outage_ms(&o, 72000), 0);
    assert_true(sqlq_outage_failed(&o, 80000, "key rejected", "http=403")); /* a new outage */
    assert_int_equal(sqlq_outage_ms(&o, 81000), 1000);
    sqlq_log_set_sink(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outage_log_is_rate_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
