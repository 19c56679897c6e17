#include "queue_client.h"

#include "endpoint.h"
#include "http.h"
#include "log.h"
#include "pipeline.h"
#include "xml.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VISIBILITY_S 604800 /* 7 days */

struct sqlq_queue_client {
    sqlq_queue_options opt;
    sqlq_clock system_clock;
    const sqlq_clock *clock;
    sqlq_http *http;
    sqlq_endpoint *endpoint;
    sqlq_http_exchange single; /* sequential calls */
    sqlq_buf text;             /* encoded text of the current put/update */
    sqlq_pipeline *pipeline;   /* put_many, created on first use */
    sqlq_error outage;         /* opt.one_budget: the failure that spent the budget */
};

void sqlq_queue_options_default(sqlq_queue_options *o)
{
    memset(o, 0, sizeof(*o));
    o->encoding = SQLQ_ENCODING_BASE64;
    o->timeout_ms = 30000;
    o->retry = sqlq_backoff_policy_default();
    o->clock = NULL;
}

sqlq_encoding sqlq_queue_client_encoding(const sqlq_queue_client *c)
{
    return c->opt.encoding;
}

bool sqlq_queue_name_valid(const char *name, sqlq_error *err)
{
    size_t n = name ? strlen(name) : 0;
    const char *why = NULL;
    if (n < 3 || n > 63)
        why = "must be 3 to 63 characters long";
    else if (name[0] == '-' || name[n - 1] == '-')
        why = "must not start or end with '-'";
    else if (strstr(name, "--"))
        why = "must not contain '--'";
    for (size_t i = 0; !why && i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '-'))
            why = "may hold only lowercase letters, digits and '-'";
    if (!why)
        return true;
    sqlq_error_set(err, SQLQ_E_INVALID, false, "queue name '%.80s' %s", name ? name : "", why);
    return false;
}

bool sqlq_queue_poison_name(const char *queue, char *out, size_t out_size)
{
    static const char suffix[] = "-poison";
    size_t n = strlen(queue), s = sizeof(suffix) - 1;
    if ((n >= s && strcmp(queue + n - s, suffix) == 0) || n + s > 63 || n + s >= out_size)
        return false;
    memcpy(out, queue, n);
    memcpy(out + n, suffix, s + 1);
    return true;
}

void sqlq_queue_client_destroy(sqlq_queue_client *c)
{
    if (!c)
        return;
    sqlq_pipeline_destroy(c->pipeline);
    sqlq_http_exchange_cleanup(c->http, &c->single);
    sqlq_buf_free(&c->text);
    sqlq_endpoint_destroy(c->endpoint);
    sqlq_http_destroy(c->http);
    free(c);
}

sqlq_result sqlq_queue_client_create(const sqlq_account *account, const sqlq_queue_options *options,
                                     sqlq_queue_client **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_queue_client *c = calloc(1, sizeof(*c));
    if (!c)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (options)
        c->opt = *options;
    else
        sqlq_queue_options_default(&c->opt);
    c->system_clock = sqlq_clock_system(NULL);
    c->clock = c->opt.clock ? c->opt.clock : &c->system_clock;
    sqlq_buf_init(&c->text, SQLQ_MESSAGE_MAX_TEXT);
    sqlq_result r = sqlq_endpoint_create(account, &c->endpoint, err);
    if (r == SQLQ_OK)
        r = sqlq_http_create(c->opt.timeout_ms, &c->http, err);
    if (r == SQLQ_OK && account->ca_file)
        r = sqlq_http_set_ca_file(c->http, account->ca_file, err);
    if (r == SQLQ_OK) {
        sqlq_http_set_abort(c->http, c->opt.abort_now, c->opt.abort_ctx);
        sqlq_http_set_watch(c->http, c->opt.watch);
        r = sqlq_http_exchange_init(c->http, &c->single, err);
    }
    if (r != SQLQ_OK) {
        sqlq_queue_client_destroy(c);
        return r;
    }
    *out = c;
    return SQLQ_OK;
}

/* A retry hint from the response headers, in ms (0 = none). */
static uint64_t server_hint(const sqlq_http_response *resp)
{
    return sqlq_backoff_server_hint(resp->retry_after[0] ? resp->retry_after : NULL,
                                    resp->retry_after_ms[0] ? resp->retry_after_ms : NULL,
                                    sqlq_clock_wall_ms() / 1000);
}

/* A clear answered OperationTimedOut after this long has deleted messages meanwhile. */
#define CLEAR_PROGRESS_MS 1000

static bool is_clear_timeout(const sqlq_call *call, const sqlq_error *e)
{
    return call->messages && !call->message_id && strcmp(call->method, "DELETE") == 0 &&
           e->http_status == 500 && strcmp(e->azure_code, "OperationTimedOut") == 0;
}

/* One exchange to the end, like sqlq_http_perform; with abort_on_stop a stop aborts it (the
 * response is then a network failure, and the retry wait that follows is cancelled). */
static void perform(sqlq_queue_client *c)
{
    if (!c->opt.abort_on_stop) {
        (void)sqlq_http_perform(c->http, &c->single);
        return;
    }
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_http_start(c->http, &c->single, &e) != SQLQ_OK) {
        c->single.response.net = SQLQ_NET_OTHER;
        snprintf(c->single.response.net_message, sizeof(c->single.response.net_message),
                 "%.200s", e.message);
        return;
    }
    while (c->single.running) {
        sqlq_http_exchange *done[4];
        (void)sqlq_http_wait(c->http, 100, done, 4);
        if (c->single.running && !sqlq_clock_sleep_ms(c->clock, 0))
            sqlq_http_abort(c->http, &c->single);
    }
}

/* With opt.one_budget, a transient failure e that outlasted the retry budget is kept: every
 * later call fails with it at once. */
static void note_outage(sqlq_queue_client *c, const sqlq_error *e)
{
    if (c->opt.one_budget && e->transient && c->outage.code == SQLQ_OK)
        c->outage = *e;
}

/* A call made after the budget was spent: the outage, nothing sent. */
static sqlq_result spent(const sqlq_queue_client *c, sqlq_error *err)
{
    if (err && err->code == SQLQ_OK)
        *err = c->outage;
    return c->outage.code;
}

/* The end of a failed attempt: false when e is final, else true after waiting out the
 * back-off (a stop during the wait is SQLQ_E_CANCELLED in *r). */
static bool retry_after(sqlq_queue_client *c, const sqlq_call *call, sqlq_backoff *b,
                        sqlq_error *e, sqlq_result *r, sqlq_error *err)
{
    uint64_t delay = 0;
    if (!e->transient || !sqlq_backoff_next(b, server_hint(&c->single.response), &delay)) {
        if (e->transient && b->retries > 0)
            snprintf(e->message + strlen(e->message), sizeof(e->message) - strlen(e->message),
                     " (gave up after %u retries)", b->retries);
        note_outage(c, e);
        if (err && err->code == SQLQ_OK)
            *err = *e;
        return false;
    }
    SQLQ_WARN("queue.retry", "op=\"%s\" queue=%s retry=%u delay_ms=%" PRIu64 " err=\"%s\"",
              call->op, call->queue ? call->queue : "-", b->retries, delay, e->message);
    if (c->opt.on_retry)
        c->opt.on_retry(c->opt.retry_ctx, e);
    if (!sqlq_clock_sleep_ms(c->clock, delay)) {
        *r = sqlq_error_set(err, SQLQ_E_CANCELLED, true, "%s: cancelled while waiting to retry",
                            call->op);
        return false;
    }
    return true;
}

/* One REST call with retries of transient failures (a token that cannot be had is one: the
 * token service is retried like the queue service); the response stays in c->single. A
 * refused token is dropped and the call made once more at once. */
static sqlq_result call_service(sqlq_queue_client *c, const sqlq_call *call, sqlq_error *err)
{
    if (c->outage.code != SQLQ_OK)
        return spent(c, err);
    sqlq_backoff b;
    sqlq_backoff_init(&b, &c->opt.retry, c->clock);
    bool refreshed = false;
    for (;;) {
        sqlq_error e;
        sqlq_error_clear(&e);
        sqlq_result r = sqlq_endpoint_build(c->endpoint, call, &c->single, &e);
        if (r != SQLQ_OK) {
            c->single.response.retry_after[0] = '\0'; /* no stale hint from a past reply */
            c->single.response.retry_after_ms[0] = '\0';
            if (retry_after(c, call, &b, &e, &r, err))
                continue;
            return r;
        }
        uint64_t sent_ms = sqlq_clock_now_ms(c->clock);
        perform(c);
        r = sqlq_endpoint_outcome(c->endpoint, call, &c->single, &e);
        if (r == SQLQ_OK)
            return SQLQ_OK;
        if (!refreshed && sqlq_endpoint_refused(c->endpoint, &e)) {
            refreshed = true;
            continue;
        }
        /* A clear that timed out after working a while made progress on a huge queue: go on
         * at once. One answered at once did no work: it is retried with back-off like any
         * other 500, within the budget (no hot loop on a persistent fault). */
        if (is_clear_timeout(call, &e) &&
            sqlq_clock_now_ms(c->clock) - sent_ms >= CLEAR_PROGRESS_MS) {
            sqlq_backoff_reset(&b);
            if (!sqlq_clock_sleep_ms(c->clock, 0))
                return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "%s: cancelled", call->op);
            continue;
        }
        if (!retry_after(c, call, &b, &e, &r, err))
            return r;
    }
}

static sqlq_call make_call(const char *op, const char *method, const char *queue)
{
    sqlq_call call;
    memset(&call, 0, sizeof(call));
    call.op = op;
    call.method = method;
    call.queue = queue;
    return call;
}

sqlq_result sqlq_queue_create(sqlq_queue_client *c, const char *queue, bool *out_created,
                              sqlq_error *err)
{
    if (out_created)
        *out_created = false;
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_call call = make_call("create queue", "PUT", queue);
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = call_service(c, &call, &e);
    if (r == SQLQ_OK) {
        if (out_created) /* 201 created; 204 it existed with the same metadata */
            *out_created = c->single.response.status == 201;
        return SQLQ_OK;
    }
    if (r == SQLQ_E_CONFLICT && strcmp(e.azure_code, "QueueAlreadyExists") == 0)
        return SQLQ_OK; /* exists with other metadata: still there to use */
    const char *scope = sqlq_endpoint_scope(c->endpoint);
    if (e.http_status == 403 && scope && strcmp(scope, queue) == 0) {
        /* A SAS for one queue cannot create it (the Portal makes one for a queue that exists):
         * go on as if it exists; if it does not, the first put says QueueNotFound. */
        SQLQ_INFO("queue_create_skipped", "queue=%s note=\"a queue SAS cannot create queues: "
                                          "assuming the queue exists\"",
                  queue);
        return SQLQ_OK;
    }
    if (err && err->code == SQLQ_OK)
        *err = e;
    return r;
}

sqlq_result sqlq_queue_delete(sqlq_queue_client *c, const char *queue, sqlq_error *err)
{
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_call call = make_call("delete queue", "DELETE", queue);
    return call_service(c, &call, err);
}

sqlq_result sqlq_queue_properties(sqlq_queue_client *c, const char *queue, sqlq_queue_props *out,
                                  sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_call call = make_call("get queue properties", "GET", queue);
    sqlq_call_query(&call, "comp", "metadata");
    sqlq_result r = call_service(c, &call, err);
    if (r != SQLQ_OK)
        return r;
    const char *v = c->single.response.approximate_count;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (!v[0] || *end != '\0' || n < 0)
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "get queue properties '%s': no valid x-ms-approximate-messages-count",
                              queue);
    out->approximate_count = n;
    return SQLQ_OK;
}

sqlq_result sqlq_queue_exists(sqlq_queue_client *c, const char *queue, bool *out_exists,
                              sqlq_error *err)
{
    *out_exists = false;
    sqlq_queue_props props;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_queue_properties(c, queue, &props, &e);
    if (r == SQLQ_OK || r == SQLQ_E_NOT_FOUND) {
        *out_exists = r == SQLQ_OK;
        return SQLQ_OK;
    }
    if (err && err->code == SQLQ_OK)
        *err = e;
    return r;
}

void sqlq_queue_names_free(char **names, size_t count)
{
    for (size_t i = 0; names && i < count; i++)
        free(names[i]);
    free(names);
}

sqlq_result sqlq_queue_list(sqlq_queue_client *c, const char *prefix, char ***out_names,
                            size_t *out_count, sqlq_error *err)
{
    *out_names = NULL;
    *out_count = 0;
    char *marker = NULL;
    sqlq_result r;
    do {
        sqlq_call call = make_call("list queues", "GET", NULL);
        sqlq_call_query(&call, "comp", "list");
        if (prefix && *prefix)
            sqlq_call_query(&call, "prefix", prefix);
        if (marker)
            sqlq_call_query(&call, "marker", marker);
        r = call_service(c, &call, err);
        free(marker);
        marker = NULL;
        if (r == SQLQ_OK)
            r = sqlq_xml_parse_queue_list(c->single.response.body.data, c->single.response.body.len,
                                          out_names, out_count, &marker, err);
    } while (r == SQLQ_OK && marker);
    if (r != SQLQ_OK) {
        sqlq_queue_names_free(*out_names, *out_count);
        *out_names = NULL;
        *out_count = 0;
    }
    return r;
}

static sqlq_result check_range(const char *what, long long v, long long lo, long long hi,
                               sqlq_error *err)
{
    if (v >= lo && v <= hi)
        return SQLQ_OK;
    return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s %lld is out of range (%lld..%lld)", what, v,
                          lo, hi);
}

static sqlq_result check_put_options(const sqlq_put_options *opt, sqlq_error *err)
{
    sqlq_result r = check_range("visibility timeout", opt->visibility_s, 0, MAX_VISIBILITY_S, err);
    if (r == SQLQ_OK && opt->ttl_s < -1)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "time to live %lld is invalid (-1 = never expires, 0 = default)",
                           opt->ttl_s);
    if (r == SQLQ_OK && opt->ttl_s > 0 && opt->visibility_s >= opt->ttl_s)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "visibility timeout %d must be shorter than the time to live %lld",
                           opt->visibility_s, opt->ttl_s);
    return r;
}

sqlq_result sqlq_queue_put(sqlq_queue_client *c, const char *queue, const void *body, size_t len,
                           const sqlq_put_options *opt, sqlq_message *out, sqlq_error *err)
{
    static const sqlq_put_options defaults = {0, 0, false};
    if (!opt)
        opt = &defaults;
    if (out)
        memset(out, 0, sizeof(*out));
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_result r = check_put_options(opt, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_buf_reset(&c->text);
    r = sqlq_codec_encode(opt->verbatim ? SQLQ_ENCODING_PLAIN : c->opt.encoding, body, len,
                          &c->text, err);
    if (r != SQLQ_OK)
        return r; /* too large or not encodable: nothing was sent */
    char vis[24], ttl[24];
    sqlq_call call = make_call("put message", NULL, queue);
    sqlq_pipeline_put_call(&call, opt, vis, ttl);
    call.text = sqlq_buf_str(&c->text);
    call.text_len = c->text.len;
    r = call_service(c, &call, err);
    if (r != SQLQ_OK || !out)
        return r;
    sqlq_message_list l = {NULL, 0};
    r = sqlq_xml_parse_messages(c->single.response.body.data, c->single.response.body.len, &l, err);
    if (r == SQLQ_OK && l.count == 0)
        r = sqlq_error_set(err, SQLQ_E_PARSE, false, "put message '%s': no message in the response",
                           queue);
    if (r == SQLQ_OK) {
        *out = l.items[0];
        memset(&l.items[0], 0, sizeof(l.items[0]));
    }
    sqlq_message_list_free(&l);
    return r;
}

sqlq_result sqlq_queue_put_many(sqlq_queue_client *c, const char *queue, sqlq_put_item *items,
                                size_t count, size_t max_in_flight, const sqlq_put_options *opt)
{
    static const sqlq_put_options defaults = {0, 0, false};
    if (!opt)
        opt = &defaults;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_queue_name_valid(queue, &e) ? check_put_options(opt, &e) : SQLQ_E_INVALID;
    if (r == SQLQ_OK && c->outage.code != SQLQ_OK)
        r = spent(c, &e);
    if (r == SQLQ_OK && !c->pipeline)
        r = sqlq_pipeline_create(c->http, c->endpoint, &c->pipeline, &e);
    if (r != SQLQ_OK) {
        for (size_t i = 0; i < count; i++) {
            items[i].result = r;
            items[i].error = e;
        }
        return r;
    }
    sqlq_pipeline_job job = {queue, opt, opt->verbatim ? SQLQ_ENCODING_PLAIN : c->opt.encoding,
                             &c->opt.retry, c->clock, c->opt.on_retry, c->opt.retry_ctx};
    r = sqlq_pipeline_put(c->pipeline, &job, items, count, max_in_flight);
    for (size_t i = 0; i < count; i++) /* an item's own retries outlasted the budget */
        if (items[i].result != SQLQ_OK && items[i].result != SQLQ_E_CANCELLED)
            note_outage(c, &items[i].error);
    return r;
}

static sqlq_result receive(sqlq_queue_client *c, const char *queue, int count, int visibility_s,
                           bool peek, sqlq_message_list *out, sqlq_error *err)
{
    out->items = NULL;
    out->count = 0;
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_result r = check_range("message count", count, 1, 32, err);
    if (r == SQLQ_OK && !peek)
        r = check_range("visibility timeout", visibility_s, 1, MAX_VISIBILITY_S, err);
    if (r != SQLQ_OK)
        return r;
    char n[16], vis[24];
    snprintf(n, sizeof(n), "%d", count);
    snprintf(vis, sizeof(vis), "%d", visibility_s);
    sqlq_call call = make_call(peek ? "peek messages" : "get messages", "GET", queue);
    call.messages = true;
    sqlq_call_query(&call, "numofmessages", n);
    sqlq_call_query(&call, peek ? "peekonly" : "visibilitytimeout", peek ? "true" : vis);
    r = call_service(c, &call, err);
    if (r == SQLQ_OK)
        r = sqlq_xml_parse_messages(c->single.response.body.data, c->single.response.body.len, out,
                                    err);
    return r;
}

sqlq_result sqlq_queue_get(sqlq_queue_client *c, const char *queue, int count, int visibility_s,
                           sqlq_message_list *out, sqlq_error *err)
{
    return receive(c, queue, count, visibility_s, false, out, err);
}

sqlq_result sqlq_queue_peek(sqlq_queue_client *c, const char *queue, int count,
                            sqlq_message_list *out, sqlq_error *err)
{
    return receive(c, queue, count, 0, true, out, err);
}

static sqlq_result check_message_ref(const char *id, const char *pop_receipt, sqlq_error *err)
{
    if (!id || !*id || !pop_receipt || !*pop_receipt)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "a message id and pop receipt are needed");
    return SQLQ_OK;
}

sqlq_result sqlq_queue_delete_message(sqlq_queue_client *c, const char *queue, const char *id,
                                      const char *pop_receipt, sqlq_error *err)
{
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_result r = check_message_ref(id, pop_receipt, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_call call = make_call("delete message", "DELETE", queue);
    call.message_id = id;
    sqlq_call_query(&call, "popreceipt", pop_receipt);
    return call_service(c, &call, err);
}

sqlq_result sqlq_queue_update_message(sqlq_queue_client *c, const char *queue, const char *id,
                                      const char *pop_receipt, int visibility_s,
                                      const void *new_body, size_t len, bool verbatim,
                                      char **out_pop_receipt, int64_t *out_next_visible,
                                      sqlq_error *err)
{
    *out_pop_receipt = NULL;
    if (out_next_visible)
        *out_next_visible = 0;
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_result r = check_message_ref(id, pop_receipt, err);
    if (r == SQLQ_OK)
        r = check_range("visibility timeout", visibility_s, 0, MAX_VISIBILITY_S, err);
    sqlq_buf_reset(&c->text);
    if (r == SQLQ_OK && new_body)
        r = sqlq_codec_encode(verbatim ? SQLQ_ENCODING_PLAIN : c->opt.encoding, new_body, len,
                              &c->text, err);
    if (r != SQLQ_OK)
        return r;
    char vis[24];
    snprintf(vis, sizeof(vis), "%d", visibility_s);
    sqlq_call call = make_call("update message", "PUT", queue);
    call.message_id = id;
    sqlq_call_query(&call, "popreceipt", pop_receipt);
    sqlq_call_query(&call, "visibilitytimeout", vis);
    if (new_body) {
        call.text = sqlq_buf_str(&c->text);
        call.text_len = c->text.len;
    }
    r = call_service(c, &call, err);
    if (r != SQLQ_OK)
        return r;
    const sqlq_http_response *resp = &c->single.response;
    if (!sqlq_message_ref_valid(resp->pop_receipt))
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "update message '%s': the response has no valid x-ms-popreceipt",
                              queue);
    *out_pop_receipt = strdup(resp->pop_receipt);
    if (!*out_pop_receipt)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (out_next_visible && resp->time_next_visible[0])
        (void)sqlq_xml_parse_http_date(resp->time_next_visible, out_next_visible);
    return SQLQ_OK;
}

sqlq_result sqlq_queue_clear(sqlq_queue_client *c, const char *queue, sqlq_error *err)
{
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_call call = make_call("clear messages", "DELETE", queue);
    call.messages = true;
    return call_service(c, &call, err);
}

bool sqlq_queue_answering(sqlq_answer_watch *w, char *reason, size_t reason_size)
{
    uint64_t silent = sqlq_answer_watch_silent_ms(w, sqlq_clock_mono_ms());
    if (silent < SQLQ_QUEUE_SILENT_MS)
        return true;
    snprintf(reason, reason_size,
             "the queue service has answered no request for %llu ms (connected but not "
             "answering)",
             (unsigned long long)silent);
    return false;
}
