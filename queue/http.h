/* http: HTTP/1.1 exchanges over libcurl: kept-alive connections shared through one multi
 * handle, one request at a time or many in flight, with the response headers the queue
 * service sends. CURLcode becomes sqlq_net_failure here and nowhere else. */
#ifndef SQLQ_HTTP_H
#define SQLQ_HTTP_H

#include "answer_watch.h"
#include "buf.h"
#include "classify.h"
#include "result.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#define SQLQ_HTTP_MAX_HEADERS 8
#define SQLQ_HTTP_HEADER_LINE 320
#define SQLQ_HTTP_MAX_PARALLEL 64

typedef struct sqlq_http_response {
    int status; /* 0 when no response arrived (then net says why) */
    sqlq_buf body;
    char request_id[64];       /* x-ms-request-id */
    char error_code[64];       /* x-ms-error-code */
    char pop_receipt[256];     /* x-ms-popreceipt */
    char time_next_visible[40]; /* x-ms-time-next-visible */
    char approximate_count[24]; /* x-ms-approximate-messages-count */
    char retry_after[40];      /* Retry-After */
    char retry_after_ms[24];   /* x-ms-retry-after-ms */
    sqlq_net_failure net;      /* SQLQ_NET_OK when a response arrived */
    char net_message[CURL_ERROR_SIZE];
} sqlq_http_response;

/* One request slot with its own easy handle. The caller fills method, url, body and headers,
 * starts it, and reads response once it is done. Buffers keep their memory between requests. */
typedef struct sqlq_http_exchange {
    const char *method; /* GET, PUT, POST, DELETE */
    sqlq_buf url;
    sqlq_buf body; /* sent when body.len > 0, or always for PUT/POST (Content-Length: 0) */
    char headers[SQLQ_HTTP_MAX_HEADERS][SQLQ_HTTP_HEADER_LINE];
    size_t nheaders;
    sqlq_buf authorization; /* the whole "Authorization: …" line when set (a bearer token is
                             * longer than a header slot); empty = none */
    sqlq_http_response response;
    size_t tag; /* the caller's (an item index) */
    /* private */
    CURL *easy;
    struct curl_slist list[SQLQ_HTTP_MAX_HEADERS + 2]; /* + Authorization + Expect */
    char errbuf[CURL_ERROR_SIZE];
    bool running;
    bool too_large; /* the response body went over its cap */
} sqlq_http_exchange;

typedef struct sqlq_http sqlq_http;

/* timeout_ms bounds each request; https is always verified. */
SQLQ_NODISCARD sqlq_result sqlq_http_create(long timeout_ms, sqlq_http **out, sqlq_error *err);
void sqlq_http_destroy(sqlq_http *h); /* every exchange must be cleaned up first */
/* Abort the request in flight as soon as abort_now(ctx) returns true (checked at least every
 * 100 ms while sqlq_http_perform waits, and before a request starts), so a stopping program
 * does not wait for a server that never answers. The response is then a permanent network
 * failure (SQLQ_NET_OTHER, "aborted: stopping"). abort_now NULL turns it off. The bridge and the
 * consumer use it for a bounded shutdown; abort_now runs on the thread that performs. */
void sqlq_http_set_abort(sqlq_http *h, bool (*abort_now)(void *ctx), void *ctx);
/* Report each request's start and finish to watch (NULL: none); it must outlive h. */
void sqlq_http_set_watch(sqlq_http *h, sqlq_answer_watch *watch);
/* Trust the CA certificates in this PEM file instead of the system's (NULL = system).
 * Applies to exchanges initialised afterwards; verification itself is never turned off. */
SQLQ_NODISCARD sqlq_result sqlq_http_set_ca_file(sqlq_http *h, const char *path, sqlq_error *err);
/* Keep up to n connections per host open (and allow n at once). */
void sqlq_http_set_parallel(sqlq_http *h, size_t n);

SQLQ_NODISCARD sqlq_result sqlq_http_exchange_init(sqlq_http *h, sqlq_http_exchange *ex,
                                                   sqlq_error *err);
void sqlq_http_exchange_cleanup(sqlq_http *h, sqlq_http_exchange *ex);
/* Clears url, body and headers for the next request (memory kept). */
void sqlq_http_exchange_reset(sqlq_http_exchange *ex);
/* Adds one "Name: value" line; false when there is no room. */
bool sqlq_http_exchange_header(sqlq_http_exchange *ex, const char *fmt, ...) SQLQ_PRINTF(2, 3);
/* Sets the Authorization header to "scheme value" (any length); false when out of memory. */
bool sqlq_http_exchange_authorization(sqlq_http_exchange *ex, const char *scheme, const char *value);

/* Runs one exchange to the end. SQLQ_OK when a response (any status) arrived, else
 * SQLQ_E_NETWORK with response.net and net_message set (the response tells both). */
sqlq_result sqlq_http_perform(sqlq_http *h, sqlq_http_exchange *ex);

/* Starts an exchange without waiting for it. */
SQLQ_NODISCARD sqlq_result sqlq_http_start(sqlq_http *h, sqlq_http_exchange *ex, sqlq_error *err);
/* Drives started exchanges for up to timeout_ms or until some finish; the finished ones are
 * written to done (at most done_size) and their count returned. */
size_t sqlq_http_wait(sqlq_http *h, long timeout_ms, sqlq_http_exchange **done, size_t done_size);
/* Stops a started exchange (shutdown); its response is left as a network failure. */
void sqlq_http_abort(sqlq_http *h, sqlq_http_exchange *ex);
size_t sqlq_http_running(const sqlq_http *h);

#endif
