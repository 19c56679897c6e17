/* account: every connection string form users write, and errors that never show a secret. */
#include "account.h"
#include "log.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A made-up 64-byte key (base64) and SAS signature: what must never appear in errors. */
#define KEY "c3FscS10ZXN0LWtleS0wMTIzNDU2Nzg5YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo9PT09PT09PQ=="
#define SIG "Zm9vYmFyYmF6cXV4c2VjcmV0c2lnbmF0dXJl%2BAB%3D"
#define SIG_DECODED "Zm9vYmFyYmF6cXV4c2VjcmV0c2lnbmF0dXJl+AB="
#define SAS "sv=2019-12-12&ss=q&srt=sco&sp=rwdlacup&se=2030-01-01T00:00:00Z&sig=" SIG

static sqlq_account *parse_ok(const char *text)
{
    sqlq_account *a = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_account_parse(text, &a, &err);
    if (r != SQLQ_OK)
        fail_msg("parse failed: %s", err.message);
    assert_non_null(a);
    return a;
}

static void parse_fails(const char *text, const char *expect_in_message)
{
    sqlq_account *a = (sqlq_account *)1;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_parse(text, &a, &err), SQLQ_E_INVALID);
    assert_null(a);
    assert_int_equal(err.code, SQLQ_E_INVALID);
    if (!strstr(err.message, expect_in_message))
        fail_msg("message '%s' does not mention '%s'", err.message, expect_in_message);
    assert_null(strstr(err.message, KEY));
    assert_null(strstr(err.message, "c3FscS10ZXN0")); /* not even a piece of the key */
    assert_null(strstr(err.message, SIG));
    assert_null(strstr(err.message, "Zm9vYmFy"));
}

static void test_account_full_connection_string(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=" KEY
                               ";EndpointSuffix=core.windows.net");
    assert_string_equal(a->name, "myacct");
    assert_string_equal(a->endpoint, "https://myacct.queue.core.windows.net");
    assert_int_equal(a->key_len, 58);
    assert_memory_equal(a->key, "sqlq-test-key-0123456789", 24);
    assert_null(a->sas);
    sqlq_account_destroy(a);
}

static void test_account_defaults_case_whitespace_and_order(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("  accountkey=" KEY " ; ACCOUNTNAME = other ;");
    assert_string_equal(a->endpoint, "https://other.queue.core.windows.net");
    assert_string_equal(a->name, "other");
    sqlq_account_destroy(a);

    a = parse_ok("DefaultEndpointsProtocol=https;AccountName=cn;AccountKey=" KEY
                 ";EndpointSuffix=core.chinacloudapi.cn;QueueSecondaryEndpoint=https://x.example/");
    assert_string_equal(a->endpoint, "https://cn.queue.core.chinacloudapi.cn");
    sqlq_account_destroy(a);
}

static void test_account_queue_endpoint_override(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" KEY
                               ";QueueEndpoint=http://127.0.0.1:12345/devstoreaccount1/;");
    assert_string_equal(a->endpoint, "http://127.0.0.1:12345/devstoreaccount1");
    assert_string_equal(a->name, "devstoreaccount1");
    sqlq_account_destroy(a);
}

static void test_account_shared_access_signature(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("QueueEndpoint=https://acct.queue.core.windows.net;"
                               "SharedAccessSignature=?" SAS);
    assert_string_equal(a->sas, SAS);
    assert_null(a->key);
    assert_null(a->name);
    assert_string_equal(a->endpoint, "https://acct.queue.core.windows.net");
    sqlq_account_destroy(a);

    a = parse_ok("AccountName=acct;SharedAccessSignature=" SAS);
    assert_string_equal(a->endpoint, "https://acct.queue.core.windows.net");
    sqlq_account_destroy(a);
}

static void test_account_development_storage(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("UseDevelopmentStorage=true");
    assert_string_equal(a->name, "devstoreaccount1");
    assert_string_equal(a->endpoint, "http://127.0.0.1:10001/devstoreaccount1");
    assert_int_equal(a->key_len, 64);
    sqlq_account_destroy(a);

    a = parse_ok("UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://azurite");
    assert_string_equal(a->endpoint, "http://azurite:10001/devstoreaccount1");
    sqlq_account_destroy(a);
}

static void test_account_service_url_with_sas(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("https://acct.queue.core.windows.net/?" SAS);
    assert_string_equal(a->endpoint, "https://acct.queue.core.windows.net");
    assert_string_equal(a->sas, SAS);
    assert_string_equal(a->name, "acct");
    assert_null(a->key);
    sqlq_account_destroy(a);

    a = parse_ok("http://127.0.0.1:10001/devstoreaccount1?" SAS);
    assert_string_equal(a->endpoint, "http://127.0.0.1:10001/devstoreaccount1");
    assert_string_equal(a->name, "devstoreaccount1");
    sqlq_account_destroy(a);
}

static void test_account_errors_name_the_problem(void **state)
{
    (void)state;
    parse_fails("", "empty");
    parse_fails("   ", "empty");
    parse_fails("AccountName=a;AcountKey=" KEY, "unknown connection string key 'AcountKey'");
    parse_fails("AccountName=a;" KEY, "part 2 is not a known key=value");
    parse_fails("AccountName=a;c3FscS10ZXN0LWtleS0wMTIz", "part 2 is not key=value");
    parse_fails("AccountName=a;AccountKey=" KEY "!!", "AccountKey is not valid base64");
    parse_fails("AccountName=a;AccountKey=c3FscS10ZXN0LWtleS0=x", "AccountKey is not valid base64");
    parse_fails("AccountKey=" KEY, "AccountKey needs AccountName");
    parse_fails("AccountName=a", "neither AccountKey nor SharedAccessSignature");
    parse_fails("AccountName=a;AccountKey=" KEY ";SharedAccessSignature=" SAS, "not both");
    parse_fails("DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey=" KEY, "http or https");
    parse_fails("UseDevelopmentStorage=false", "must be true");
    parse_fails("https://acct.queue.core.windows.net/", "needs a SAS token");
    parse_fails("https://acct.queue.core.windows.net/?sv=2019-12-12&sp=r", "no sig=");
    parse_fails("AccountName=a;AccountKey=" KEY ";QueueEndpoint=ftp://x", "http:// or https://");
    parse_fails("SharedAccessSignature=" SAS, "needs AccountName or QueueEndpoint");
    parse_fails(NULL, "no queue connection string");
}

static char captured[2048];
static void capture(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)ctx;
    (void)level;
    snprintf(captured, sizeof(captured), "%s %s", event, fields);
}

static void test_account_registers_secrets_with_the_log(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("AccountName=a;AccountKey=" KEY);
    sqlq_account_destroy(a);
    a = parse_ok("https://acct.queue.core.windows.net/?" SAS);
    sqlq_account_destroy(a);
    sqlq_log_set_sink(capture, NULL);
    SQLQ_ERROR("leak", "key=%s sig=%s decoded=%s", KEY, SIG, SIG_DECODED);
    sqlq_log_set_sink(NULL, NULL);
    assert_null(strstr(captured, KEY));
    assert_null(strstr(captured, SIG));
    assert_null(strstr(captured, SIG_DECODED));
    assert_string_equal(captured, "leak key=*** sig=*** decoded=***");
}


/* http:// only to loopback or development storage unless allowed explicitly. */
static void test_account_refuses_plain_http_to_remote_hosts(void **state)
{
    (void)state;
    parse_fails("DefaultEndpointsProtocol=http;AccountName=a;AccountKey=" KEY, "allow_insecure_http");
    parse_fails("AccountName=a;AccountKey=" KEY ";QueueEndpoint=http://any-host/", "not loopback");
    parse_fails("http://10.1.2.3:10001/acct?" SAS, "allow_insecure_http");
    parse_fails("http://127.example.com/?" SAS, "allow_insecure_http");
    const char *local[] = {"QueueEndpoint=http://127.0.0.1:1/a;SharedAccessSignature=" SAS,
                           "QueueEndpoint=http://127.9.9.9:1/a;SharedAccessSignature=" SAS,
                           "QueueEndpoint=http://localhost:1/a;SharedAccessSignature=" SAS,
                           "QueueEndpoint=http://[::1]:1/a;SharedAccessSignature=" SAS,
                           "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://azurite",
                           "https://acct.queue.core.windows.net?" SAS};
    for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
        sqlq_account *a = parse_ok(local[i]);
        assert_false(a->plain_http);
        sqlq_account_destroy(a);
    }
    sqlq_account_options allow = {true, NULL};
    sqlq_account *a = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_log_set_sink(capture, NULL);
    captured[0] = '\0';
    assert_int_equal(sqlq_account_parse_opts("DefaultEndpointsProtocol=http;AccountName=a;AccountKey=" KEY,
                                             &allow, &a, &err),
                     SQLQ_OK);
    sqlq_log_set_sink(NULL, NULL);
    assert_true(a->plain_http);
    assert_non_null(strstr(captured, "insecure_http endpoint=http://a.queue.core.windows.net"));
    sqlq_account_destroy(a);
}

/* The Portal's and generateSasUrl()'s queue URL: the queue comes from the URL. */
static void test_account_queue_scoped_sas_url(void **state)
{
    (void)state;
    sqlq_account *a = parse_ok("https://acct.queue.core.windows.net/orders?" SAS);
    assert_string_equal(a->endpoint, "https://acct.queue.core.windows.net");
    assert_string_equal(a->queue, "orders");
    assert_string_equal(a->name, "acct");
    const char *q = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_queue(a, NULL, &q, &err), SQLQ_OK);
    assert_string_equal(q, "orders");
    assert_int_equal(sqlq_account_queue(a, "orders", &q, &err), SQLQ_OK);
    assert_int_equal(sqlq_account_queue(a, "payments", &q, &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "'payments'"));
    assert_non_null(strstr(err.message, "'orders'"));
    assert_true(sqlq_account_reaches(a, "orders", NULL));
    sqlq_error_clear(&err);
    assert_false(sqlq_account_reaches(a, "orders-poison", &err));
    assert_non_null(strstr(err.message, "'orders-poison' is not reachable with this credential"));
    sqlq_account_destroy(a);

    /* Path-style (Azurite, IP hosts): the first segment is the account, the second the queue. */
    a = parse_ok("http://127.0.0.1:10001/devstoreaccount1/orders/?" SAS);
    assert_string_equal(a->endpoint, "http://127.0.0.1:10001/devstoreaccount1");
    assert_string_equal(a->queue, "orders");
    assert_string_equal(a->name, "devstoreaccount1");
    sqlq_account_destroy(a);
    a = parse_ok("http://127.0.0.1:10001/devstoreaccount1?" SAS);
    assert_null(a->queue);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_queue(a, "payments", &q, &err), SQLQ_OK);
    assert_string_equal(q, "payments");
    assert_true(sqlq_account_reaches(a, "anything", NULL));
    sqlq_account_destroy(a);

    parse_fails("https://acct.queue.core.windows.net/orders/messages?" SAS, "path segments");
    sqlq_account_options ca = {false, "/nonexistent/ca.pem"};
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_parse_opts("UseDevelopmentStorage=true", &ca, &a, &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "ca_file: cannot read '/nonexistent/ca.pem'"));
    parse_fails("https://acct.queue.core.windows.net/Orders_1?" SAS, "queue URL's queue");
}

/* A huge SAS or endpoint, BlobEndpoint alone, are handled; user:pass@ is redacted. */
static void test_account_limits_and_redaction(void **state)
{
    (void)state;
    char huge[6000];
    snprintf(huge, sizeof(huge), "https://acct.queue.core.windows.net/?%s&x=", SAS);
    memset(huge + strlen(huge), 'x', sizeof(huge) - strlen(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    parse_fails(huge, "the SAS token is");
    char long_path[1200] = "QueueEndpoint=https://acct.queue.core.windows.net/";
    memset(long_path + strlen(long_path), 'p', 1000);
    snprintf(long_path + strlen(long_path), sizeof(long_path) - strlen(long_path),
             ";SharedAccessSignature=%s", SAS);
    parse_fails(long_path, "(allowed up to 512)");
    parse_fails("BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=" SAS,
                "the queue endpoint is missing");
    parse_fails("AccountName=a;AccountKey=" KEY ";BlobEndpoint=https://a.blob.core.windows.net/",
                "the queue endpoint is missing");
    parse_fails("QueueEndpoint=https://bob:hunter2-secret@a.queue.core.windows.net;"
                "SharedAccessSignature=" SAS, "must not contain a user name or password");
    sqlq_account *a = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_parse("https://bob:hunter2-secret@a.queue.core.windows.net/?" SAS,
                                        &a, &err), SQLQ_E_INVALID);
    assert_null(strstr(err.message, "hunter2"));
    assert_null(strstr(err.message, "bob"));
}

/* Microsoft Entra ID: QueueServiceUri (the Functions identity-based connection), https only. */
static void test_account_entra_id_service_uri(void **state)
{
    (void)state;
    unsetenv("AZURE_TENANT_ID");
    unsetenv("AZURE_FEDERATED_TOKEN_FILE");
    unsetenv("IDENTITY_ENDPOINT");
    sqlq_account *a = parse_ok("QueueServiceUri=https://acct.queue.core.windows.net/;"
                               "Credential=managedidentity;ClientId=1234-abcd");
    assert_string_equal(a->endpoint, "https://acct.queue.core.windows.net");
    assert_string_equal(a->name, "acct");
    assert_null(a->key);
    assert_null(a->sas);
    assert_non_null(a->token);
    assert_string_equal(a->credential, "managedidentity");
    assert_string_equal(a->client_id, "1234-abcd");
    sqlq_account_destroy(a);
    a = parse_ok("queueserviceuri=https://127.0.0.1:10001/devstoreaccount1"); /* the chain */
    assert_non_null(a->token);
    assert_string_equal(a->name, "devstoreaccount1");
    sqlq_account_destroy(a);
    parse_fails("QueueServiceUri=http://127.0.0.1:10001/devstoreaccount1",
                "must be https://: an Entra ID token is sent only over https");
    parse_fails("QueueServiceUri=https://acct.queue.core.windows.net;AccountKey=" KEY,
                "takes no AccountKey or SharedAccessSignature");
    parse_fails("QueueServiceUri=https://acct.queue.core.windows.net;Credential=certificate",
                "credential 'certificate' is not known (allowed managedidentity");
    parse_fails("QueueServiceUri=https://acct.queue.core.windows.net;Credential=workloadidentity",
                "credential workloadidentity needs AZURE_FEDERATED_TOKEN_FILE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_account_full_connection_string),
        cmocka_unit_test(test_account_defaults_case_whitespace_and_order),
        cmocka_unit_test(test_account_queue_endpoint_override),
        cmocka_unit_test(test_account_shared_access_signature),
        cmocka_unit_test(test_account_development_storage),
        cmocka_unit_test(test_account_service_url_with_sas),
        cmocka_unit_test(test_account_errors_name_the_problem),
        cmocka_unit_test(test_account_registers_secrets_with_the_log),
        cmocka_unit_test(test_account_refuses_plain_http_to_remote_hosts),
        cmocka_unit_test(test_account_queue_scoped_sas_url),
        cmocka_unit_test(test_account_limits_and_redaction),
        cmocka_unit_test(test_account_entra_id_service_uri),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
