#include "pipeline.h"

#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often a busy pipeline looks at the shutdown flag, at the latest. */
#define CHECK_INTERVAL_MS 100

typedef struct slot {
    sqlq_http_exchange ex; /* ex.tag = index of the item it carries */
    sqlq_buf text;         /* that item's encoded MessageText, kept for retries */
    sqlq_backoff backoff;
    uint64_t due_ms; /* when a waiting retry may start */
    bool refreshed;  /* the credential was refused once and renewed for this item */
    enum { SLOT_IDLE, SLOT_RUNNING, SLOT_WAITING } state;
} slot;

struct sqlq_pipeline {
    sqlq_http *http;
    sqlq_endpoint *ep;
    slot *slots;
    size_t nslots;
};

/* State of one sqlq_pipeline_put call. */
typedef struct run {
    sqlq_pipeline *p;
    const sqlq_pipeline_job *job;
    sqlq_put_item *items;
    size_t count, next, active, k;
    sqlq_call call;
    char vis[24], ttl[24];
} run;

void sqlq_pipeline_put_call(sqlq_call *call, const sqlq_put_options *opt, char vis[24],
                            char ttl[24])
{
    call->method = "POST";
    call->messages = true;
    if (opt->visibility_s > 0) {
        snprintf(vis, 24, "%d", opt->visibility_s);
        sqlq_call_query(call, "visibilitytimeout", vis);
    }
    if (opt->ttl_s != 0) {
        snprintf(ttl, 24, "%lld", opt->ttl_s);
        sqlq_call_query(call, "messagettl", ttl);
    }
}

sqlq_result sqlq_pipeline_create(sqlq_http *http, sqlq_endpoint *ep, sqlq_pipeline **out,
                                 sqlq_error *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    (*out)->http = http;
    (*out)->ep = ep;
    return SQLQ_OK;
}

void sqlq_pipeline_destroy(sqlq_pipeline *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nslots; i++) {
        sqlq_http_exchange_cleanup(p->http, &p->slots[i].ex);
        sqlq_buf_free(&p->slots[i].text);
    }
    free(p->slots);
    free(p);
}

/* Exchanges hold pointers to themselves (curl's private data, the header list), so the slot
 * array is allocated once at its full size and never moves; slots are set up on first use. */
static sqlq_result ensure_slots(sqlq_pipeline *p, size_t k, sqlq_error *err)
{
    if (!p->slots) {
        p->slots = calloc(SQLQ_HTTP_MAX_PARALLEL, sizeof(slot));
        if (!p->slots)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    for (; p->nslots < k; p->nslots++) {
        slot *s = &p->slots[p->nslots];
        sqlq_buf_init(&s->text, SQLQ_MESSAGE_MAX_TEXT);
        sqlq_result r = sqlq_http_exchange_init(p->http, &s->ex, err);
        if (r != SQLQ_OK) {
            sqlq_http_exchange_cleanup(p->http, &s->ex);
            return r;
        }
    }
    return SQLQ_OK;
}

static void item_done(run *rn, slot *s, sqlq_result r, const sqlq_error *e)
{
    sqlq_put_item *it = &rn->items[s->ex.tag];
    it->result = r;
    if (r == SQLQ_OK)
        sqlq_error_clear(&it->error);
    else
        it->error = *e;
    s->state = SLOT_IDLE;
    rn->active--;
}

static void send_slot(run *rn, slot *s)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    rn->call.text = sqlq_buf_str(&s->text);
    rn->call.text_len = s->text.len;
    sqlq_result r = sqlq_endpoint_build(rn->p->ep, &rn->call, &s->ex, &e);
    uint64_t delay = 0;
    if (r != SQLQ_OK && e.transient && sqlq_backoff_next(&s->backoff, 0, &delay)) {
        s->state = SLOT_WAITING; /* no token yet: wait like any transient failure */
        s->due_ms = sqlq_clock_now_ms(rn->job->clock) + delay;
        return;
    }
    if (r == SQLQ_OK)
        r = sqlq_http_start(rn->p->http, &s->ex, &e);
    if (r != SQLQ_OK) {
        item_done(rn, s, r, &e);
        return;
    }
    s->state = SLOT_RUNNING;
}

/* Gives an idle slot the next item that can be encoded (items that cannot fail at once). */
static void assign(run *rn, slot *s)
{
    while (rn->next < rn->count) {
        size_t i = rn->next++;
        sqlq_put_item *it = &rn->items[i];
        sqlq_error_clear(&it->error);
        sqlq_buf_reset(&s->text);
        it->result = sqlq_codec_encode(rn->job->encoding, it->body, it->len, &s->text, &it->error);
        if (it->result != SQLQ_OK)
            continue;
        s->ex.tag = i;
        s->refreshed = false;
        sqlq_backoff_init(&s->backoff, rn->job->retry, rn->job->clock);
        rn->active++;
        send_slot(rn, s);
        return;
    }
}

static void on_done(run *rn, sqlq_http_exchange *ex)
{
    slot *s = (slot *)(void *)ex; /* ex is the first member */
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_endpoint_outcome(rn->p->ep, &rn->call, ex, &e);
    if (r != SQLQ_OK && !s->refreshed && sqlq_endpoint_refused(rn->p->ep, &e)) {
        s->refreshed = true; /* a refused token: dropped; one more attempt at once */
        send_slot(rn, s);
        return;
    }
    uint64_t delay = 0;
    if (r != SQLQ_OK && e.transient) {
        const sqlq_http_response *resp = &ex->response;
        uint64_t hint = sqlq_backoff_server_hint(resp->retry_after[0] ? resp->retry_after : NULL,
                                                 resp->retry_after_ms[0] ? resp->retry_after_ms : NULL,
                                                 sqlq_clock_wall_ms() / 1000);
        if (sqlq_backoff_next(&s->backoff, hint, &delay)) {
            SQLQ_DEBUG("queue.retry", "op=\"put message\" queue=%s item=%zu retry=%u delay_ms=%" PRIu64
                                      " err=\"%s\"",
                       rn->job->queue, ex->tag, s->backoff.retries, delay, e.message);
            s->state = SLOT_WAITING;
            s->due_ms = sqlq_clock_now_ms(rn->job->clock) + delay;
            if (rn->job->on_retry)
                rn->job->on_retry(rn->job->retry_ctx, &e);
            return;
        }
    }
    item_done(rn, s, r, &e);
}

/* Starts idle slots on new items and waiting slots whose retry is due; returns the earliest
 * time a waiting slot becomes due (UINT64_MAX when none waits). */
static uint64_t feed(run *rn)
{
    uint64_t now = sqlq_clock_now_ms(rn->job->clock), earliest = UINT64_MAX;
    for (size_t i = 0; i < rn->k; i++) {
        slot *s = &rn->p->slots[i];
        if (s->state == SLOT_IDLE)
            assign(rn, s);
        else if (s->state == SLOT_WAITING && s->due_ms <= now)
            send_slot(rn, s);
        if (s->state == SLOT_WAITING && s->due_ms < earliest)
            earliest = s->due_ms;
    }
    return earliest;
}

static sqlq_result cancel_all(run *rn)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_error_set(&e, SQLQ_E_CANCELLED, true,
                   "put message '%s': cancelled by shutdown before it was confirmed",
                   rn->job->queue);
    for (size_t i = 0; i < rn->k; i++) {
        slot *s = &rn->p->slots[i];
        if (s->state == SLOT_RUNNING)
            sqlq_http_abort(rn->p->http, &s->ex);
        if (s->state != SLOT_IDLE)
            item_done(rn, s, SQLQ_E_CANCELLED, &e);
    }
    for (; rn->next < rn->count; rn->next++) {
        rn->items[rn->next].result = SQLQ_E_CANCELLED;
        rn->items[rn->next].error = e;
    }
    return SQLQ_E_CANCELLED;
}

sqlq_result sqlq_pipeline_put(sqlq_pipeline *p, const sqlq_pipeline_job *job, sqlq_put_item *items,
                              size_t count, size_t max_in_flight)
{
    run rn;
    memset(&rn, 0, sizeof(rn));
    rn.p = p;
    rn.job = job;
    rn.items = items;
    rn.count = count;
    rn.k = max_in_flight < 1 ? 1 : max_in_flight > SQLQ_HTTP_MAX_PARALLEL ? SQLQ_HTTP_MAX_PARALLEL
                                                                          : max_in_flight;
    if (rn.k > count)
        rn.k = count ? count : 1;
    rn.call.op = "put message";
    rn.call.queue = job->queue;
    sqlq_pipeline_put_call(&rn.call, job->opt, rn.vis, rn.ttl);
    sqlq_error e;
    sqlq_error_clear(&e);
    if (ensure_slots(p, rn.k, &e) != SQLQ_OK) {
        for (size_t i = 0; i < count; i++) {
            items[i].result = e.code;
            items[i].error = e;
        }
        return e.code;
    }
    for (size_t i = 0; i < rn.k; i++)
        p->slots[i].state = SLOT_IDLE;
    sqlq_http_set_parallel(p->http, rn.k);
    for (;;) {
        uint64_t due = feed(&rn);
        if (rn.active == 0 && rn.next >= rn.count)
            return SQLQ_OK;
        uint64_t now = sqlq_clock_now_ms(job->clock);
        uint64_t wait = due == UINT64_MAX ? CHECK_INTERVAL_MS : due > now ? due - now : 0;
        if (sqlq_http_running(p->http) == 0) {
            if (!sqlq_clock_sleep_ms(job->clock, wait)) /* only retries wait: sleep till due */
                return cancel_all(&rn);
            continue;
        }
        if (!sqlq_clock_sleep_ms(job->clock, 0))
            return cancel_all(&rn);
        sqlq_http_exchange *done[SQLQ_HTTP_MAX_PARALLEL];
        size_t n = sqlq_http_wait(p->http, (long)(wait < CHECK_INTERVAL_MS ? wait : CHECK_INTERVAL_MS),
                                  done, SQLQ_HTTP_MAX_PARALLEL);
        for (size_t i = 0; i < n; i++)
            on_done(&rn, done[i]);
    }
}
