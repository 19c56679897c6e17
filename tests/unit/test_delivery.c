/* Unit tests of bridge/delivery's classification: which put results release a change, which
 * retry it without counting the attempt, and which count the attempt toward poison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "delivery.h"

#include <stdio.h>
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

static sqlq_error azure_error(sqlq_result code, int status, const char *azure_code)
{
    sqlq_error e = error_of(code, false, status);
    snprintf(e.azure_code, sizeof(e.azure_code), "%s", azure_code);
    return e;
}

/* Faults that would fail every message: never counted toward poison. */
static void test_delivery_service_wide_refusals_do_not_count(void **state)
{
    (void)state;
    const char *codes[] = {"AuthenticationFailed", "AuthorizationFailure", "AuthorizationPermissionMismatch",
                           "AuthorizationResourceTypeMismatch"};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        sqlq_error e = azure_error(SQLQ_E_HTTP, 403, codes[i]);
        assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &e), SQLQ_OUTCOME_TRANSIENT);
    }
    sqlq_error unauth = azure_error(SQLQ_E_HTTP, 401, "");
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &unauth), SQLQ_OUTCOME_TRANSIENT);
    sqlq_error internal = azure_error(SQLQ_E_HTTP, 500, "InternalError"); /* after the client's retries */
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &internal), SQLQ_OUTCOME_TRANSIENT);
    sqlq_error version = azure_error(SQLQ_E_HTTP, 400, "InvalidHeaderValue");
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &version), SQLQ_OUTCOME_TRANSIENT);
    sqlq_error tls = error_of(SQLQ_E_NETWORK, false, 0);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_NETWORK, &tls), SQLQ_OUTCOME_TRANSIENT);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_INVALID, NULL), SQLQ_OUTCOME_TRANSIENT);
}

/* Only a refusal of this message's body counts. */
static void test_delivery_message_refusals_count(void **state)
{
    (void)state;
    sqlq_error big = error_of(SQLQ_E_TOO_LARGE, false, 0); /* too large to encode */
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_TOO_LARGE, &big), SQLQ_OUTCOME_FAILED);
    sqlq_error body = azure_error(SQLQ_E_TOO_LARGE, 413, "RequestBodyTooLarge");
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_TOO_LARGE, &body), SQLQ_OUTCOME_FAILED);
    sqlq_error msg = azure_error(SQLQ_E_TOO_LARGE, 400, "MessageTooLarge");
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_TOO_LARGE, &msg), SQLQ_OUTCOME_FAILED);
    sqlq_error xml = azure_error(SQLQ_E_HTTP, 400, "InvalidXmlDocument");
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &xml), SQLQ_OUTCOME_FAILED);
    sqlq_error node = azure_error(SQLQ_E_HTTP, 400, "InvalidXmlNodeValue");
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_HTTP, &node), SQLQ_OUTCOME_FAILED);
    sqlq_error plain = error_of(SQLQ_E_BODY, false, 0); /* plain text XML cannot carry: not sent */
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_BODY, &plain), SQLQ_OUTCOME_FAILED);
    assert_int_equal(sqlq_delivery_classify(SQLQ_E_BODY, NULL), SQLQ_OUTCOME_FAILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivery_accepted),
        cmocka_unit_test(test_delivery_transient_failures_do_not_count),
        cmocka_unit_test(test_delivery_service_wide_refusals_do_not_count),
        cmocka_unit_test(test_delivery_message_refusals_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
