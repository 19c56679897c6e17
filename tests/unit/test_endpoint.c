/* endpoint: request building (URL, encoding, SharedKey vs SAS) and response mapping, without a
 * server: exchanges are filled by hand the way http.c fills them. */
#include "credential_token.h"
#include "endpoint.h"
#include "queue_client.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct fixture {
    sqlq_http *http;
    sqlq_http_exchange ex;
} fixture;

static int setup(void **state)
{
    static fixture f;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_http_create(1000, &f.http, &err) != SQLQ_OK ||
        sqlq_http_exchange_init(f.http, &f.ex, &err) != SQLQ_OK)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sqlq_http_exchange_cleanup(f->http, &f->ex);
    sqlq_http_destroy(f->http);
    return 0;
}

static sqlq_endpoint *endpoint_for(const char *conn, sqlq_account **a)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_account_parse(conn, a, &err), SQLQ_OK);
    sqlq_endpoint *ep = NULL;
    assert_int_equal(sqlq_endpoint_create(*a, &ep, &err), SQLQ_OK);
    return ep;
}

static const char *header(const sqlq_http_exchange *ex, const char *prefix)
{
    for (size_t i = 0; i < ex->nheaders; i++)
        if (strncmp(ex->headers[i], prefix, strlen(prefix)) == 0)
            return ex->headers[i];
    return NULL;
}

static void test_endpoint_shared_key_request(void **state)
{
    fixture *f = *state;
    sqlq_account *a;
    sqlq_endpoint *ep = endpoint_for("UseDevelopmentStorage=true", &a);
    sqlq_call call = {"delete message", "DELETE", "orders", false, "id/1+2", {{0}}, 0, NULL, 0};
    sqlq_call_query(&call, "popreceipt", "AQ+/=b==");
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_endpoint_build(ep, &call, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.url), "http://127.0.0.1:10001/devstoreaccount1/orders/"
                                                  "messages/id%2F1%2B2?popreceipt=AQ%2B%2F%3Db%3D%3D");
    assert_string_equal(f->ex.method, "DELETE");
    assert_non_null(header(&f->ex, "Authorization: SharedKey devstoreaccount1:"));
    assert_string_equal(header(&f->ex, "x-ms-version:"), "x-ms-version: " SQLQ_QUEUE_API_VERSION);
    assert_non_null(header(&f->ex, "x-ms-date: "));
    assert_string_equal(header(&f->ex, "Content-Type"), "Content-Type:"); /* none sent */
    assert_int_equal(f->ex.body.len, 0);

    /* A put carries the escaped XML body and its type; list queues has the account's path. */
    sqlq_call put = {"put message", "POST", "orders", true, NULL, {{0}}, 0, "a<b", 3};
    assert_int_equal(sqlq_endpoint_build(ep, &put, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.url), "http://127.0.0.1:10001/devstoreaccount1/orders/messages");
    assert_string_equal(sqlq_buf_str(&f->ex.body),
                        "<QueueMessage><MessageText>a&lt;b</MessageText></QueueMessage>");
    assert_string_equal(header(&f->ex, "Content-Type"), "Content-Type: application/xml");
    sqlq_call list = {"list queues", "GET", NULL, false, NULL, {{0}}, 0, NULL, 0};
    sqlq_call_query(&list, "comp", "list");
    assert_int_equal(sqlq_endpoint_build(ep, &list, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.url), "http://127.0.0.1:10001/devstoreaccount1?comp=list");
    sqlq_endpoint_destroy(ep);
    sqlq_account_destroy(a);
}

static void test_endpoint_sas_request(void **state)
{
    fixture *f = *state;
    sqlq_account *a;
    sqlq_endpoint *ep = endpoint_for("https://acct.queue.core.windows.net/?sv=2019-12-12&sig=abc%2Bdef", &a);
    sqlq_call call = {"get messages", "GET", "q1", true, NULL, {{0}}, 0, NULL, 0};
    sqlq_call_query(&call, "numofmessages", "32");
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_endpoint_build(ep, &call, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.url),
                        "https://acct.queue.core.windows.net/q1/messages?numofmessages=32&sv=2019-12-12&sig=abc%2Bdef");
    assert_null(header(&f->ex, "Authorization"));
    sqlq_call list = {"list queues", "GET", NULL, false, NULL, {{0}}, 0, NULL, 0};
    assert_int_equal(sqlq_endpoint_build(ep, &list, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.url), "https://acct.queue.core.windows.net/?sv=2019-12-12&sig=abc%2Bdef");
    assert_string_equal(sqlq_endpoint_host(ep), "https://acct.queue.core.windows.net");
    sqlq_endpoint_destroy(ep);
    sqlq_account_destroy(a);
}

/* Fill a response as http.c would and map it. */
static sqlq_result outcome(fixture *f, int status, const char *code_header, const char *body,
                           sqlq_net_failure net, sqlq_error *err)
{
    sqlq_account *a;
    sqlq_endpoint *ep = endpoint_for("UseDevelopmentStorage=true", &a);
    sqlq_http_response *r = &f->ex.response;
    r->status = status;
    r->net = net;
    snprintf(r->error_code, sizeof(r->error_code), "%s", code_header);
    snprintf(r->request_id, sizeof(r->request_id), "req-1");
    snprintf(r->net_message, sizeof(r->net_message), "Connection refused");
    sqlq_buf_reset(&r->body);
    assert_int_equal(sqlq_buf_adds(&r->body, body), SQLQ_OK);
    sqlq_call call = {"put message", "POST", "orders", true, NULL, {{0}}, 0, NULL, 0};
    sqlq_error_clear(err);
    sqlq_result res = sqlq_endpoint_outcome(ep, &call, &f->ex, err);
    sqlq_endpoint_destroy(ep);
    sqlq_account_destroy(a);
    return res;
}

#define ERR_BODY(code, msg) "<?xml version=\"1.0\"?><Error><Code>" code "</Code><Message>" msg \
                            "\nRequestId:x\nTime:y</Message></Error>"

static void test_endpoint_maps_statuses(void **state)
{
    fixture *f = *state;
    sqlq_error e;
    assert_int_equal(outcome(f, 201, "", "", SQLQ_NET_OK, &e), SQLQ_OK);
    assert_int_equal(e.code, SQLQ_OK);
    assert_int_equal(outcome(f, 404, "QueueNotFound", ERR_BODY("QueueNotFound", "The specified queue does not exist."),
                             SQLQ_NET_OK, &e),
                     SQLQ_E_NOT_FOUND);
    assert_string_equal(e.message, "put message 'orders': The specified queue does not exist.");
    assert_int_equal(e.http_status, 404);
    assert_string_equal(e.azure_code, "QueueNotFound");
    assert_string_equal(e.request_id, "req-1");
    assert_false(e.transient);
    /* The code comes from the body when the header is missing. */
    assert_int_equal(outcome(f, 409, "", ERR_BODY("QueueBeingDeleted", "being deleted"), SQLQ_NET_OK, &e),
                     SQLQ_E_CONFLICT);
    assert_string_equal(e.azure_code, "QueueBeingDeleted");
    assert_int_equal(outcome(f, 400, "PopReceiptMismatch", "", SQLQ_NET_OK, &e), SQLQ_E_POP_RECEIPT);
    assert_string_equal(e.message, "put message 'orders': HTTP 400 PopReceiptMismatch");
    assert_int_equal(outcome(f, 400, "MessageTooLarge", "", SQLQ_NET_OK, &e), SQLQ_E_TOO_LARGE);
    assert_int_equal(outcome(f, 413, "", "", SQLQ_NET_OK, &e), SQLQ_E_TOO_LARGE);
    assert_int_equal(outcome(f, 503, "ServerBusy", "", SQLQ_NET_OK, &e), SQLQ_E_HTTP);
    assert_true(e.transient);
    assert_int_equal(outcome(f, 500, "OperationTimedOut", "", SQLQ_NET_OK, &e), SQLQ_E_HTTP);
    assert_true(e.transient);
    assert_int_equal(outcome(f, 501, "", "not xml", SQLQ_NET_OK, &e), SQLQ_E_HTTP);
    assert_false(e.transient);
    assert_int_equal(outcome(f, 403, "AuthenticationFailed", "", SQLQ_NET_OK, &e), SQLQ_E_HTTP);
    assert_false(e.transient);
    assert_int_equal(outcome(f, 0, "", "", SQLQ_NET_CONNECT, &e), SQLQ_E_NETWORK);
    assert_true(e.transient);
    assert_int_equal(e.http_status, 0);
    assert_string_equal(e.message, "put message 'orders': no response from http://127.0.0.1:10001: "
                                   "Connection refused");
    assert_int_equal(outcome(f, 0, "", "", SQLQ_NET_TLS, &e), SQLQ_E_NETWORK);
    assert_false(e.transient);
}


/* An endpoint path that leaves no room for the message id is refused, never overflows. */
static void test_endpoint_long_paths_never_overflow(void **state)
{
    fixture *f = *state;
    sqlq_error err;
    sqlq_error_clear(&err);
    /* A base path whose "/queue/messages" ends exactly at byte 1023 (parse would refuse it,
     * so the account is filled by hand): the endpoint refuses it as configuration. */
    char endpoint[1100] = "https://acct.queue.core.windows.net/";
    size_t at = strlen(endpoint);
    memset(endpoint + at, 'p', 1023 - strlen("/orders/messages") - 1);
    endpoint[at + 1023 - strlen("/orders/messages") - 1] = '\0';
    sqlq_account hand = {"acct", NULL, 0, "sv=1&sig=abcdefgh", endpoint, NULL, false, NULL, NULL, NULL, NULL};
    sqlq_endpoint *ep = NULL;
    assert_int_equal(sqlq_endpoint_create(&hand, &ep, &err), SQLQ_E_INVALID);
    assert_null(ep);

    /* The longest base path accepted, the longest queue name, and ids of every length. */
    endpoint[at + 511] = '\0'; /* "/" and 511 characters */
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_endpoint_create(&hand, &ep, &err), SQLQ_OK);
    char queue[64];
    memset(queue, 'q', 63);
    queue[63] = '\0';
    char id[1100];
    size_t room = 1024 - (512 + 1 + 63 + strlen("/messages")) - 1; /* "/" + id + NUL */
    for (size_t n = room - 3; n < sizeof(id); n = n < room + 2 ? n + 1 : n + 100) {
        memset(id, 'i', n);
        id[n] = '\0';
        sqlq_call call = {"delete message", "DELETE", queue, false, id, {{0}}, 0, NULL, 0};
        sqlq_error_clear(&err);
        sqlq_result r = sqlq_endpoint_build(ep, &call, &f->ex, &err);
        if (n + 1 <= room) {
            assert_int_equal(r, SQLQ_OK);
            assert_non_null(strstr(sqlq_buf_str(&f->ex.url), id));
        } else {
            assert_int_equal(r, SQLQ_E_TOO_LARGE);
        }
    }
    sqlq_endpoint_destroy(ep);
}

static sqlq_result one_token(void *ctx, char **token, int64_t *expires_on, sqlq_error *err)
{
    (void)err;
    int *calls = ctx;
    (*calls)++;
    *token = strdup(*calls == 1 ? "eyJmaXJzdA" : "eyJzZWNvbmQ");
    *expires_on = (int64_t)time(NULL) + 3600;
    return SQLQ_OK;
}

/* The credential seam with a token: Authorization: Bearer, no signature, no SAS; a refused
 * token (401, 403 AuthenticationFailed) is dropped once, a missing role is not its fault. */
static void test_endpoint_bearer_request(void **state)
{
    fixture *f = *state;
    int calls = 0;
    sqlq_token_cache_options o = {one_token, &calls, NULL, NULL, NULL, "test source"};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_account hand = {"acct", NULL, 0, NULL, (char *)"https://acct.queue.core.windows.net",
                         NULL, false, NULL, NULL, NULL, NULL};
    assert_int_equal(sqlq_token_cache_create(&o, &hand.token, &err), SQLQ_OK);
    sqlq_endpoint *ep = NULL;
    assert_int_equal(sqlq_endpoint_create(&hand, &ep, &err), SQLQ_OK);
    sqlq_call call = {"get messages", "GET", "orders", true, NULL, {{0}}, 0, NULL, 0};
    sqlq_call_query(&call, "numofmessages", "1");
    assert_int_equal(sqlq_endpoint_build(ep, &call, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.url),
                        "https://acct.queue.core.windows.net/orders/messages?numofmessages=1");
    assert_string_equal(sqlq_buf_str(&f->ex.authorization), "Authorization: Bearer eyJmaXJzdA");
    assert_null(header(&f->ex, "Authorization:"));
    sqlq_error refused = {.http_status = 403, .azure_code = "AuthorizationPermissionMismatch"};
    assert_false(sqlq_endpoint_refused(ep, &refused));
    refused = (sqlq_error){.http_status = 401, .azure_code = "InvalidAuthenticationInfo"};
    assert_true(sqlq_endpoint_refused(ep, &refused));
    assert_int_equal(sqlq_endpoint_build(ep, &call, &f->ex, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&f->ex.authorization), "Authorization: Bearer eyJzZWNvbmQ");
    assert_int_equal(calls, 2);
    sqlq_endpoint_destroy(ep);
    sqlq_token_cache_destroy(hand.token);

    /* SharedKey and SAS never ask for a retry with a fresh credential. */
    sqlq_account *a;
    ep = endpoint_for("UseDevelopmentStorage=true", &a);
    assert_false(sqlq_endpoint_refused(ep, &refused));
    assert_int_equal(sqlq_endpoint_build(ep, &call, &f->ex, &err), SQLQ_OK);
    assert_int_equal(f->ex.authorization.len, 0);
    sqlq_endpoint_destroy(ep);
    sqlq_account_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoint_shared_key_request),
        cmocka_unit_test(test_endpoint_sas_request),
        cmocka_unit_test(test_endpoint_maps_statuses),
        cmocka_unit_test(test_endpoint_long_paths_never_overflow),
        cmocka_unit_test(test_endpoint_bearer_request),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
