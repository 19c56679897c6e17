/* The WebJobs rules for what happens to a message: run, delete, release or poison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "dialect.h"
#include "disposition.h"
#include "poison_envelope.h"
#include "sql_sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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


static sqlq_error failure(sqlq_result code, int status, const char *azure_code)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    e.code = code;
    e.http_status = status;
    snprintf(e.azure_code, sizeof(e.azure_code), "%s", azure_code);
    return e;
}

/* Faults of the service or the credential are outages; a message's own refusals are not. */
static void test_disposition_outage_or_message_fault(void **state)
{
    (void)state;
    sqlq_error e = failure(SQLQ_E_HTTP, 403, "AuthenticationFailed");
    assert_true(sqlq_disposition_is_outage(&e));
    assert_non_null(strstr(sqlq_disposition_outage_cause(&e), "SAS expired"));
    e = failure(SQLQ_E_HTTP, 403, "AuthorizationPermissionMismatch");
    assert_true(sqlq_disposition_is_outage(&e));
    assert_non_null(strstr(sqlq_disposition_outage_cause(&e), "permission"));
    e = failure(SQLQ_E_HTTP, 401, "TokenUnavailable");
    snprintf(e.message, sizeof(e.message),
             "no access token: service principal (AZURE_CLIENT_SECRET) refused the credential: "
             "401 AADSTS7000215: Invalid client secret");
    assert_non_null(strstr(sqlq_disposition_outage_cause(&e), "refused the credential"));
    snprintf(e.message, sizeof(e.message),
             "no access token: managed identity (IMDS) cannot be reached at http://x: timeout");
    assert_non_null(strstr(sqlq_disposition_outage_cause(&e), "cannot be reached"));
    e = failure(SQLQ_E_HTTP, 503, "ServerBusy");
    assert_true(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_HTTP, 500, "OperationTimedOut");
    assert_true(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_NETWORK, 0, "");
    assert_true(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_NOT_FOUND, 404, "QueueNotFound");
    assert_true(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_NOT_FOUND, 404, "MessageNotFound");
    assert_false(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_POP_RECEIPT, 400, "PopReceiptMismatch");
    assert_false(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_TOO_LARGE, 413, "RequestBodyTooLarge");
    assert_false(sqlq_disposition_is_outage(&e));
    e = failure(SQLQ_E_HTTP, 400, "InvalidXmlDocument");
    assert_false(sqlq_disposition_is_outage(&e));
}

/* A handler's SQLQ_E_REJECTED poisons on the first attempt; other failures retry. */
static void test_disposition_rejected_poisons_at_once(void **state)
{
    (void)state;
    sqlq_disposition_policy p;
    sqlq_disposition_policy_default(&p);
    assert_int_equal(sqlq_disposition_on_handler(&p, 1, SQLQ_E_REJECTED), SQLQ_DISPOSE_POISON);
    assert_int_equal(sqlq_disposition_on_handler(&p, 1, SQLQ_E_IO), SQLQ_DISPOSE_RELEASE);
    assert_int_equal(sqlq_disposition_on_handler(&p, 5, SQLQ_E_IO), SQLQ_DISPOSE_POISON);
    assert_int_equal(sqlq_disposition_on_handler(&p, 1, SQLQ_OK), SQLQ_DISPOSE_DELETE);
    p.has_poison_queue = false; /* nowhere to put it: released, as any failure */
    assert_int_equal(sqlq_disposition_on_handler(&p, 1, SQLQ_E_REJECTED), SQLQ_DISPOSE_RELEASE);
}

static sqlq_error sql_error(const char *state, long native, const char *message)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    e.code = SQLQ_E_SQL;
    snprintf(e.sqlstate, sizeof(e.sqlstate), "%s", state);
    e.native_code = native;
    snprintf(e.message, sizeof(e.message), "%s", message);
    return e;
}

/* What no retry fixes, on the database that raised it; a foreign key or unique violation is
 * retried. The portable SQLSTATEs hold on every dialect. */
static void test_disposition_sql_sink_rejects(void **state)
{
    (void)state;
    const sqlq_dialect *pg = &sqlq_dialect_postgres, *lite = &sqlq_dialect_sqlite;
    const sqlq_dialect *ms = &sqlq_dialect_mssql, *maria = &sqlq_dialect_mariadb;
    for (size_t i = 0; sqlq_dialect_at(i); i++) {
        const sqlq_dialect *d = sqlq_dialect_at(i);
        sqlq_error e = sql_error("23502", 7, "null value in column");
        assert_true(sqlq_sql_sink_rejects(d, &e));
        e = sql_error("23514", 7, "violates check constraint");
        assert_true(sqlq_sql_sink_rejects(d, &e));
        e = sql_error("22001", 7, "value too long");
        assert_true(sqlq_sql_sink_rejects(d, &e));
        e = sql_error("23505", 7, "duplicate key");
        assert_false(sqlq_sql_sink_rejects(d, &e));
        e = sql_error("23502", 7, "null value");
        e.transient = true;
        assert_false(sqlq_sql_sink_rejects(d, &e));
    }
    sqlq_error e = sql_error("23503", 7, "violates foreign key constraint");
    assert_false(sqlq_sql_sink_rejects(pg, &e));
    e = sql_error("HY000", 19, "[SQLite]NOT NULL constraint failed: t.v (19)");
    assert_true(sqlq_sql_sink_rejects(lite, &e));
    assert_false(sqlq_sql_sink_rejects(pg, &e));
    e = sql_error("HY000", 19, "[SQLite]FOREIGN KEY constraint failed (19)");
    assert_false(sqlq_sql_sink_rejects(lite, &e));
    e = sql_error("23000", 515, "Cannot insert the value NULL");
    assert_true(sqlq_sql_sink_rejects(ms, &e));
    e = sql_error("23000", 547, "conflicted with the FOREIGN KEY constraint");
    assert_false(sqlq_sql_sink_rejects(ms, &e));
    e = sql_error("23000", 1048, "Column 'v' cannot be null");
    assert_true(sqlq_sql_sink_rejects(maria, &e));
    assert_false(sqlq_sql_sink_rejects(ms, &e));
    e = sql_error("23000", 4025, "CONSTRAINT `c` failed for `db`.`t`");
    assert_true(sqlq_sql_sink_rejects(maria, &e));
    e = sql_error("23000", 1452, "Cannot add or update a child row: a foreign key constraint fails");
    assert_false(sqlq_sql_sink_rejects(maria, &e));
}

/* --poison-envelope keeps the message's exact bytes, which the reader finds again. */
static void test_disposition_poison_envelope_wrap(void **state)
{
    (void)state;
    const char body[] = "{\"b\": 1.50, \"a\":\"x\"}";
    size_t len = 0;
    char *w = sqlq_poison_envelope_wrap("bad \"row\"", body, strlen(body), &len);
    assert_non_null(w);
    assert_string_equal(w, "{\"sqlq_poison\":1,\"reason\":\"bad \\\"row\\\"\",\"message\":{\"b\": 1.50, \"a\":\"x\"}}");
    assert_int_equal(len, strlen(w));
    const char *msg = NULL;
    size_t mlen = 0;
    assert_true(sqlq_poison_envelope_read(w, len, &msg, &mlen));
    assert_int_equal(mlen, strlen(body));
    assert_memory_equal(msg, body, mlen);
    free(w);
    assert_null(sqlq_poison_envelope_wrap("r", "plain text", 10, &len));
    assert_null(sqlq_poison_envelope_wrap("r", "\"a string\"", 10, &len));
    /* JSON whose numbers no double or int64 holds is JSON all the same: wrapped, exact bytes */
    const char *const huge[] = {"{\"a\":1e400}", "{\"n\":123456789012345678901234567890}",
                                " [1e-400, -0.0, {\"x\":[]}] "};
    for (size_t i = 0; i < 3; i++) {
        w = sqlq_poison_envelope_wrap("r", huge[i], strlen(huge[i]), &len);
        assert_non_null(w);
        assert_true(sqlq_poison_envelope_read(w, len, &msg, &mlen) || huge[i][0] == ' ');
        assert_non_null(strstr(w, huge[i]));
        free(w);
    }
    /* not JSON: a bad escape, bytes that are not UTF-8, trailing text, a cut object */
    const char *const bad[] = {"{\"a\":\"\\x\"}", "{\"a\":\"\xff\"}", "{} x", "{\"a\":1",
                               "{\"a\":\"\xed\xa0\x80\"}"};
    for (size_t i = 0; i < 5; i++)
        assert_null(sqlq_poison_envelope_wrap("r", bad[i], strlen(bad[i]), &len));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disposition_success_deletes),
        cmocka_unit_test(test_disposition_outage_or_message_fault),
        cmocka_unit_test(test_disposition_failure_releases_until_max),
        cmocka_unit_test(test_disposition_over_limit_on_receipt_poisons),
        cmocka_unit_test(test_disposition_undecodable_poisons_at_once),
        cmocka_unit_test(test_disposition_without_poison_queue_releases),
        cmocka_unit_test(test_disposition_release_visibility),
        cmocka_unit_test(test_disposition_rejected_poisons_at_once),
        cmocka_unit_test(test_disposition_sql_sink_rejects),
        cmocka_unit_test(test_disposition_poison_envelope_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
