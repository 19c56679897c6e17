#include "handler_http.h"

#include "buf.h"
#include "classify.h"
#include "libcurl.h"
#include "log.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESPONSE_KEEP 512 /* bytes of a failed response kept for the reason */

struct sqlq_handler_http {
    char *url;
    char *shown; /* the URL without its query (a function key may be in ?code=) */
    long timeout_ms;
};

typedef struct http_worker {
    const sqlq_handler_http *h;
    CURL *curl;
    char response[RESPONSE_KEEP + 1];
    size_t response_len;
    const sqlq_received *d; /* during a request: for cancellation */
} http_worker;

/* The URL for messages: without its query (a function key may be in ?code=) and with a
 * user:password@ shown as ***@. NULL on OOM. */
static char *shown_url(const char *url)
{
    size_t len = strcspn(url, "?#");
    const char *host = strstr(url, "://");
    const char *at = host ? host + 3 + strcspn(host + 3, "@/?#") : NULL;
    if (!at || *at != '@' || (size_t)(at - url) >= len)
        return strndup(url, len);
    size_t head = (size_t)(host + 3 - url), tail = len - (size_t)(at - url);
    char *s = malloc(head + 3 + tail + 1);
    if (!s)
        return NULL;
    memcpy(s, url, head);
    memcpy(s + head, "***", 3);
    memcpy(s + head + 3, at, tail);
    s[head + 3 + tail] = '\0';
    return s;
}

sqlq_result sqlq_handler_http_create(const char *url, long timeout_ms, sqlq_handler_http **out,
                                     sqlq_error *err)
{
    *out = NULL;
    if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the URL must start with http:// or https://");
    sqlq_result r = sqlq_libcurl_init(err);
    if (r != SQLQ_OK)
        return r;
    sqlq_handler_http *h = calloc(1, sizeof(*h));
    if (!h || !(h->url = strdup(url)) || !(h->shown = shown_url(url))) {
        sqlq_handler_http_destroy(h);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    h->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
    *out = h;
    return SQLQ_OK;
}

void sqlq_handler_http_destroy(sqlq_handler_http *h)
{
    if (!h)
        return;
    free(h->url);
    free(h->shown);
    free(h);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    http_worker *w = ctx;
    size_t len = size * n;
    size_t room = RESPONSE_KEEP - w->response_len;
    size_t take = len < room ? len : room;
    memcpy(w->response + w->response_len, p, take);
    w->response_len += take;
    w->response[w->response_len] = '\0';
    return len;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    http_worker *w = ctx;
    return w->d && sqlq_received_cancelled(w->d) ? 1 : 0; /* non-zero aborts the transfer */
}

static sqlq_result http_open(void *ctx, void **out, sqlq_error *err)
{
    http_worker *w = calloc(1, sizeof(*w));
    if (!w || !(w->curl = curl_easy_init())) {
        free(w);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot create an HTTP handle");
    }
    w->h = ctx;
    curl_easy_setopt(w->curl, CURLOPT_URL, w->h->url);
    curl_easy_setopt(w->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(w->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, w);
    curl_easy_setopt(w->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(w->curl, CURLOPT_XFERINFODATA, w);
    curl_easy_setopt(w->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(w->curl, CURLOPT_TCP_KEEPALIVE, 1L);
    *out = w;
    return SQLQ_OK;
}

static void http_close(void *ctx)
{
    http_worker *w = ctx;
    if (!w)
        return;
    curl_easy_cleanup(w->curl);
    free(w);
}

static bool valid_utf8(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n); /* jansson checks UTF-8 (and rejects nothing else) */
    bool ok = j != NULL;
    json_decref(j);
    return ok;
}

static const char *content_type(const sqlq_received *d)
{
    json_error_t e;
    json_t *j = json_loadb(d->body, d->body_len, JSON_DECODE_ANY, &e);
    if (j) {
        json_decref(j);
        return "Content-Type: application/json";
    }
    return valid_utf8(d->body, d->body_len) ? "Content-Type: text/plain; charset=utf-8"
                                            : "Content-Type: application/octet-stream";
}

static struct curl_slist *headers_for(const sqlq_received *d)
{
    char line[160], iso[32];
    struct curl_slist *hs = NULL;
    sqlq_received_insertion_iso(d, iso, sizeof(iso));
    /* the id is checked where the reply is parsed; a header value never carries CR or LF */
    snprintf(line, sizeof(line), "X-Sqlq-Message-Id: %.*s", (int)strcspn(d->message_id, "\r\n"),
             d->message_id);
    hs = curl_slist_append(hs, line);
    snprintf(line, sizeof(line), "X-Sqlq-Dequeue-Count: %ld", d->dequeue_count);
    hs = curl_slist_append(hs, line);
    snprintf(line, sizeof(line), "X-Sqlq-Insertion-Time: %s", iso);
    hs = curl_slist_append(hs, line);
    snprintf(line, sizeof(line), "X-Sqlq-Queue: %s", d->queue);
    hs = curl_slist_append(hs, line);
    hs = curl_slist_append(hs, content_type(d));
    hs = curl_slist_append(hs, "Expect:"); /* no 100-continue round trip */
    return hs;
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r' || *s == '"')
            *s = *s == '"' ? '\'' : ' ';
}

static sqlq_result http_handle(void *ctx, const sqlq_received *d, sqlq_error *err)
{
    http_worker *w = ctx;
    uint64_t left = sqlq_received_remaining_ms(d);
    if (left == 0)
        return sqlq_error_set(err, SQLQ_E_TIMEOUT, false, "message timeout before the request");
    long timeout = w->h->timeout_ms;
    if (left < (uint64_t)timeout)
        timeout = (long)left;
    struct curl_slist *hs = headers_for(d);
    w->response_len = 0;
    w->response[0] = '\0';
    w->d = d;
    curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, d->body);
    curl_easy_setopt(w->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)d->body_len);
    curl_easy_setopt(w->curl, CURLOPT_TIMEOUT_MS, timeout);
    CURLcode cc = curl_easy_perform(w->curl);
    long status = 0;
    curl_easy_getinfo(w->curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hs);
    w->d = NULL;
    if (cc == CURLE_ABORTED_BY_CALLBACK)
        return sqlq_error_set(err, SQLQ_E_TIMEOUT, false, "POST %s cancelled", w->h->shown);
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return sqlq_error_set(err, SQLQ_E_TIMEOUT, true, "POST %s timed out after %ld ms",
                              w->h->shown, timeout);
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
        cc == CURLE_COULDNT_RESOLVE_PROXY)
        return sqlq_error_set(err, SQLQ_E_UNAVAILABLE, true,
                              "POST %s: %s (the endpoint cannot be reached: held and retried, not "
                              "counted toward poison)",
                              w->h->shown, curl_easy_strerror(cc));
    if (cc != CURLE_OK)
        return sqlq_error_set(err, SQLQ_E_NETWORK, true, "POST %s: %s", w->h->shown,
                              curl_easy_strerror(cc));
    if (status >= 200 && status < 300)
        return SQLQ_OK;
    one_line(w->response);
    if (status == SQLQ_HANDLER_HTTP_REJECT) {
        sqlq_result r = sqlq_error_set(err, SQLQ_E_REJECTED, false,
                                       "POST %s answered %ld (rejected: poison now): %s", w->h->shown,
                                       status, w->response);
        err->http_status = (int)status;
        return r;
    }
    if (sqlq_classify_http_unavailable((int)status)) {
        sqlq_result r = sqlq_error_set(err, SQLQ_E_UNAVAILABLE, true,
                                       "POST %s answered %ld (unavailable: held and retried, not "
                                       "counted toward poison): %s",
                                       w->h->shown, status, w->response);
        err->http_status = (int)status;
        return r;
    }
    sqlq_result r = sqlq_error_set(err, SQLQ_E_HTTP, status >= 500 || status == 429,
                                   "POST %s answered %ld: %s", w->h->shown, status, w->response);
    err->http_status = (int)status;
    return r;
}

sqlq_handler sqlq_handler_http_bind(sqlq_handler_http *h)
{
    sqlq_handler hd = {.handle = http_handle, .open = http_open, .close = http_close, .ctx = h};
    return hd;
}
