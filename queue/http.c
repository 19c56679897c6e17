#include "http.h"

#include "answer_watch.h"
#include "clock.h"
#include "libcurl.h"
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Responses we read are small; a Get of 32 messages of 64 KiB stays far below this. */
#define MAX_RESPONSE_BODY ((size_t)16 * 1024 * 1024)

/* Driven with curl_multi_socket_action over epoll: a wake-up touches only the connection that
 * has something to say. curl_multi_perform + curl_multi_poll, as before, looked at every
 * transfer on every wake-up (a readability poll() per transfer in flight): 19 poll() calls per
 * message put at 16 in flight, the largest share of sqlq's CPU per message. */
struct sqlq_http {
    CURLM *multi;
    long timeout_ms;
    size_t running;
    int epfd;
    bool timer_set;       /* curl asked to be called back at timer_due_ms */
    char *ca_file;        /* CURLOPT_CAINFO; NULL = the system's CA store */
    uint64_t timer_due_ms;
    bool (*abort_now)(void *ctx);
    void *abort_ctx;
    size_t cache; /* connections kept open between requests: the most ever in flight */
    sqlq_answer_watch *watch; /* optional: told of each request's start and finish */
};

/* How often a waiting perform looks at the abort callback. */
#define ABORT_CHECK_MS 100

/* CURLMOPT_SOCKETFUNCTION: watch (or stop watching) a socket as curl asks. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    sqlq_http *h = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(h->epfd, EPOLL_CTL_DEL, s, NULL);
        curl_multi_assign(h->multi, s, NULL);
        return 0;
    }
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.data.fd = s;
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
    int op = socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(h->epfd, op, s, &ev) != 0) {
        /* a socket number reused behind curl's back: the other operation fits */
        op = errno == EEXIST ? EPOLL_CTL_MOD : errno == ENOENT ? EPOLL_CTL_ADD : -1;
        if (op < 0 || epoll_ctl(h->epfd, op, s, &ev) != 0)
            return -1;
    }
    curl_multi_assign(h->multi, s, h);
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: -1 cancels, 0 means as soon as possible. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    sqlq_http *h = userp;
    h->timer_set = timeout_ms >= 0;
    h->timer_due_ms = sqlq_clock_mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
    return 0;
}

sqlq_result sqlq_http_create(long timeout_ms, sqlq_http **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_result r = sqlq_libcurl_init(err);
    if (r != SQLQ_OK)
        return r;
    sqlq_http *h = calloc(1, sizeof(*h));
    if (!h)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    h->multi = curl_multi_init();
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!h->multi || h->epfd < 0) {
        if (h->multi)
            curl_multi_cleanup(h->multi);
        if (h->epfd >= 0)
            close(h->epfd);
        free(h);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot create a curl multi handle");
    }
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    h->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    sqlq_http_set_parallel(h, 1);
    *out = h;
    return SQLQ_OK;
}

void sqlq_http_destroy(sqlq_http *h)
{
    if (!h)
        return;
    curl_multi_cleanup(h->multi);
    close(h->epfd);
    free(h->ca_file);
    free(h);
}

void sqlq_http_set_abort(sqlq_http *h, bool (*abort_now)(void *ctx), void *ctx)
{
    h->abort_now = abort_now;
    h->abort_ctx = ctx;
}

void sqlq_http_set_watch(sqlq_http *h, sqlq_answer_watch *watch)
{
    h->watch = watch;
}

static void watch_started(const sqlq_http *h)
{
    if (h->watch)
        sqlq_answer_watch_started(h->watch, sqlq_clock_mono_ms());
}

static void watch_finished(const sqlq_http *h)
{
    if (h->watch)
        sqlq_answer_watch_finished(h->watch, sqlq_clock_mono_ms());
}

static bool aborting(const sqlq_http *h)
{
    return h->abort_now && h->abort_now(h->abort_ctx);
}

sqlq_result sqlq_http_set_ca_file(sqlq_http *h, const char *path, sqlq_error *err)
{
    free(h->ca_file);
    h->ca_file = NULL;
    if (!path || !*path)
        return SQLQ_OK;
    FILE *f = fopen(path, "r"); /* a wrong path fails here, not as a TLS error at each request */
    if (!f)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "ca_file: cannot read '%s': %s", path,
                              strerror(errno));
    fclose(f);
    h->ca_file = strdup(path);
    return h->ca_file ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

void sqlq_http_set_parallel(sqlq_http *h, size_t n)
{
    if (n < 1)
        n = 1;
    if (n > SQLQ_HTTP_MAX_PARALLEL)
        n = SQLQ_HTTP_MAX_PARALLEL;
    /* HTTP/1.1 carries one request per connection at a time: n in flight need n connections,
     * and keeping them open lets the next batch reuse them. The cache only grows: a call with
     * fewer in flight (a short batch of a route) must not close the connections a fuller one
     * will want again (libcurl closes an idle connection for each one handed back to a cache
     * over its limit: at a steady load of short and fuller batches most puts paid a new TCP
     * connection, and Azurite a new socket). */
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)n);
    if (n > h->cache || h->cache == 0) {
        h->cache = n < 4 ? 4 : n;
        curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)h->cache);
    }
}

/* Header values we keep, by name (case-insensitive). */
#define FIELD(name, member) {name, offsetof(sqlq_http_response, member), sizeof(((sqlq_http_response *)0)->member)}
static const struct {
    const char *name;
    size_t offset, size;
} kept_headers[] = {
    FIELD("x-ms-request-id", request_id),
    FIELD("x-ms-error-code", error_code),
    FIELD("x-ms-popreceipt", pop_receipt),
    FIELD("x-ms-time-next-visible", time_next_visible),
    FIELD("x-ms-approximate-messages-count", approximate_count),
    FIELD("retry-after", retry_after),
    FIELD("x-ms-retry-after-ms", retry_after_ms),
};

static void clear_headers(sqlq_http_response *r)
{
    for (size_t i = 0; i < sizeof(kept_headers) / sizeof(kept_headers[0]); i++)
        ((char *)r + kept_headers[i].offset)[0] = '\0';
}

static size_t on_header(char *line, size_t size, size_t n, void *ctx)
{
    sqlq_http_exchange *ex = ctx;
    size_t len = size * n;
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) { /* a new response (after 100 Continue) */
        clear_headers(&ex->response);
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return len;
    size_t name_len = (size_t)(colon - line);
    for (size_t i = 0; i < sizeof(kept_headers) / sizeof(kept_headers[0]); i++) {
        if (strlen(kept_headers[i].name) != name_len ||
            strncasecmp(line, kept_headers[i].name, name_len) != 0)
            continue;
        const char *v = colon + 1, *end = line + len;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
            end--;
        size_t vlen = (size_t)(end - v);
        char *dst = (char *)&ex->response + kept_headers[i].offset;
        if (vlen >= kept_headers[i].size)
            vlen = kept_headers[i].size - 1;
        memcpy(dst, v, vlen);
        dst[vlen] = '\0';
        break;
    }
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    sqlq_http_exchange *ex = ctx;
    size_t len = size * n;
    if (sqlq_buf_add(&ex->response.body, data, len) != SQLQ_OK) {
        ex->too_large = true; /* finish() says so instead of curl's "Failure writing output" */
        return 0;             /* curl stops with CURLE_WRITE_ERROR */
    }
    return len;
}

/* CURLOPT_OPENSOCKETFUNCTION: every connection close-on-exec, so no process sqlq starts (a
 * handler, a shell) inherits a connection to the queue service. */
static curl_socket_t open_socket(void *ctx, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)ctx;
    (void)purpose;
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

sqlq_result sqlq_http_exchange_init(sqlq_http *h, sqlq_http_exchange *ex, sqlq_error *err)
{
    memset(ex, 0, sizeof(*ex));
    sqlq_buf_init(&ex->url, 16 * 1024);
    sqlq_buf_init(&ex->body, 1024 * 1024);
    sqlq_buf_init(&ex->authorization, 16 * 1024);
    sqlq_buf_init(&ex->response.body, MAX_RESPONSE_BODY);
    ex->easy = curl_easy_init();
    if (!ex->easy)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot create a curl easy handle");
    CURL *e = ex->easy;
    long connect_ms = h->timeout_ms < 10000 ? h->timeout_ms : 10000;
    curl_easy_setopt(e, CURLOPT_PRIVATE, ex);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, h->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_USERAGENT, "sqlq/0.1.0");
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ex->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, ex);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, ex);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    return SQLQ_OK;
}

void sqlq_http_exchange_cleanup(sqlq_http *h, sqlq_http_exchange *ex)
{
    if (!ex)
        return;
    if (ex->running && h)
        sqlq_http_abort(h, ex);
    if (ex->easy)
        curl_easy_cleanup(ex->easy);
    ex->easy = NULL;
    sqlq_buf_free(&ex->url);
    sqlq_buf_free(&ex->body);
    if (ex->authorization.data) /* may hold a bearer token */
        memset(ex->authorization.data, 0, ex->authorization.len);
    sqlq_buf_free(&ex->authorization);
    sqlq_buf_free(&ex->response.body);
}

void sqlq_http_exchange_reset(sqlq_http_exchange *ex)
{
    sqlq_buf_reset(&ex->url);
    sqlq_buf_reset(&ex->body);
    sqlq_buf_reset(&ex->authorization);
    ex->nheaders = 0;
}

bool sqlq_http_exchange_authorization(sqlq_http_exchange *ex, const char *scheme, const char *value)
{
    sqlq_buf_reset(&ex->authorization);
    return sqlq_buf_printf(&ex->authorization, "Authorization: %s %s", scheme, value) == SQLQ_OK;
}

bool sqlq_http_exchange_header(sqlq_http_exchange *ex, const char *fmt, ...)
{
    if (ex->nheaders >= SQLQ_HTTP_MAX_HEADERS)
        return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(ex->headers[ex->nheaders], SQLQ_HTTP_HEADER_LINE, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= SQLQ_HTTP_HEADER_LINE)
        return false;
    ex->nheaders++;
    return true;
}

/* The header list points into the exchange itself: no allocation per request. */
static struct curl_slist *header_list(sqlq_http_exchange *ex)
{
    size_t n = 0;
    for (; n < ex->nheaders; n++) {
        ex->list[n].data = ex->headers[n];
        ex->list[n].next = &ex->list[n + 1];
    }
    if (ex->authorization.len > 0) {
        ex->list[n].data = ex->authorization.data;
        ex->list[n].next = &ex->list[n + 1];
        n++;
    }
    ex->list[n].data = (char *)"Expect:"; /* no 100-continue round trip before a body */
    ex->list[n].next = NULL;
    return ex->list;
}

static void set_method(sqlq_http_exchange *ex)
{
    CURL *e = ex->easy;
    bool has_body = ex->body.len > 0 || strcmp(ex->method, "PUT") == 0 ||
                    strcmp(ex->method, "POST") == 0;
    if (has_body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)ex->body.len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, ex->body.data ? ex->body.data : "");
    } else {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    bool standard = strcmp(ex->method, has_body ? "POST" : "GET") == 0;
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, standard ? NULL : ex->method);
}

sqlq_result sqlq_http_start(sqlq_http *h, sqlq_http_exchange *ex, sqlq_error *err)
{
    if (ex->running)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "exchange already running");
    sqlq_buf_reset(&ex->response.body);
    clear_headers(&ex->response);
    ex->response.status = 0;
    ex->response.net = SQLQ_NET_OK;
    ex->response.net_message[0] = '\0';
    ex->errbuf[0] = '\0';
    ex->too_large = false;
    curl_easy_setopt(ex->easy, CURLOPT_URL, sqlq_buf_str(&ex->url));
    curl_easy_setopt(ex->easy, CURLOPT_HTTPHEADER, header_list(ex));
    set_method(ex);
    CURLMcode mc = curl_multi_add_handle(h->multi, ex->easy);
    if (mc != CURLM_OK)
        return sqlq_error_set(err, SQLQ_E_NETWORK, false, "curl_multi_add_handle: %s",
                              curl_multi_strerror(mc));
    ex->running = true;
    h->running++;
    watch_started(h);
    return SQLQ_OK;
}

static sqlq_net_failure net_failure(CURLcode c)
{
    switch (c) {
    case CURLE_OK: return SQLQ_NET_OK;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: return SQLQ_NET_CONNECT;
    case CURLE_OPERATION_TIMEDOUT: return SQLQ_NET_TIMEOUT;
    case CURLE_SEND_ERROR: return SQLQ_NET_SEND;
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return SQLQ_NET_RECV;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: return SQLQ_NET_TLS;
    default: return SQLQ_NET_OTHER;
    }
}

static void finish(sqlq_http *h, sqlq_http_exchange *ex, CURLcode result)
{
    curl_multi_remove_handle(h->multi, ex->easy);
    ex->running = false;
    h->running--;
    watch_finished(h);
    sqlq_http_response *r = &ex->response;
    r->net = net_failure(result);
    if (result == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(ex->easy, CURLINFO_RESPONSE_CODE, &status);
        r->status = (int)status;
        return;
    }
    r->status = 0;
    if (ex->too_large) { /* not a network failure: retrying would get the same answer */
        r->net = SQLQ_NET_OTHER;
        snprintf(r->net_message, sizeof(r->net_message), "response larger than %zu bytes",
                 ex->response.body.cap);
        return;
    }
    snprintf(r->net_message, sizeof(r->net_message), "%s",
             ex->errbuf[0] ? ex->errbuf : curl_easy_strerror(result));
}

/* Finished transfers into done[]; returns the new count. */
static size_t collect(sqlq_http *h, sqlq_http_exchange **done, size_t ndone, size_t done_size)
{
    CURLMsg *msg;
    int left;
    while (ndone < done_size && (msg = curl_multi_info_read(h->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        sqlq_http_exchange *ex = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&ex);
        CURLcode result = msg->data.result; /* read before removal invalidates msg */
        finish(h, ex, result);
        done[ndone++] = ex;
    }
    return ndone;
}

size_t sqlq_http_wait(sqlq_http *h, long timeout_ms, sqlq_http_exchange **done, size_t done_size)
{
    size_t ndone = collect(h, done, 0, done_size);
    bool waited = false;
    int still = 0;
    while (ndone == 0 && h->running > 0) {
        uint64_t now = sqlq_clock_mono_ms();
        if (h->timer_set && h->timer_due_ms <= now) { /* curl's own deadline: start, time out */
            h->timer_set = false;
            curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &still);
            ndone = collect(h, done, ndone, done_size);
            continue;
        }
        if (waited)
            break;
        long wait = timeout_ms > 0 ? timeout_ms : 0;
        if (h->timer_set && (long)(h->timer_due_ms - now) < wait)
            wait = (long)(h->timer_due_ms - now);
        struct epoll_event ev[32];
        int n = epoll_wait(h->epfd, ev, 32, (int)wait);
        waited = true;
        for (int i = 0; i < n; i++) {
            int flags = ((ev[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                        ((ev[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                        ((ev[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
            curl_multi_socket_action(h->multi, ev[i].data.fd, flags, &still);
        }
        ndone = collect(h, done, ndone, done_size);
    }
    return ndone;
}

sqlq_result sqlq_http_perform(sqlq_http *h, sqlq_http_exchange *ex)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (aborting(h) || sqlq_http_start(h, ex, &err) != SQLQ_OK) {
        ex->response.status = 0;
        ex->response.net = SQLQ_NET_OTHER;
        snprintf(ex->response.net_message, sizeof(ex->response.net_message), "%.200s",
                 err.message[0] ? err.message : "aborted: stopping");
        return SQLQ_E_NETWORK;
    }
    while (ex->running) {
        sqlq_http_exchange *done[4];
        (void)sqlq_http_wait(h, h->abort_now ? ABORT_CHECK_MS : 1000, done, 4);
        if (ex->running && aborting(h)) {
            sqlq_http_abort(h, ex);
            snprintf(ex->response.net_message, sizeof(ex->response.net_message),
                     "aborted: stopping");
        }
    }
    return ex->response.net == SQLQ_NET_OK ? SQLQ_OK : SQLQ_E_NETWORK;
}

void sqlq_http_abort(sqlq_http *h, sqlq_http_exchange *ex)
{
    if (!ex->running)
        return;
    curl_multi_remove_handle(h->multi, ex->easy);
    ex->running = false;
    h->running--;
    watch_finished(h);
    ex->response.status = 0;
    ex->response.net = SQLQ_NET_OTHER;
    snprintf(ex->response.net_message, sizeof(ex->response.net_message), "aborted");
}

size_t sqlq_http_running(const sqlq_http *h)
{
    return h->running;
}
