/* Unit tests of bridge/delivery's classification: which put results release a change, which
 * retry it without counting the attempt, and which count the attempt toward poison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "delivery.h"

#include <string.h>

static sqlq_error error_of(sqlq_result code, bool transient, int status)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    e.code = code;
    e.transient = transient;
    e.http_status = status;
    return e;
}

static void test_delivery_accepted(void **state)
{
    (void)state;
    sqlq_error e = error_of(SQLQ_OK, false, 201);
    assert_int_equal(sqlq_delivery_classify(SQLQ_OK, &e), SQLQ_OUTCOME_ACCEPTED);
}

static void test_delivery_transient_failures_do_not_count(void **state)
{
    (void)state;
    sqlq_error busy = error_of(SQLQ_E_HTTP, true, 503);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &busy), SQLQ_OUTCOME_TRANSIENT);
    sqlq_error net = error_of(SQLQ_E_NETWORK, false, 0); /* even when not flagged */
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_NETWORK, &net), SQLQ_OUTCOME_TRANSIENT);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_TIMEOUT, NULL), SQLQ_OUTCOME_TRANSIENT);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_CANCELLED, NULL), SQLQ_OUTCOME_TRANSIENT);
    sqlq_error gone = error_of(SQLQ_E_NOT_FOUND, false, 404); /* queue deleted: created again */
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_NOT_FOUND, &gone), SQLQ_OUTCOME_TRANSIENT);
}

static void test_delivery_permanent_failures_count(void **state)
{
    (void)state;
    sqlq_error bad = error_of(SQLQ_E_HTTP, false, 400);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &bad), SQLQ_OUTCOME_FAILED);
    sqlq_error big = error_of(SQLQ_E_TOO_LARGE, false, 0);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_TOO_LARGE, &big), SQLQ_OUTCOME_FAILED);
    sqlq_error auth = error_of(SQLQ_E_HTTP, false, 403);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &auth), SQLQ_OUTCOME_FAILED);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_INVALID, NULL), SQLQ_OUTCOME_FAILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivery_accepted),
        cmocka_unit_test(test_delivery_transient_failures_do_not_count),
        cmocka_unit_test(test_delivery_permanent_failures_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
