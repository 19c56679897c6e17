/* Unit tests of retry/fault: which queue failures are outages (never counted against a change)
 * and which are refusals of one message (counted toward poison), the probable cause an
 * operator reads, and the outage back-off (capped, jittered, never giving up by itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backoff.h"
#include "fake_clock.h"
#include "fault.h"

#include <stdio.h>
#include <string.h>

/* The kind of a failure given as its result code, HTTP status, Azure code and transience. */
static sqlq_fault_kind kind_of(sqlq_result code, int status, const char *azure_code, bool transient)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    e.code = code;
    e.http_status = status;
    e.transient = transient;
    snprintf(e.azure_code, sizeof(e.azure_code), "%s", azure_code);
    return sqlq_fault_classify(&e);
}

static void test_fault_service_wide_faults_do_not_count(void **state)
{
    (void)state;
    const struct {
        int status;
        const char *code;
        sqlq_fault_kind want;
    } cases[] = {
        {403, "AuthenticationFailed", SQLQ_FAULT_AUTHENTICATION},
        {401, "InvalidAuthenticationInfo", SQLQ_FAULT_AUTHENTICATION},
        {401, "", SQLQ_FAULT_AUTHENTICATION},
        {403, "AuthorizationFailure", SQLQ_FAULT_PERMISSION},
        {403, "AuthorizationPermissionMismatch", SQLQ_FAULT_PERMISSION},
        {403, "AuthorizationResourceTypeMismatch", SQLQ_FAULT_PERMISSION},
        {503, "ServerBusy", SQLQ_FAULT_THROTTLED},
        {500, "OperationTimedOut", SQLQ_FAULT_THROTTLED},
        {429, "", SQLQ_FAULT_THROTTLED},
        {500, "InternalError", SQLQ_FAULT_SERVER},
        {502, "", SQLQ_FAULT_SERVER},
        {404, "QueueNotFound", SQLQ_FAULT_QUEUE_MISSING},
        {409, "QueueBeingDeleted", SQLQ_FAULT_QUEUE_BUSY},
        {400, "InvalidHeaderValue", SQLQ_FAULT_UNEXPECTED}, /* x-ms-version: hits every request */
        {400, "InvalidQueryParameterValue", SQLQ_FAULT_UNEXPECTED},
        {400, "", SQLQ_FAULT_UNEXPECTED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sqlq_fault_kind k = kind_of(SQLQ_E_HTTP, cases[i].status, cases[i].code, false);
        assert_int_equal(k, cases[i].want);
        assert_false(sqlq_fault_counts(k));
    }
    assert_int_equal(kind_of(SQLQ_E_NETWORK, 0, "", true), SQLQ_FAULT_NETWORK);
    assert_int_equal(kind_of(SQLQ_E_NETWORK, 0, "", false), SQLQ_FAULT_TLS);
    assert_false(sqlq_fault_counts(SQLQ_FAULT_NETWORK));
    assert_false(sqlq_fault_counts(SQLQ_FAULT_TLS));
}

static void test_fault_message_refusals_count(void **state)
{
    (void)state;
    assert_int_equal(kind_of(SQLQ_E_TOO_LARGE, 413, "RequestBodyTooLarge", false), SQLQ_FAULT_TOO_LARGE);
    assert_int_equal(kind_of(SQLQ_E_TOO_LARGE, 400, "MessageTooLarge", false), SQLQ_FAULT_TOO_LARGE);
    assert_int_equal(kind_of(SQLQ_E_HTTP, 400, "InvalidXmlDocument", false), SQLQ_FAULT_BAD_BODY);
    assert_int_equal(kind_of(SQLQ_E_HTTP, 400, "InvalidXmlNodeValue", false), SQLQ_FAULT_BAD_BODY);
    assert_true(sqlq_fault_counts(SQLQ_FAULT_TOO_LARGE));
    assert_true(sqlq_fault_counts(SQLQ_FAULT_BAD_BODY));
    assert_string_equal(sqlq_fault_name(SQLQ_FAULT_BAD_BODY), "bad_body");
}

/* A body refused before any request (plain text XML cannot carry, over the limit) is this
 * message's refusal like the service's; a local failure that is not curl's is neither a
 * transport fault nor the body's: an outage named for what it is, never "TLS". */
static void test_fault_without_a_response(void **state)
{
    (void)state;
    assert_int_equal(kind_of(SQLQ_E_BODY, 0, "", false), SQLQ_FAULT_BAD_BODY);
    assert_int_equal(kind_of(SQLQ_E_TOO_LARGE, 0, "", false), SQLQ_FAULT_TOO_LARGE);
    const sqlq_result local[] = {SQLQ_E_INVALID, SQLQ_E_NOMEM, SQLQ_E_PARSE, SQLQ_E_IO, SQLQ_OK};
    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
        sqlq_fault_kind k = kind_of(local[i], 0, "", false);
        assert_int_equal(k, SQLQ_FAULT_LOCAL);
        assert_false(sqlq_fault_counts(k));
    }
    assert_string_equal(sqlq_fault_name(SQLQ_FAULT_LOCAL), "local");
    char out[512];
    sqlq_fault_context c = {"put message", "orders", 0, "", NULL, 0,
                            "put message 'orders': request headers too long"};
    sqlq_fault_describe(SQLQ_FAULT_LOCAL, &c, out, sizeof(out));
    assert_non_null(strstr(out, "before the queue service answered: put message 'orders': request "
                                "headers too long"));
    assert_null(strstr(out, "TLS"));
    c.detail = "plain message text has a byte sequence at offset 3 that is not UTF-8 XML can carry";
    sqlq_fault_describe(SQLQ_FAULT_BAD_BODY, &c, out, sizeof(out));
    assert_non_null(strstr(out, "message body refused for queue orders, not sent: plain message text"));
}

static void test_fault_sas_expiry_parsed(void **state)
{
    (void)state;
    char text[64];
    int64_t when = 0;
    assert_true(sqlq_fault_sas_expiry("sv=2019-12-12&se=2026-11-25T10%3A24%3A58Z&sp=a&sig=x", text,
                                      sizeof(text), &when));
    assert_string_equal(text, "2026-11-25T10:24:58Z");
    assert_int_equal(when, 1795602298);
    assert_true(sqlq_fault_sas_expiry("se=2026-11-25T10:24Z&sig=x", text, sizeof(text), &when));
    assert_int_equal(when, 1795602240);
    assert_true(sqlq_fault_sas_expiry("sp=a&se=2026-11-25&sig=x", text, sizeof(text), &when));
    assert_int_equal(when, 1795564800);
    assert_true(
        sqlq_fault_sas_expiry("se=2026-11-25T10:24:58.1234567Z", text, sizeof(text), &when));
    assert_int_equal(when, 1795602298);
    assert_false(sqlq_fault_sas_expiry("sv=2019-12-12&sp=a&sig=x", text, sizeof(text), &when));
    assert_false(sqlq_fault_sas_expiry("sse=2026-11-25&sig=x", text, sizeof(text), &when));
    assert_false(sqlq_fault_sas_expiry("se=tomorrow", text, sizeof(text), &when));
    assert_false(sqlq_fault_sas_expiry(NULL, text, sizeof(text), &when));
    /* Expired at or before now (the bridge's probe and config check): never for a key. */
    assert_true(sqlq_fault_sas_expired("se=2026-11-25T10:24:58Z&sig=x", 1795602298));
    assert_false(sqlq_fault_sas_expired("se=2026-11-25T10:24:58Z&sig=x", 1795602297));
    assert_false(sqlq_fault_sas_expired("sp=a&sig=x", 1795602298));
    assert_false(sqlq_fault_sas_expired(NULL, 1795602298));
}

static void describe(sqlq_fault_kind k, const char *op, int status, const char *code,
                     const char *sas, int64_t now, char *out, size_t size)
{
    sqlq_fault_context c = {op, "orders", status, code, sas, now, NULL};
    sqlq_fault_describe(k, &c, out, size);
}

static void test_fault_causes_name_what_to_do(void **state)
{
    (void)state;
    char out[512];
    const char *sas = "sv=2019-12-12&ss=q&srt=o&se=2026-11-25T10%3A00%3A00Z&sp=a&sig=SECRET";
    describe(SQLQ_FAULT_AUTHENTICATION, "put message", 403, "AuthenticationFailed", sas,
             1795600800 + 1, out, sizeof(out));
    assert_non_null(strstr(out, "SAS expired at 2026-11-25T10:00:00Z"));
    describe(SQLQ_FAULT_AUTHENTICATION, "put message", 403, "AuthenticationFailed", sas,
             1795600800 - 60, out, sizeof(out));
    assert_non_null(strstr(out, "SAS rejected"));
    assert_null(strstr(out, "SECRET"));
    describe(SQLQ_FAULT_AUTHENTICATION, "put message", 403, "AuthenticationFailed", NULL, 0, out,
             sizeof(out));
    assert_non_null(strstr(out, "key rejected"));
    describe(SQLQ_FAULT_PERMISSION, "put message", 403, "AuthorizationPermissionMismatch", sas, 0,
             out, sizeof(out));
    assert_non_null(strstr(out, "permission missing: needs add on queue orders"));
    describe(SQLQ_FAULT_PERMISSION, "create queue", 403, "AuthorizationResourceTypeMismatch", sas,
             0, out, sizeof(out));
    assert_non_null(
        strstr(out, "queue orders does not exist and this credential may not create it"));
    describe(SQLQ_FAULT_THROTTLED, "put message", 503, "ServerBusy", NULL, 0, out, sizeof(out));
    assert_non_null(strstr(out, "503 ServerBusy"));
    describe(SQLQ_FAULT_NETWORK, "put message", 0, "", NULL, 0, out, sizeof(out));
    assert_non_null(strstr(out, "unreachable"));
}

/* No Entra ID token: an outage (back off, /readyz 503), never a reason to poison. */
static void test_fault_token_unavailable_is_an_outage(void **state)
{
    (void)state;
    sqlq_fault_kind k = kind_of(SQLQ_E_NETWORK, 0, "TokenUnavailable", true);
    assert_int_equal(k, SQLQ_FAULT_AUTHENTICATION);
    assert_false(sqlq_fault_counts(k));
    char out[512];
    describe(k, "put message", 0, "TokenUnavailable", NULL, 0, out, sizeof(out));
    assert_non_null(strstr(out, "no Microsoft Entra ID token"));
}

/* The token request's own error tells a refused credential (4xx: the endpoint's code, e.g. a
 * wrong client secret) from an endpoint that cannot be reached. */
static void test_fault_token_refused_or_unreachable(void **state)
{
    (void)state;
    char out[512];
    sqlq_fault_context c = {"put message", "orders", 0, "TokenUnavailable", NULL, 0,
                            "no access token: service principal (AZURE_CLIENT_SECRET) refused the "
                            "credential: 401 AADSTS7000215: Invalid client secret provided."};
    sqlq_fault_describe(SQLQ_FAULT_AUTHENTICATION, &c, out, sizeof(out));
    assert_non_null(strstr(out, "no Microsoft Entra ID token: service principal "
                                "(AZURE_CLIENT_SECRET) refused the credential: 401 AADSTS7000215"));
    assert_null(strstr(out, "cannot be reached"));
    c.detail = "put message 'orders': no access token: managed identity (IMDS) cannot be "
               "reached at "
               "http://169.254.169.254/metadata: Connection refused";
    sqlq_fault_describe(SQLQ_FAULT_AUTHENTICATION, &c, out, sizeof(out));
    assert_non_null(strstr(out, "no Microsoft Entra ID token: managed identity (IMDS) cannot be "
                                "reached at http://169.254.169.254"));
    assert_null(strstr(out, "put message"));
    assert_null(strstr(out, "refused the credential"));
}

static void test_fault_outage_backoff_capped_with_jitter(void **state)
{
    (void)state;
    const double r[] = {0.0, 1.0};
    fake_clock f = {.randoms = r, .nrandoms = 2};
    sqlq_clock c = fake_clock_make(&f);
    sqlq_backoff_policy p = sqlq_backoff_policy_outage();
    sqlq_backoff b;
    sqlq_backoff_init(&b, &p, &c);
    /* 1 s doubling to the 10 s cap, each within ±20 %; after a day of outage it still retries
     * (the route decides when to give up), never faster than every 8 s once at the cap. */
    const uint64_t base[] = {1000, 2000, 4000, 8000, 10000, 10000, 10000};
    for (size_t i = 0; i < 7; i++) {
        uint64_t d;
        assert_true(sqlq_backoff_next(&b, 0, &d));
        assert_true(d >= base[i] * 8 / 10 && d <= base[i] * 12 / 10 && d <= 10000);
        sqlq_clock_sleep_ms(&c, d);
    }
    unsigned rounds = 0;
    while (f.now_ms < 86400000u) {
        uint64_t d;
        assert_true(sqlq_backoff_next(&b, 0, &d));
        assert_true(d >= 8000 && d <= 10000);
        sqlq_clock_sleep_ms(&c, d);
        rounds++;
    }
    assert_true(rounds <= 86400 / 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_service_wide_faults_do_not_count),
        cmocka_unit_test(test_fault_message_refusals_count),
        cmocka_unit_test(test_fault_without_a_response),
        cmocka_unit_test(test_fault_sas_expiry_parsed),
        cmocka_unit_test(test_fault_causes_name_what_to_do),
        cmocka_unit_test(test_fault_outage_backoff_capped_with_jitter),
        cmocka_unit_test(test_fault_token_unavailable_is_an_outage),
        cmocka_unit_test(test_fault_token_refused_or_unreachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
