/* queue_client's retry rules against a scripted fake queue service (libmicrohttpd on
 * 127.0.0.1) and a fake clock, so back-off never waits: server hints, retry budgets, clear's
 * repetition on OperationTimedOut, finals that must not be retried, put_many retries per item,
 * one budget per client (operator tools), and shutdown during back-off. */
#include "queue_client.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PUT_OK_BODY                                                                                \
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessagesList><QueueMessage>"                  \
    "<MessageId>m-1</MessageId><InsertionTime>Mon, 01 Jan 2024 00:00:00 GMT</InsertionTime>"        \
    "<ExpirationTime>Mon, 08 Jan 2024 00:00:00 GMT</ExpirationTime><PopReceipt>pr</PopReceipt>"     \
    "<TimeNextVisible>Mon, 01 Jan 2024 00:00:00 GMT</TimeNextVisible></QueueMessage>"               \
    "</QueueMessagesList>"

typedef struct reply {
    int status;
    const char *code;        /* x-ms-error-code, or NULL */
    const char *hint_header; /* "Retry-After" or "x-ms-retry-after-ms", or NULL */
    const char *hint;
    const char *body;
} reply;

/* The server answers requests with script[0], script[1], …; the last entry repeats. Or, when
 * every_nth > 0, with busy for every n-th request and ok otherwise. */
static struct {
    pthread_mutex_t lock;
    const reply *script;
    size_t nscript;
    int every_nth;
    reply busy, ok;
    int requests;
    char last_method[16];
    uint64_t work_ms; /* each answer takes this long on the fake clock (a service at work) */
} server = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, {0}, {0}, 0, "", 0};

static void fake_advance(uint64_t ms);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)url;
    (void)version;
    (void)upload;
    static int marker;
    if (*con_cls == NULL) {
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&server.lock);
    int n = server.requests++;
    snprintf(server.last_method, sizeof(server.last_method), "%s", method);
    reply r;
    if (server.every_nth > 0)
        r = (n + 1) % server.every_nth == 0 ? server.busy : server.ok;
    else
        r = server.script[(size_t)n < server.nscript ? (size_t)n : server.nscript - 1];
    fake_advance(server.work_ms);
    pthread_mutex_unlock(&server.lock);
    const char *body = r.body ? r.body : "";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, "x-ms-request-id", "fake-request");
    if (r.code)
        MHD_add_response_header(resp, "x-ms-error-code", r.code);
    if (r.hint_header)
        MHD_add_response_header(resp, r.hint_header, r.hint);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)r.status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* A clock that only pretends to sleep: it records each delay and advances its time (now is read
 * and moved atomically: the fake server's thread advances it too). */
static struct {
    uint64_t now;
    uint64_t sleeps[64];
    size_t nsleeps;
    bool refuse; /* sleep reports shutdown */
} fake;

static void fake_advance(uint64_t ms)
{
    __atomic_fetch_add(&fake.now, ms, __ATOMIC_SEQ_CST);
}

static uint64_t fake_now(void *ctx)
{
    (void)ctx;
    return __atomic_load_n(&fake.now, __ATOMIC_SEQ_CST);
}

static bool fake_sleep(void *ctx, uint64_t ms)
{
    (void)ctx;
    if (ms > 0 && fake.nsleeps < 64)
        fake.sleeps[fake.nsleeps++] = ms;
    fake_advance(ms);
    return !fake.refuse;
}

static double fake_random(void *ctx)
{
    (void)ctx;
    return 0.5;
}

static const sqlq_clock fake_clock = {fake_now, fake_sleep, fake_random, NULL};

typedef struct fixture {
    struct MHD_Daemon *daemon;
    sqlq_account *account;
    sqlq_queue_client *client;
} fixture;

static void script(const reply *r, size_t n)
{
    pthread_mutex_lock(&server.lock);
    server.script = r;
    server.nscript = n;
    server.every_nth = 0;
    server.requests = 0;
    pthread_mutex_unlock(&server.lock);
    memset(&fake, 0, sizeof(fake));
}

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof(f));
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* port 0: any free one */
    f.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, NULL,
                                MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
    if (!f.daemon)
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(f.daemon, MHD_DAEMON_INFO_BIND_PORT);
    char conn[512];
    snprintf(conn, sizeof(conn),
             "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
             "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
             "QueueEndpoint=http://127.0.0.1:%u/devstoreaccount1",
             (unsigned)info->port);
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_account_parse(conn, &f.account, &err) != SQLQ_OK)
        return -1;
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.clock = &fake_clock;
    o.retry.max_retries = 5;
    if (sqlq_queue_client_create(f.account, &o, &f.client, &err) != SQLQ_OK)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sqlq_queue_client_destroy(f->client);
    sqlq_account_destroy(f->account);
    MHD_stop_daemon(f->daemon);
    return 0;
}

static void test_faults_server_busy_then_ok_honours_retry_after(void **state)
{
    fixture *f = *state;
    static const reply r[] = {{503, "ServerBusy", "Retry-After", "2", NULL},
                              {500, "InternalError", "x-ms-retry-after-ms", "1500", NULL},
                              {201, NULL, NULL, NULL, PUT_OK_BODY}};
    script(r, 3);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_message m;
    assert_int_equal(sqlq_queue_put(f->client, "orders", "x", 1, NULL, &m, &err), SQLQ_OK);
    assert_string_equal(m.id, "m-1");
    sqlq_message_free(&m);
    assert_int_equal(server.requests, 3);
    assert_int_equal(fake.nsleeps, 2);
    assert_true(fake.sleeps[0] >= 2000); /* Retry-After: 2 (seconds) */
    assert_true(fake.sleeps[1] >= 1500); /* x-ms-retry-after-ms */
}

static void test_faults_budget_spent_reports_transient(void **state)
{
    fixture *f = *state;
    static const reply r[] = {{503, "ServerBusy", NULL, NULL, NULL}};
    script(r, 1);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_put(f->client, "orders", "x", 1, NULL, NULL, &err), SQLQ_E_HTTP);
    assert_int_equal(server.requests, 6); /* 1 + max_retries 5 */
    assert_int_equal(fake.nsleeps, 5);
    assert_true(err.transient);
    assert_int_equal(err.http_status, 503);
    assert_string_equal(err.azure_code, "ServerBusy");
    assert_string_equal(err.request_id, "fake-request");
    assert_non_null(strstr(err.message, "gave up after 5 retries"));
}

/* A client of its own on the fake server with one_budget and max_retries retries. */
static sqlq_queue_client *one_budget_client(const fixture *f, unsigned max_retries)
{
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.clock = &fake_clock;
    o.retry.max_retries = max_retries;
    o.one_budget = true;
    sqlq_queue_client *c = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_client_create(f->account, &o, &c, &err), SQLQ_OK);
    return c;
}

/* one_budget (operator tools): once a call has spent the retry budget on a transient failure,
 * every later call on the client fails at once with it, sending nothing, so a command in an
 * outage stops after one budget, not one per request. A final failure spends nothing. */
static void test_faults_one_budget_per_client(void **state)
{
    fixture *f = *state;
    sqlq_queue_client *c = one_budget_client(f, 5);
    sqlq_error err;
    sqlq_error_clear(&err);
    static const reply r404[] = {{404, "QueueNotFound", NULL, NULL, NULL}};
    script(r404, 1);
    assert_int_equal(sqlq_queue_put(c, "orders", "x", 1, NULL, NULL, &err), SQLQ_E_NOT_FOUND);
    static const reply r503[] = {{503, "ServerBusy", NULL, NULL, NULL}};
    script(r503, 1);
    sqlq_error_clear(&err);
    sqlq_queue_props props;
    assert_int_equal(sqlq_queue_properties(c, "orders", &props, &err), SQLQ_E_HTTP);
    assert_int_equal(server.requests, 6); /* the 404 spent nothing: 1 + max_retries 5 */

    sqlq_error again;
    sqlq_error_clear(&again);
    sqlq_message_list list = {NULL, 0};
    assert_int_equal(sqlq_queue_get(c, "orders", 32, 30, &list, &again), SQLQ_E_HTTP);
    assert_true(again.transient);
    assert_int_equal(again.http_status, 503);
    assert_string_equal(again.message, err.message); /* the cause: the call that spent it */
    sqlq_put_item items[2] = {{"a", 1, SQLQ_OK, {0}}, {"b", 1, SQLQ_OK, {0}}};
    assert_int_equal(sqlq_queue_put_many(c, "orders", items, 2, 2, NULL), SQLQ_E_HTTP);
    assert_int_equal(items[1].result, SQLQ_E_HTTP);
    assert_int_equal(server.requests, 6); /* nothing more was sent */
    assert_int_equal(fake.nsleeps, 5);    /* nor waited for */
    sqlq_queue_client_destroy(c);

    /* Without one_budget (the daemons) each call has a budget of its own. */
    script(r503, 1);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_properties(f->client, "orders", &props, &err), SQLQ_E_HTTP);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_properties(f->client, "orders", &props, &err), SQLQ_E_HTTP);
    assert_int_equal(server.requests, 12);
}

/* An item of put_many whose retries outlast the budget spends it for the client too. */
static void test_faults_one_budget_spent_by_put_many(void **state)
{
    fixture *f = *state;
    sqlq_queue_client *c = one_budget_client(f, 2);
    sqlq_error err;
    sqlq_error_clear(&err);
    static const reply r503[] = {{503, "ServerBusy", NULL, NULL, NULL}};
    script(r503, 1);
    sqlq_put_item items[1] = {{"a", 1, SQLQ_OK, {0}}};
    assert_int_equal(sqlq_queue_put_many(c, "orders", items, 1, 1, NULL), SQLQ_OK); /* per item */
    assert_int_equal(items[0].result, SQLQ_E_HTTP);
    assert_int_equal(server.requests, 3); /* 1 + max_retries 2 */
    sqlq_queue_props props;
    assert_int_equal(sqlq_queue_properties(c, "orders", &props, &err), SQLQ_E_HTTP);
    assert_true(err.transient);
    assert_int_equal(server.requests, 3);
    sqlq_queue_client_destroy(c);
}

static void test_faults_final_statuses_are_not_retried(void **state)
{
    fixture *f = *state;
    static const reply r404[] = {{404, "QueueNotFound", NULL, NULL, NULL}};
    static const reply r501[] = {{501, "NotImplemented", NULL, NULL, NULL}};
    sqlq_error err;
    script(r404, 1);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_put(f->client, "orders", "x", 1, NULL, NULL, &err), SQLQ_E_NOT_FOUND);
    assert_int_equal(server.requests, 1);
    assert_int_equal(fake.nsleeps, 0);
    script(r501, 1);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_put(f->client, "orders", "x", 1, NULL, NULL, &err), SQLQ_E_HTTP);
    assert_int_equal(server.requests, 1);
    assert_false(err.transient);
}

static void test_faults_clear_repeats_on_operation_timed_out(void **state)
{
    fixture *f = *state;
    static const reply r[] = {{500, "OperationTimedOut", NULL, NULL, NULL},
                              {500, "OperationTimedOut", NULL, NULL, NULL},
                              {500, "OperationTimedOut", NULL, NULL, NULL},
                              {500, "OperationTimedOut", NULL, NULL, NULL},
                              {500, "OperationTimedOut", NULL, NULL, NULL},
                              {500, "OperationTimedOut", NULL, NULL, NULL},
                              {500, "OperationTimedOut", NULL, NULL, NULL},
                              {204, NULL, NULL, NULL, NULL}};
    script(r, 8);
    server.work_ms = 5000; /* each timeout came after the service worked on the queue */
    sqlq_error err;
    sqlq_error_clear(&err);
    /* More repetitions than max_retries allows retries, and none of them waits. */
    assert_int_equal(sqlq_queue_clear(f->client, "orders", &err), SQLQ_OK);
    server.work_ms = 0;
    assert_int_equal(server.requests, 8);
    assert_int_equal(fake.nsleeps, 0);
    assert_string_equal(server.last_method, "DELETE");
}

/* A persistent 500 OperationTimedOut answered at once is a fault, not progress: back-off and
 * the retry budget, never a hot loop. */
static void test_faults_clear_backs_off_on_instant_timeouts(void **state)
{
    fixture *f = *state;
    static const reply r[] = {{500, "OperationTimedOut", NULL, NULL, NULL}};
    script(r, 1);
    server.work_ms = 0;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_clear(f->client, "orders", &err), SQLQ_E_HTTP);
    assert_int_equal(server.requests, 6); /* 1 + max_retries 5 */
    assert_int_equal(fake.nsleeps, 5);
    assert_true(err.transient);
}

static void test_faults_put_many_retries_each_item(void **state)
{
    fixture *f = *state;
    script(NULL, 0);
    pthread_mutex_lock(&server.lock);
    server.every_nth = 3;
    server.busy = (reply){503, "ServerBusy", "x-ms-retry-after-ms", "20", NULL};
    server.ok = (reply){201, NULL, NULL, NULL, PUT_OK_BODY};
    pthread_mutex_unlock(&server.lock);
    sqlq_put_item items[30];
    for (int i = 0; i < 30; i++) {
        items[i].body = "body";
        items[i].len = 4;
        items[i].result = SQLQ_E_INVALID;
    }
    assert_int_equal(sqlq_queue_put_many(f->client, "orders", items, 30, 4, NULL), SQLQ_OK);
    for (int i = 0; i < 30; i++)
        assert_int_equal(items[i].result, SQLQ_OK);
    /* Every third request was refused and retried: 30 successes need 45 requests or so. */
    assert_true(server.requests >= 44 && server.requests <= 46);
    assert_true(fake.nsleeps > 0);
}

/* A server of its own for the connection test: a thread per connection, each answer 201 after
 * 20 ms (real time), so that 16 puts in flight need 16 connections; it counts the client
 * ports it saw, one per TCP connection. */
static struct {
    pthread_mutex_t lock;
    unsigned short ports[256];
    int connections, requests;
} slow = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0};

static enum MHD_Result on_slow_request(void *cls, struct MHD_Connection *conn, const char *url,
                                       const char *method, const char *version, const char *upload,
                                       size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload;
    static int marker;
    if (*con_cls == NULL) {
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    unsigned short port = 0;
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        port = ntohs(((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_port);
    pthread_mutex_lock(&slow.lock);
    slow.requests++;
    bool seen = false;
    for (int i = 0; i < slow.connections && !seen; i++)
        seen = slow.ports[i] == port;
    if (!seen && slow.connections < 256)
        slow.ports[slow.connections++] = port;
    pthread_mutex_unlock(&slow.lock);
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        strlen(PUT_OK_BODY), (void *)(uintptr_t)PUT_OK_BODY, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(conn, 201, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Short batches (fewer changes than max_in_flight) must not shrink the client's connection
 * cache: they did (CURLMOPT_MAXCONNECTS followed each batch's size, so each connection a short
 * batch handed back closed an idle one), and at a steady load of short and longer batches many
 * puts opened a new TCP connection (bench/latency.py, 4 tables x 2 instances at 1,000
 * commits/s: 449 connections for 3,010 puts). Full, 8 short, full: the last full batch finds
 * the first one's 16 connections still open. */
static void test_faults_short_batches_keep_connections(void **state)
{
    (void)state;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                                            0, NULL, NULL, on_slow_request, NULL, MHD_OPTION_SOCK_ADDR,
                                            (struct sockaddr *)&addr, MHD_OPTION_END);
    assert_non_null(d);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char conn[512];
    snprintf(conn, sizeof(conn),
             "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
             "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
             "QueueEndpoint=http://127.0.0.1:%u/devstoreaccount1",
             (unsigned)info->port);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_account *account = NULL;
    sqlq_queue_client *client = NULL;
    assert_int_equal(sqlq_account_parse(conn, &account, &err), SQLQ_OK);
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    assert_int_equal(sqlq_queue_client_create(account, &o, &client, &err), SQLQ_OK);
    sqlq_put_item items[16];
    int after_first = 0;
    for (int round = 0; round < 10; round++) {
        size_t n = round == 0 || round == 9 ? 16 : 2; /* full, 8 short ones, full */
        memset(items, 0, sizeof(items));
        for (size_t i = 0; i < n; i++) {
            items[i].body = "body";
            items[i].len = 4;
        }
        assert_int_equal(sqlq_queue_put_many(client, "orders", items, n, 16, NULL), SQLQ_OK);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(items[i].result, SQLQ_OK);
        if (round == 0) {
            pthread_mutex_lock(&slow.lock);
            after_first = slow.connections;
            pthread_mutex_unlock(&slow.lock);
        }
    }
    sqlq_queue_client_destroy(client);
    sqlq_account_destroy(account);
    MHD_stop_daemon(d);
    assert_int_equal(slow.requests, 48);
    assert_int_equal(after_first, 16); /* 16 in flight, each answer 20 ms: 16 connections */
    assert_int_equal(slow.connections, 16);
}

static void test_faults_shutdown_during_backoff_cancels(void **state)
{
    fixture *f = *state;
    static const reply r[] = {{503, "ServerBusy", NULL, NULL, NULL}};
    script(r, 1);
    fake.refuse = true;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_put(f->client, "orders", "x", 1, NULL, NULL, &err), SQLQ_E_CANCELLED);
    assert_int_equal(server.requests, 1);
    sqlq_put_item items[3] = {{"a", 1, SQLQ_OK, {0}}, {"b", 1, SQLQ_OK, {0}}, {"c", 1, SQLQ_OK, {0}}};
    assert_int_equal(sqlq_queue_put_many(f->client, "orders", items, 3, 2, NULL), SQLQ_E_CANCELLED);
    for (int i = 0; i < 3; i++)
        assert_int_equal(items[i].result, SQLQ_E_CANCELLED);
}

/* A body over the 16 MiB cap is named as such, not as curl's "Failure writing output". */
static void test_faults_oversized_response_is_named(void **state)
{
    fixture *f = *state;
    size_t n = (size_t)17 * 1024 * 1024;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'x', n);
    big[n] = '\0';
    reply r[] = {{200, NULL, NULL, NULL, big}};
    script(r, 1);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_message_list list;
    memset(&list, 0, sizeof(list));
    sqlq_result res = sqlq_queue_peek(f->client, "orders", 1, &list, &err);
    sqlq_message_list_free(&list);
    free(big);
    assert_int_equal(res, SQLQ_E_NETWORK);
    assert_false(err.transient);
    assert_int_equal(server.requests, 1); /* not retried: the same answer would come back */
    if (!strstr(err.message, "response larger than 16777216 bytes"))
        fail_msg("message: %s", err.message);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_faults_server_busy_then_ok_honours_retry_after),
        cmocka_unit_test(test_faults_budget_spent_reports_transient),
        cmocka_unit_test(test_faults_one_budget_per_client),
        cmocka_unit_test(test_faults_one_budget_spent_by_put_many),
        cmocka_unit_test(test_faults_final_statuses_are_not_retried),
        cmocka_unit_test(test_faults_clear_repeats_on_operation_timed_out),
        cmocka_unit_test(test_faults_clear_backs_off_on_instant_timeouts),
        cmocka_unit_test(test_faults_put_many_retries_each_item),
        cmocka_unit_test(test_faults_short_batches_keep_connections),
        cmocka_unit_test(test_faults_shutdown_during_backoff_cancels),
        cmocka_unit_test(test_faults_oversized_response_is_named),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
