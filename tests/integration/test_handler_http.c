/* The --http handler against a real HTTP server (libmicrohttpd on 127.0.0.1): the body arrives
 * byte for byte with the X-Sqlq-* headers and a content type chosen from the body; 2xx is
 * success, anything else a failure carrying the status and the start of the response; the
 * message deadline cuts a slow request short; a secret in the URL's query never reaches the
 * error text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "handler_http.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct seen {
    pthread_mutex_t mu;
    char body[4096];
    size_t body_len;
    char id[128], count[32], inserted[64], queue[64], type[128];
    int requests;
} seen;

static seen last = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct MHD_Daemon *daemon_;
static char base[64];
static sqlq_clock clock_;
static atomic_int no_cancel;

typedef struct upload {
    char data[4096];
    size_t len;
} upload;

static void copy_header(struct MHD_Connection *c, const char *name, char *out, size_t size)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    snprintf(out, size, "%s", v ? v : "");
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *data,
                             size_t *data_size, void **con_cls)
{
    (void)cls;
    (void)method;
    (void)version;
    upload *u = *con_cls;
    if (!u) {
        *con_cls = calloc(1, sizeof(upload));
        return MHD_YES;
    }
    if (*data_size) {
        size_t n = *data_size < sizeof(u->data) - u->len ? *data_size : sizeof(u->data) - u->len;
        memcpy(u->data + u->len, data, n);
        u->len += n;
        *data_size = 0;
        return MHD_YES;
    }
    pthread_mutex_lock(&last.mu);
    memcpy(last.body, u->data, u->len);
    last.body_len = u->len;
    copy_header(c, "X-Sqlq-Message-Id", last.id, sizeof(last.id));
    copy_header(c, "X-Sqlq-Dequeue-Count", last.count, sizeof(last.count));
    copy_header(c, "X-Sqlq-Insertion-Time", last.inserted, sizeof(last.inserted));
    copy_header(c, "X-Sqlq-Queue", last.queue, sizeof(last.queue));
    copy_header(c, "Content-Type", last.type, sizeof(last.type));
    last.requests++;
    pthread_mutex_unlock(&last.mu);
    free(u);
    *con_cls = NULL;
    unsigned status = 200;
    const char *text = "ok";
    if (strcmp(url, "/fail") == 0) {
        status = 500;
        text = "database \"orders\" is down\nretry later";
    } else if (strcmp(url, "/slow") == 0) {
        sleep(2);
    } else if (strcmp(url, "/created") == 0) {
        status = 201;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)(uintptr_t)text,
                                                             MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static int start_server(void **state)
{
    (void)state;
    clock_ = sqlq_clock_system(NULL);
    daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
                               NULL, NULL, serve, NULL, MHD_OPTION_END);
    if (!daemon_)
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", (unsigned)info->port);
    return 0;
}

static int stop_server(void **state)
{
    (void)state;
    MHD_stop_daemon(daemon_);
    return 0;
}

static sqlq_result post(const char *path, const char *body, size_t len, uint64_t timeout_ms,
                        sqlq_error *err)
{
    char url[256];
    snprintf(url, sizeof(url), "%s%s", base, path);
    sqlq_handler_http *h = NULL;
    sqlq_error_clear(err);
    assert_int_equal(sqlq_handler_http_create(url, 10000, &h, err), SQLQ_OK);
    sqlq_handler hd = sqlq_handler_http_bind(h);
    void *w = NULL;
    assert_int_equal(hd.open(hd.ctx, &w, err), SQLQ_OK);
    sqlq_received d = {.queue = "orders",
                       .message_id = "5d1e-77",
                       .body = body,
                       .body_len = len,
                       .dequeue_count = 2,
                       .insertion_time = 1714564800,
                       .deadline_ms = timeout_ms ? sqlq_clock_now_ms(&clock_) + timeout_ms : 0,
                       .clock = &clock_,
                       .cancel = &no_cancel};
    sqlq_result r = hd.handle(w, &d, err);
    hd.close(w);
    sqlq_handler_http_destroy(h);
    return r;
}

static void test_handler_http_json_body_and_headers(void **state)
{
    (void)state;
    const char *body = "{\"order\":1,\"note\":\"é <&>\"}";
    sqlq_error err;
    assert_int_equal(post("/ok", body, strlen(body), 0, &err), SQLQ_OK);
    pthread_mutex_lock(&last.mu);
    assert_int_equal(last.body_len, strlen(body));
    assert_memory_equal(last.body, body, last.body_len);
    assert_string_equal(last.id, "5d1e-77");
    assert_string_equal(last.count, "2");
    assert_string_equal(last.inserted, "2024-05-01T12:00:00Z");
    assert_string_equal(last.queue, "orders");
    assert_string_equal(last.type, "application/json");
    pthread_mutex_unlock(&last.mu);
    assert_int_equal(post("/created", body, strlen(body), 0, &err), SQLQ_OK); /* any 2xx */
}

static void test_handler_http_content_types(void **state)
{
    (void)state;
    sqlq_error err;
    assert_int_equal(post("/ok", "just text", 9, 0, &err), SQLQ_OK);
    assert_string_equal(last.type, "text/plain; charset=utf-8");
    const char bin[] = {'\x00', '\xff', '\xfe', 'a'};
    assert_int_equal(post("/ok", bin, sizeof(bin), 0, &err), SQLQ_OK);
    assert_string_equal(last.type, "application/octet-stream");
    assert_int_equal(last.body_len, sizeof(bin));
    assert_memory_equal(last.body, bin, sizeof(bin));
}

static void test_handler_http_error_status_fails(void **state)
{
    (void)state;
    sqlq_error err;
    assert_int_equal(post("/fail", "{}", 2, 0, &err), SQLQ_E_HTTP);
    assert_int_equal(err.http_status, 500);
    assert_non_null(strstr(err.message, "answered 500: database 'orders' is down retry later"));
}

static void test_handler_http_deadline(void **state)
{
    (void)state;
    sqlq_error err;
    uint64_t t0 = sqlq_clock_now_ms(&clock_);
    assert_int_equal(post("/slow", "{}", 2, 300, &err), SQLQ_E_TIMEOUT);
    uint64_t took = sqlq_clock_now_ms(&clock_) - t0;
    assert_true(took >= 250 && took < 1500);
}

static void test_handler_http_url_secret_not_in_errors(void **state)
{
    (void)state;
    sqlq_error err;
    assert_int_equal(post("/fail?code=s3cr3t-function-key", "{}", 2, 0, &err), SQLQ_E_HTTP);
    assert_null(strstr(err.message, "s3cr3t"));
    assert_non_null(strstr(err.message, "/fail answered 500"));
    sqlq_handler_http *h = NULL;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_handler_http_create("ftp://x/?code=s3cr3t", 1000, &h, &err),
                     SQLQ_E_INVALID);
    assert_null(strstr(err.message, "s3cr3t"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handler_http_json_body_and_headers),
        cmocka_unit_test(test_handler_http_content_types),
        cmocka_unit_test(test_handler_http_error_status_fails),
        cmocka_unit_test(test_handler_http_deadline),
        cmocka_unit_test(test_handler_http_url_secret_not_in_errors),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
