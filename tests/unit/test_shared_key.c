/* shared_key: signatures must equal what the official SDK computes for the same request.
 *
 * The expected Authorization values below were produced by @azure/storage-queue 12.32.0
 * (StorageSharedKeyCredential, through its own pipeline, with a capturing HTTP client):
 *     node tests/support/sign_reference.js
 * which pins x-ms-date to "Mon, 01 Jan 2024 00:00:00 GMT" and the client request ids, and
 * prints each request's method, path, decoded query, x-ms-* headers, Content-Length,
 * Content-Type and the SDK's Authorization header. Inputs here are copied from that output. */
#include "account.h"
#include "shared_key.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#define DEV_CONN "UseDevelopmentStorage=true"
#define DATE "Mon, 01 Jan 2024 00:00:00 GMT"
#define SDK_VERSION "2026-04-06"

static sqlq_shared_key *dev_key(void)
{
    sqlq_account *a = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_parse(DEV_CONN, &a, &err), SQLQ_OK);
    sqlq_shared_key *k = NULL;
    assert_int_equal(sqlq_shared_key_create(a->name, a->key, a->key_len, &k, &err), SQLQ_OK);
    sqlq_account_destroy(a);
    return k;
}

static void check(const char *method, const char *path, const sqlq_pair *query, size_t nquery,
                  const char *request_id, size_t content_length, const char *content_type,
                  const char *expected)
{
    sqlq_shared_key *k = dev_key();
    sqlq_pair ms[] = {{"x-ms-client-request-id", request_id},
                      {"x-ms-date", DATE},
                      {"x-ms-version", SDK_VERSION}};
    sqlq_sign_input in = {method, path, query, nquery, ms, 3, content_length, content_type};
    char auth[256];
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_shared_key_sign(k, &in, auth, sizeof(auth), &err), SQLQ_OK);
    assert_string_equal(auth, expected);
    /* The same key object signs again identically (the HMAC context is re-used). */
    assert_int_equal(sqlq_shared_key_sign(k, &in, auth, sizeof(auth), &err), SQLQ_OK);
    assert_string_equal(auth, expected);
    sqlq_shared_key_destroy(k);
}

static void test_shared_key_create_queue(void **state)
{
    (void)state;
    sqlq_pair q[] = {{"timeout", "30"}};
    check("PUT", "/devstoreaccount1/signtest", q, 1, "00000000-0000-4000-8000-000000000001", 0,
          NULL, "SharedKey devstoreaccount1:LAU7z+xDjs4EQJvgzZtLA8YHKyMuzOTeESmYjsjvpNQ=");
}

static void test_shared_key_metadata(void **state)
{
    (void)state;
    sqlq_pair q[] = {{"comp", "metadata"}, {"timeout", "30"}};
    check("GET", "/devstoreaccount1/signtest", q, 2, "00000000-0000-4000-8000-000000000002", 0,
          NULL, "SharedKey devstoreaccount1:n9cnK5AqtvqAyTZqWTiUBn9PcCuHC4AhsrpRP0vjeNI=");
}

static void test_shared_key_put_message_with_body_and_unsorted_query(void **state)
{
    (void)state;
    sqlq_pair q[] = {{"visibilitytimeout", "5"}, {"messagettl", "-1"}, {"timeout", "30"}};
    check("POST", "/devstoreaccount1/signtest/messages", q, 3,
          "00000000-0000-4000-8000-000000000003", 126, "application/xml",
          "SharedKey devstoreaccount1:uTqUZFB/+m+f79K/0qu65Vi5Lxg0yBOgCl0BnpdowI4=");
}

static void test_shared_key_get_messages(void **state)
{
    (void)state;
    sqlq_pair q[] = {{"numofmessages", "32"}, {"visibilitytimeout", "600"}, {"timeout", "30"}};
    check("GET", "/devstoreaccount1/signtest/messages", q, 3,
          "00000000-0000-4000-8000-000000000004", 0, NULL,
          "SharedKey devstoreaccount1:OGdRP5UWdor3sliQUU01LctFerlvOHoz+hkKcE1fLjA=");
}

static void test_shared_key_delete_message_decoded_pop_receipt(void **state)
{
    (void)state;
    /* Sent as popreceipt=AQ%2B%2F%3Db%3D%3D; signed decoded. */
    sqlq_pair q[] = {{"popreceipt", "AQ+/=b=="}, {"timeout", "30"}};
    check("DELETE", "/devstoreaccount1/signtest/messages/0f5d2c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6", q,
          2, "00000000-0000-4000-8000-000000000005", 0, NULL,
          "SharedKey devstoreaccount1:knOON5VMz64RiDPzVKoqWrwXQgTtxyC0J8bq2L+YgcI=");
}

static void test_shared_key_list_queues(void **state)
{
    (void)state;
    sqlq_pair q[] = {{"comp", "list"}, {"prefix", "sign"}, {"timeout", "30"}};
    check("GET", "/devstoreaccount1", q, 3, "00000000-0000-4000-8000-000000000006", 0, NULL,
          "SharedKey devstoreaccount1:2nMb6MFrORnBfo6dfVgYViM5eDbfxtBVxukqQJ9r2oE=");
}

static void test_shared_key_string_to_sign_shape(void **state)
{
    (void)state;
    sqlq_shared_key *k = dev_key();
    sqlq_pair ms[] = {{"X-MS-Version", "2019-12-12"}, {"x-ms-date", DATE}};
    sqlq_pair q[] = {{"numofmessages", "2"}, {"Comp", "x"}, {"comp", "y"}};
    sqlq_sign_input in = {"GET", "/devstoreaccount1/q/messages", q, 3, ms, 2, 0, NULL};
    char auth[256];
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_shared_key_sign(k, &in, auth, sizeof(auth), &err), SQLQ_OK);
    assert_string_equal(sqlq_shared_key_last_string(k),
                        "GET\n\n\n\n\n\n\n\n\n\n\n\n"
                        "x-ms-date:" DATE "\nx-ms-version:2019-12-12\n"
                        "/devstoreaccount1/devstoreaccount1/q/messages\ncomp:x,y\nnumofmessages:2");
    sqlq_shared_key_destroy(k);
}

static void test_shared_key_rejects_missing_key(void **state)
{
    (void)state;
    sqlq_shared_key *k = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_shared_key_create("acct", NULL, 0, &k, &err), SQLQ_E_INVALID);
    assert_null(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_key_create_queue),
        cmocka_unit_test(test_shared_key_metadata),
        cmocka_unit_test(test_shared_key_put_message_with_body_and_unsorted_query),
        cmocka_unit_test(test_shared_key_get_messages),
        cmocka_unit_test(test_shared_key_delete_message_decoded_pop_receipt),
        cmocka_unit_test(test_shared_key_list_queues),
        cmocka_unit_test(test_shared_key_string_to_sign_shape),
        cmocka_unit_test(test_shared_key_rejects_missing_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
