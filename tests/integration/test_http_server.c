/* The health/metrics endpoint on a real socket, spoken to with libcurl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "buf.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"

#include <curl/curl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    long status;
    char body[8192];
    size_t len;
    char content_type[128];
} response;

static size_t on_body(char *data, size_t size, size_t n, void *p)
{
    response *r = p;
    size_t len = size * n;
    size_t room = sizeof(r->body) - 1 - r->len;
    size_t take = len < room ? len : room;
    memcpy(r->body + r->len, data, take);
    r->len += take;
    r->body[r->len] = '\0';
    return len;
}

/* One request on handle h (reused by callers that want a kept-alive connection). */
static void request_on(CURL *h, uint16_t port, const char *method, const char *path, response *r)
{
    char url[128];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
    memset(r, 0, sizeof(*r));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_NOBODY, strcmp(method, "HEAD") == 0 ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(h);
    assert_int_equal(rc, CURLE_OK);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    char *ct = NULL;
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(r->content_type, sizeof(r->content_type), "%s", ct ? ct : "");
}

static void request(uint16_t port, const char *method, const char *path, response *r)
{
    CURL *h = curl_easy_init();
    assert_non_null(h);
    request_on(h, port, method, path, r);
    curl_easy_cleanup(h);
}

typedef struct {
    atomic_int db;
    atomic_int queue;
} readiness;

static bool check_ready(void *ctx, char *reason, size_t size)
{
    readiness *r = ctx;
    if (!atomic_load(&r->db)) {
        snprintf(reason, size, "database not connected");
        return false;
    }
    if (!atomic_load(&r->queue)) {
        snprintf(reason, size, "queue service not reachable");
        return false;
    }
    return true;
}

static void test_http_server_endpoints(void **state)
{
    (void)state;
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    sqlq_label l[] = {{"table", "orders"}, {"queue", "q"}};
    sqlq_counter *c = sqlq_metrics_counter(m, SQLQ_METRIC_CHANGES_PUBLISHED, NULL, l, 2);
    sqlq_counter_add(c, 3);
    readiness rd = {0, 0};
    sqlq_http_server *s = NULL;
    sqlq_error err = {0};
    assert_int_equal(sqlq_http_server_start("127.0.0.1:0", m, check_ready, &rd, &s, &err), SQLQ_OK);
    assert_non_null(s);
    uint16_t port = sqlq_http_server_port(s);
    assert_true(port > 0);

    response r;
    request(port, "GET", "/healthz", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ok\n");

    request(port, "GET", "/readyz", &r);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.body, "not ready: database not connected\n");
    atomic_store(&rd.db, 1);
    request(port, "GET", "/readyz", &r);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.body, "not ready: queue service not reachable\n");
    atomic_store(&rd.queue, 1);
    request(port, "GET", "/readyz", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "ready\n");
    atomic_store(&rd.db, 0);
    request(port, "GET", "/readyz", &r);
    assert_int_equal(r.status, 503);

    request(port, "GET", "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
    assert_non_null(
        strstr(r.body, "sqlq_changes_published_total{table=\"orders\",queue=\"q\"} 3\n"));
    sqlq_counter_inc(c);
    request(port, "GET", "/metrics", &r);
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_metrics_render(m, &b), SQLQ_OK);
    assert_string_equal(r.body, sqlq_buf_str(&b)); /* exactly the registry's text */
    sqlq_buf_free(&b);
    assert_non_null(strstr(r.body, "{table=\"orders\",queue=\"q\"} 4\n"));

    request(port, "HEAD", "/healthz", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 0);
    request(port, "POST", "/metrics", &r);
    assert_int_equal(r.status, 405);
    request(port, "GET", "/nope", &r);
    assert_int_equal(r.status, 404);

    sqlq_http_server_stop(s);
    sqlq_metrics_destroy(m);
}

static void test_http_server_without_metrics_or_readiness(void **state)
{
    (void)state;
    sqlq_http_server *s = NULL;
    sqlq_error err = {0};
    assert_int_equal(sqlq_http_server_start("localhost:0", NULL, NULL, NULL, &s, &err), SQLQ_OK);
    response r;
    request(sqlq_http_server_port(s), "GET", "/readyz", &r);
    assert_int_equal(r.status, 200);
    request(sqlq_http_server_port(s), "GET", "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.len, 0);
    sqlq_http_server_stop(s);
}

static void test_http_server_off_and_bad_addresses(void **state)
{
    (void)state;
    sqlq_http_server *s = (sqlq_http_server *)1;
    sqlq_error err = {0};
    assert_int_equal(sqlq_http_server_start(NULL, NULL, NULL, NULL, &s, &err), SQLQ_OK);
    assert_null(s);
    assert_int_equal(sqlq_http_server_start("", NULL, NULL, NULL, &s, &err), SQLQ_OK);
    assert_null(s);
    sqlq_http_server_stop(NULL);
    assert_int_equal(sqlq_http_server_port(NULL), 0);

    const char *bad[] = {"9464", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000",
                         "::1:9464", "[::1:9464"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sqlq_error_clear(&err);
        assert_int_equal(sqlq_http_server_start(bad[i], NULL, NULL, NULL, &s, &err),
                         SQLQ_E_INVALID);
        assert_null(s);
        assert_non_null(strstr(err.message, bad[i])); /* the message names the value */
    }

    /* A port already taken: the error says why. */
    sqlq_http_server *first = NULL;
    assert_int_equal(sqlq_http_server_start("127.0.0.1:0", NULL, NULL, NULL, &first, &err),
                     SQLQ_OK);
    char taken[64];
    snprintf(taken, sizeof(taken), "127.0.0.1:%u", (unsigned)sqlq_http_server_port(first));
    sqlq_error_clear(&err);
    sqlq_log_set_level(SQLQ_LOG_ERROR); /* the bind failure is logged as a warning too */
    assert_int_equal(sqlq_http_server_start(taken, NULL, NULL, NULL, &s, &err), SQLQ_E_IO);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    assert_null(s);
    assert_non_null(strstr(err.message, taken));
    assert_non_null(strstr(err.message, "in use"));
    sqlq_http_server_stop(first);
}

static void test_http_server_ipv6(void **state)
{
    (void)state;
    sqlq_http_server *s = NULL;
    sqlq_error err = {0};
    sqlq_log_set_level(SQLQ_LOG_ERROR);
    sqlq_result r = sqlq_http_server_start("[::1]:0", NULL, NULL, NULL, &s, &err);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    if (r != SQLQ_OK) {
        print_message("no IPv6 loopback here (%s): skipped\n", err.message);
        skip();
    }
    char url[64];
    snprintf(url, sizeof(url), "http://[::1]:%u/healthz", (unsigned)sqlq_http_server_port(s));
    response resp;
    memset(&resp, 0, sizeof(resp));
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
    curl_easy_cleanup(h);
    assert_int_equal(resp.status, 200);
    sqlq_http_server_stop(s);
}

typedef struct {
    uint16_t port;
    int ok;
} scraper;

static void *scrape(void *p)
{
    scraper *sc = p;
    CURL *h = curl_easy_init();
    for (int i = 0; i < 50; i++) {
        response r;
        request_on(h, sc->port, "GET", "/metrics", &r);
        sc->ok += r.status == 200 && strstr(r.body, "scrapes_total") != NULL;
    }
    curl_easy_cleanup(h);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Concurrent scrapes while counters move, then a stop with a kept-alive connection open. */
static void test_http_server_concurrent_and_clean_stop(void **state)
{
    (void)state;
    sqlq_metrics *m;
    assert_int_equal(sqlq_metrics_create(&m), SQLQ_OK);
    sqlq_counter *c = sqlq_metrics_counter(m, "scrapes_total", "h", NULL, 0);
    sqlq_http_server *s = NULL;
    sqlq_error err = {0};
    assert_int_equal(sqlq_http_server_start("127.0.0.1:0", m, NULL, NULL, &s, &err), SQLQ_OK);
    scraper sc[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        sc[i] = (scraper){sqlq_http_server_port(s), 0};
        assert_int_equal(pthread_create(&t[i], NULL, scrape, &sc[i]), 0);
    }
    for (int i = 0; i < 100000; i++)
        sqlq_counter_inc(c);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(sc[i].ok, 50);
    }

    CURL *keep = curl_easy_init();
    response r;
    request_on(keep, sqlq_http_server_port(s), "GET", "/healthz", &r);
    assert_int_equal(r.status, 200);
    double t0 = now_s();
    sqlq_http_server_stop(s); /* the kept-alive connection must not hold it up */
    double took = now_s() - t0;
    print_message("stop took %.3f s with a kept-alive connection open\n", took);
    assert_true(took < 2.0);
    curl_easy_cleanup(keep);
    sqlq_metrics_destroy(m);
}

/* An address this machine does not have is named with the system's reason. */
static void test_http_server_bind_error_names_address(void **state)
{
    (void)state;
    sqlq_http_server *s = NULL;
    sqlq_error err = {0};
    sqlq_log_set_level(SQLQ_LOG_ERROR);
    assert_int_equal(sqlq_http_server_start("192.0.2.1:9464", NULL, NULL, NULL, &s, &err), SQLQ_E_IO);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    assert_null(s);
    assert_non_null(strstr(err.message, "192.0.2.1:9464"));
    assert_non_null(strstr(err.message, strerror(EADDRNOTAVAIL)));
    assert_null(strstr(err.message, "port 0"));
}

/* A connection from src (a 127/8 address) to the server that sends nothing. */
static int idle_connection(const char *src, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    inet_pton(AF_INET, src, &a.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    a.sin_port = htons(port);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* 40 idle connections (32 starved /healthz before) do not keep probes out. */
static void test_http_server_idle_connections_do_not_starve_probes(void **state)
{
    (void)state;
    sqlq_http_server *s = NULL;
    sqlq_error err = {0};
    assert_int_equal(sqlq_http_server_start("127.0.0.1:0", NULL, NULL, NULL, &s, &err), SQLQ_OK);
    uint16_t port = sqlq_http_server_port(s);
    int fds[40];
    for (size_t i = 0; i < 40; i++)
        fds[i] = idle_connection("127.0.0.2", port);
    usleep(200 * 1000); /* let the server accept them */
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
    double t0 = now_s();
    response r;
    request_on(h, port, "GET", "/healthz", &r);
    double took = now_s() - t0;
    curl_easy_cleanup(h);
    assert_int_equal(r.status, 200);
    assert_true(took < 1.0);
    /* The per-address cap: most of the idle connections were closed by the server at once. */
    size_t closed = 0;
    for (size_t i = 0; i < 40; i++) {
        char c;
        struct timeval tv = {0, 100 * 1000};
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        closed += recv(fds[i], &c, 1, 0) == 0;
        close(fds[i]);
    }
    assert_true(closed >= 40 - 16);
    sqlq_http_server_stop(s);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_server_endpoints),
        cmocka_unit_test(test_http_server_without_metrics_or_readiness),
        cmocka_unit_test(test_http_server_off_and_bad_addresses),
        cmocka_unit_test(test_http_server_ipv6),
        cmocka_unit_test(test_http_server_concurrent_and_clean_stop),
        cmocka_unit_test(test_http_server_bind_error_names_address),
        cmocka_unit_test(test_http_server_idle_connections_do_not_starve_probes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
