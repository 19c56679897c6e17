/* consumer_worker: one message's life on a worker (decode, run, delete / release / poison) and
 * the renewal thread that keeps running messages hidden. */
#include "consumer_internal.h"

#include "buf.h"
#include "clock.h"
#include "codec.h"
#include "log.h"
#include "poison_envelope.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int sqlq_consumer_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

void sqlq_consumer_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms)
{
    struct timespec ts = sqlq_clock_monotonic_after(ms);
    int rc;
    do
        rc = pthread_cond_timedwait(cv, mu, &ts);
    while (rc == EINTR);
}

void sqlq_consumer_kick_renewal(struct sqlq_consumer *c, uint64_t due_ms)
{
    /* Usually the thread wakes (at least once a second) long before half a lease: then a
     * new message needs no wake-up and no context switch. */
    pthread_mutex_lock(&c->renew_mu);
    if (due_ms < c->renew_wake_ms) {
        c->renew_kick = true;
        pthread_cond_signal(&c->renew_cv);
    }
    pthread_mutex_unlock(&c->renew_mu);
}

/* ---- the end of a message: delete, release, poison ---- */

static void log_lost(const struct sqlq_consumer *c, const sqlq_message *m, const char *when,
                     const sqlq_error *err)
{
    SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.ownership_lost", err,
              "queue=%s msg_id=%s dequeue_count=%ld when=%s note=\"another consumer may "
              "hold it; not deleted or poisoned with a stale pop receipt\"",
              c->queue, m->id, m->dequeue_count, when);
}

static void finish_delete(consumer_worker *w, const sqlq_message *m, const char *receipt)
{
    struct sqlq_consumer *c = w->c;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = c->transport.remove(w->conn, c->queue, m->id, receipt, &err);
    if (r == SQLQ_OK)
        sqlq_consumer_note_ok(c);
    else
        sqlq_consumer_note_failure(c, "delete", &err);
    if (r == SQLQ_OK) {
        atomic_fetch_add(&c->n.succeeded, 1);
        sqlq_counter_inc(c->n.m_consumed);
        if (w->discounted)
            sqlq_abandoned_forget(c->abandoned, m->id);
        SQLQ_DEBUG("consumer.done", "queue=%s msg_id=%s dequeue_count=%ld attempt=%ld", c->queue,
                   m->id, m->dequeue_count, m->dequeue_count - w->discounted);
    } else if (sqlq_renewal_ownership_lost(r)) {
        atomic_fetch_add(&c->n.ownership_lost, 1);
        log_lost(c, m, "delete", &err);
    } else {
        atomic_fetch_add(&c->n.delete_failures, 1);
        SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.delete_failed", &err,
                   "queue=%s msg_id=%s note=\"handled, but it will be delivered again\"",
                   c->queue, m->id);
    }
}

static void finish_release(consumer_worker *w, const sqlq_message *m, const char *receipt,
                           int visibility_s)
{
    struct sqlq_consumer *c = w->c;
    sqlq_error err;
    sqlq_error_clear(&err);
    char *next = NULL;
    sqlq_result r =
        c->transport.update(w->conn, c->queue, m->id, receipt, visibility_s, &next, &err);
    free(next);
    if (r == SQLQ_OK)
        sqlq_consumer_note_ok(c);
    else
        sqlq_consumer_note_failure(c, "release", &err);
    if (r == SQLQ_OK) {
        atomic_fetch_add(&c->n.released, 1);
    } else if (sqlq_renewal_ownership_lost(r)) {
        atomic_fetch_add(&c->n.ownership_lost, 1);
        log_lost(c, m, "release", &err);
    } else {
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.release_failed", &err,
                  "queue=%s msg_id=%s note=\"visible again when its lease ends\"",
                  c->queue, m->id);
    }
}

/* Put text into {queue}-poison, creating it on 404. */
static sqlq_result put_text(consumer_worker *w, const char *text, size_t len, sqlq_error *err)
{
    struct sqlq_consumer *c = w->c;
    sqlq_result r = c->transport.put(w->conn, c->poison, text, len, err);
    if (r != SQLQ_E_NOT_FOUND)
        return r;
    sqlq_error_clear(err);
    r = c->transport.create(w->conn, c->poison, err);
    if (r != SQLQ_OK && r != SQLQ_E_CONFLICT)
        return r;
    sqlq_error_clear(err);
    return c->transport.put(w->conn, c->poison, text, len, err);
}

/* With --poison-envelope, the text to put: a JSON body wrapped with the reason, encoded as the
 * queue's messages are (malloc'd); NULL to put the same MessageText. */
static char *enveloped(const struct sqlq_consumer *c, const sqlq_message *m, const char *reason,
                       size_t *out_len)
{
    if (!c->opt.poison_envelope || !m->text)
        return NULL;
    sqlq_buf body, text;
    sqlq_buf_init(&body, 0);
    sqlq_buf_init(&text, 0);
    sqlq_error e;
    sqlq_error_clear(&e);
    char *wrapped = NULL;
    size_t wlen = 0;
    bool decoded = sqlq_codec_decode(c->opt.encoding, m->text, m->text_len, &body, &e) == SQLQ_OK;
    if (decoded)
        wrapped = sqlq_poison_envelope_wrap(reason, sqlq_buf_str(&body), body.len, &wlen);
    char *out = NULL;
    /* Too large with the envelope: the same text, so the message still leaves the queue. */
    if (wrapped && sqlq_codec_encode(c->opt.encoding, wrapped, wlen, &text, &e) == SQLQ_OK &&
        text.len <= SQLQ_MESSAGE_MAX_TEXT)
        out = sqlq_buf_take(&text, out_len);
    if (!out)
        SQLQ_WARN("consumer.poison_envelope_skipped",
                  "queue=%s msg_id=%s why=\"%s\" note=\"the poison copy is the same message text; "
                  "the reason is only in the consumer.poisoned line\"",
                  c->queue, m->id,
                  !decoded   ? "the text does not decode"
                  : !wrapped ? "the body is not a JSON object or array"
                             : "with the envelope it would not fit in a message (64 KiB)");
    free(wrapped);
    sqlq_buf_free(&body);
    sqlq_buf_free(&text);
    return out;
}

static sqlq_result put_poison(consumer_worker *w, const sqlq_message *m, const char *reason,
                              sqlq_error *err)
{
    struct sqlq_consumer *c = w->c;
    size_t len = m->text_len;
    char *wrapped = enveloped(c, m, reason, &len);
    const char *text = wrapped ? wrapped : m->text ? m->text : "";
    sqlq_result r = put_text(w, text, len, err);
    free(wrapped);
    return r;
}

/* Poison = put the same MessageText into {queue}-poison, then delete the original. */
static void finish_poison(consumer_worker *w, const sqlq_message *m, const char *receipt,
                          const char *reason)
{
    struct sqlq_consumer *c = w->c;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = put_poison(w, m, reason, &err);
    if (r != SQLQ_OK)
        sqlq_consumer_note_failure(c, "poison put", &err);
    if (r != SQLQ_OK) {
        SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.poison_failed", &err,
                   "queue=%s poison_queue=%s msg_id=%s dequeue_count=%ld "
                   "note=\"kept in the queue; poisoned on its next delivery\"",
                   c->queue, c->poison, m->id, m->dequeue_count);
        finish_release(w, m, receipt,
                       sqlq_disposition_release_visibility(&c->policy,
                                                           m->dequeue_count - w->discounted));
        return;
    }
    atomic_fetch_add(&c->n.poisoned, 1);
    sqlq_counter_inc(c->n.m_poisoned);
    if (w->discounted)
        sqlq_abandoned_forget(c->abandoned, m->id);
    SQLQ_WARN("consumer.poisoned",
              "queue=%s poison_queue=%s msg_id=%s dequeue_count=%ld last_error=\"%s\" attempt=%ld",
              c->queue, c->poison, m->id, m->dequeue_count, reason,
              m->dequeue_count - w->discounted);
    sqlq_error_clear(&err);
    r = c->transport.remove(w->conn, c->queue, m->id, receipt, &err);
    if (r != SQLQ_OK) {
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.poison_delete_failed", &err,
                  "queue=%s msg_id=%s note=\"copied to %s; the original may be "
                  "delivered once more\"",
                  c->queue, m->id, c->poison);
    }
}

static void dispose(consumer_worker *w, const sqlq_message *m, const char *receipt,
                    sqlq_disposition d, const char *reason)
{
    struct sqlq_consumer *c = w->c;
    switch (d) {
    case SQLQ_DISPOSE_DELETE: finish_delete(w, m, receipt); break;
    case SQLQ_DISPOSE_POISON: finish_poison(w, m, receipt, reason); break;
    case SQLQ_DISPOSE_RELEASE:
        if (m->dequeue_count - w->discounted >= c->policy.max_dequeue_count)
            SQLQ_WARN("consumer.no_poison_queue",
                      "queue=%s msg_id=%s dequeue_count=%ld note=\"no -poison queue for this name: "
                      "the message keeps coming back until it expires\"",
                      c->queue, m->id, m->dequeue_count);
        finish_release(w, m, receipt,
                       sqlq_disposition_release_visibility(&c->policy,
                                                           m->dequeue_count - w->discounted));
        break;
    case SQLQ_DISPOSE_RUN: break;
    }
}

/* ---- running one message ---- */

static void slot_begin(consumer_worker *w, const sqlq_message *m)
{
    struct sqlq_consumer *c = w->c;
    consumer_slot *s = &w->slot;
    uint64_t now = sqlq_clock_now_ms(c->clock);
    pthread_mutex_lock(&s->lock);
    s->msg = m;
    s->pop_receipt = m->pop_receipt ? strdup(m->pop_receipt) : NULL;
    sqlq_renewal_start(&s->renewal, (uint64_t)c->opt.lease_s * 1000u, now);
    s->deadline_ms = c->opt.message_timeout_ms ? now + c->opt.message_timeout_ms : 0;
    s->timed_out = false;
    atomic_store(&s->cancel, 0);
    s->active = true;
    uint64_t due = s->renewal.next_ms;
    if (s->deadline_ms && s->deadline_ms < due)
        due = s->deadline_ms;
    pthread_mutex_unlock(&s->lock);
    sqlq_consumer_kick_renewal(c, due);
}

/* Ends renewal; hands back the latest pop receipt (owned) and whether ownership was lost. */
static char *slot_end(consumer_worker *w, bool *out_lost, bool *out_timed_out)
{
    consumer_slot *s = &w->slot;
    pthread_mutex_lock(&s->lock);
    s->active = false;
    char *receipt = s->pop_receipt;
    s->pop_receipt = NULL;
    *out_lost = s->renewal.lost;
    *out_timed_out = s->timed_out;
    s->msg = NULL;
    pthread_mutex_unlock(&s->lock);
    return receipt;
}

sqlq_result sqlq_consumer_run_handler(consumer_worker *w, const sqlq_message *m,
                                      const sqlq_buf *body, sqlq_error *err)
{
    struct sqlq_consumer *c = w->c;
    sqlq_received d = {
        .queue = c->queue,
        .message_id = m->id,
        .body = sqlq_buf_str(body),
        .body_len = body->len,
        .text = m->text ? m->text : "",
        .text_len = m->text_len,
        .dequeue_count = m->dequeue_count,
        .attempt = m->dequeue_count - w->discounted,
        .insertion_time = m->insertion_time,
        .expiration_time = m->expiration_time,
        .deadline_ms = w->slot.deadline_ms,
        .clock = c->clock,
        .cancel = &w->slot.cancel,
    };
    sqlq_result r = c->handler.handle(w->hctx, &d, err);
    if (r != SQLQ_OK && err->code == SQLQ_OK)
        sqlq_error_set(err, r, false, "handler failed: %s", sqlq_strerror(r));
    return r;
}

/* A message that never reaches its handler: over the limit on receipt, or undecodable. */
static void dispose_unrun(consumer_worker *w, const sqlq_message *m, sqlq_disposition d,
                          bool decodable, const sqlq_error *decode_err)
{
    struct sqlq_consumer *c = w->c;
    char reason[800];
    if (!decodable) {
        atomic_fetch_add(&c->n.undecodable, 1);
        snprintf(reason, sizeof(reason),
                 "message text is not valid %s (%s); if the producer sends plain text, "
                 "consume with --encoding plain",
                 sqlq_encoding_name(c->opt.encoding), decode_err->message);
    } else {
        snprintf(reason, sizeof(reason),
                 "dequeue count %ld is over the maximum %ld on receipt%s", m->dequeue_count,
                 c->policy.max_dequeue_count,
                 w->discounted ? " (after the dequeues given back without an attempt)" : "");
    }
    dispose(w, m, m->pop_receipt, d, reason);
}

static void observe_duration(struct sqlq_consumer *c, const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sqlq_histogram_observe(c->n.m_handler_seconds, (double)(t1.tv_sec - t0->tv_sec) +
                                                       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9);
}

/* What the handler's result r (after any hold) does with the message. */
typedef struct run_end {
    sqlq_result r;
    const sqlq_error *err;
    long attempt;
    bool give_back, lost, timed_out;
} run_end;

static void settle(consumer_worker *w, const sqlq_message *m, const char *receipt,
                   const run_end *e)
{
    struct sqlq_consumer *c = w->c;
    bool shutdown_cancel = e->r != SQLQ_OK && !e->timed_out && atomic_load(&w->slot.cancel) != 0;
    if (e->r != SQLQ_OK && e->r != SQLQ_E_UNAVAILABLE && !shutdown_cancel) {
        /* a shutdown's cancel is logged as consumer.cancelled, an outage as handler_outage */
        atomic_fetch_add(&c->n.failed, 1);
        sqlq_counter_inc(c->n.m_failed);
        SQLQ_WARN("consumer.handler_failed",
                  "queue=%s msg_id=%s dequeue_count=%ld err=\"%s\" attempt=%ld", c->queue, m->id,
                  m->dequeue_count, e->err->message, e->attempt);
    }
    if (e->lost) {
        atomic_fetch_add(&c->n.ownership_lost, 1);
        SQLQ_WARN("consumer.ownership_lost",
                  "queue=%s msg_id=%s dequeue_count=%ld when=renewal timed_out=%s note=\"result "
                  "dropped: another consumer may hold it\"",
                  c->queue, m->id, m->dequeue_count, e->timed_out ? "true" : "false");
    } else if (shutdown_cancel || e->give_back) {
        /* the consumer stops, or a drain gave up on the target: never the message's fault */
        bool held = e->r == SQLQ_E_UNAVAILABLE;
        if (!held)
            SQLQ_INFO("consumer.cancelled",
                      "queue=%s msg_id=%s dequeue_count=%ld note=\"cancelled by shutdown: "
                      "released at once\"",
                      c->queue, m->id, m->dequeue_count);
        sqlq_consumer_give_back(c, w->conn, m, receipt,
                                held ? "held while the handler's target was unavailable"
                                     : "cancelled by shutdown");
    } else {
        dispose(w, m, receipt, sqlq_disposition_on_handler(&c->policy, e->attempt, e->r),
                e->err->message);
    }
}

static void process_message(consumer_worker *w, const sqlq_message *m)
{
    struct sqlq_consumer *c = w->c;
    sqlq_buf body;
    sqlq_buf_init(&body, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    const char *text = m->text ? m->text : "";
    bool decodable = sqlq_codec_decode(c->opt.encoding, text, m->text_len, &body, &err) == SQLQ_OK;
    w->discounted = sqlq_abandoned_discount(c->abandoned, m->id, m->dequeue_count);
    run_end e = {.err = &err, .attempt = m->dequeue_count - w->discounted};
    sqlq_disposition d = sqlq_disposition_on_receive(&c->policy, e.attempt, decodable);
    if (d != SQLQ_DISPOSE_RUN) {
        dispose_unrun(w, m, d, decodable, &err);
        sqlq_buf_free(&body);
        return;
    }
    slot_begin(w, m);
    sqlq_error_clear(&err);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    e.r = sqlq_consumer_run_handler(w, m, &body, &err);
    observe_duration(c, &t0); /* the handler's own time: a hold's waiting is not in it */
    if (e.r == SQLQ_E_UNAVAILABLE)
        e.r = sqlq_consumer_hold(w, m, &body, &err, &e.give_back);
    else if (atomic_load(&w->slot.cancel) == 0)
        sqlq_consumer_target_ok(c);
    char *receipt = slot_end(w, &e.lost, &e.timed_out);
    settle(w, m, receipt, &e);
    free(receipt);
    sqlq_buf_free(&body);
}

/* ---- the worker thread ---- */

static bool next_message(consumer_worker *w, sqlq_message *out)
{
    struct sqlq_consumer *c = w->c;
    pthread_mutex_lock(&c->mu);
    while (c->pending_count == 0 && !c->closing)
        pthread_cond_wait(&c->work_cv, &c->mu);
    bool got = c->pending_count > 0;
    if (got) {
        *out = c->pending[c->pending_head];
        c->pending_head = (c->pending_head + 1) % c->pending_cap;
        c->pending_count--;
        w->busy = true;
    }
    pthread_mutex_unlock(&c->mu);
    return got;
}

static void message_finished(consumer_worker *w)
{
    struct sqlq_consumer *c = w->c;
    pthread_mutex_lock(&c->mu);
    w->busy = false;
    c->in_flight--;
    atomic_store(&c->n.in_flight, c->in_flight);
    /* The poller waits for in_flight to drop below the threshold, shutdown for 0: wake it only
     * then, not on every message (each wake-up is a context switch). */
    if (c->in_flight + 1 == (size_t)c->opt.new_batch_threshold || c->in_flight == 0)
        pthread_cond_broadcast(&c->idle_cv);
    pthread_mutex_unlock(&c->mu);
}

static void worker_open(consumer_worker *w)
{
    struct sqlq_consumer *c = w->c;
    sqlq_error_clear(&w->open_err);
    w->open_result = c->transport.open(c->transport.ctx, SQLQ_CONN_WORKER, &w->conn, &w->open_err);
    if (w->open_result == SQLQ_OK) {
        if (c->handler.open)
            w->open_result = c->handler.open(c->handler.ctx, &w->hctx, &w->open_err);
        else
            w->hctx = c->handler.ctx;
    }
    pthread_mutex_lock(&c->mu);
    c->ready++;
    pthread_cond_broadcast(&c->idle_cv);
    pthread_mutex_unlock(&c->mu);
}

void *sqlq_consumer_worker_main(void *arg)
{
    consumer_worker *w = arg;
    struct sqlq_consumer *c = w->c;
    worker_open(w);
    sqlq_message m;
    while (w->open_result == SQLQ_OK && next_message(w, &m)) {
        process_message(w, &m);
        sqlq_message_free(&m);
        message_finished(w);
    }
    if (c->handler.open && c->handler.close && w->hctx)
        c->handler.close(w->hctx);
    w->hctx = NULL;
    if (w->conn)
        c->transport.close(w->conn);
    w->conn = NULL;
    pthread_mutex_lock(&c->mu);
    w->exited = true;
    pthread_cond_broadcast(&c->idle_cv);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- renewal ---- */

static void renew_slot(struct sqlq_consumer *c, consumer_slot *s, uint64_t *next_due)
{
    pthread_mutex_lock(&s->lock);
    if (!s->active || s->renewal.lost || s->timed_out) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    uint64_t now = sqlq_clock_now_ms(c->clock);
    if (s->deadline_ms && now >= s->deadline_ms) {
        s->timed_out = true;
        atomic_store(&s->cancel, 1);
        atomic_fetch_add(&c->n.timeouts, 1);
        SQLQ_WARN("consumer.message_timeout",
                  "queue=%s msg_id=%s dequeue_count=%ld timeout_ms=%llu note=\"handler cancelled; "
                  "renewal stopped\"",
                  c->queue, s->msg->id, s->msg->dequeue_count,
                  (unsigned long long)c->opt.message_timeout_ms);
        pthread_mutex_unlock(&s->lock);
        return;
    }
    if (sqlq_renewal_due(&s->renewal, now)) {
        sqlq_error err;
        sqlq_error_clear(&err);
        char *receipt = NULL;
        sqlq_result r = c->transport.update(c->renew_conn, c->queue, s->msg->id, s->pop_receipt,
                                            c->opt.lease_s, &receipt, &err);
        sqlq_renewal_outcome o = sqlq_renewal_record(&s->renewal, sqlq_clock_now_ms(c->clock), r);
        if (o == SQLQ_RENEWAL_RENEWED)
            sqlq_consumer_note_ok(c);
        else
            sqlq_consumer_note_failure(c, "renewal", &err);
        if (o == SQLQ_RENEWAL_RENEWED && receipt) {
            free(s->pop_receipt);
            s->pop_receipt = receipt;
            receipt = NULL;
            atomic_fetch_add(&c->n.renewals, 1);
            sqlq_counter_inc(c->n.m_renewals);
            SQLQ_DEBUG("consumer.renewed", "queue=%s msg_id=%s lease_s=%d", c->queue, s->msg->id,
                       c->opt.lease_s);
        } else if (o == SQLQ_RENEWAL_LOST) {
            SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.renewal_lost", &err,
                      "queue=%s msg_id=%s note=\"ownership lost: renewal stopped\"",
                      c->queue, s->msg->id);
        } else {
            atomic_fetch_add(&c->n.renewal_failures, 1);
            SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.renewal_failed", &err, "queue=%s msg_id=%s retry_in_ms=%llu",
                      c->queue, s->msg->id,
                      (unsigned long long)(s->renewal.next_ms - sqlq_clock_now_ms(c->clock)));
        }
        free(receipt);
    }
    if (!s->renewal.lost && s->renewal.next_ms < *next_due)
        *next_due = s->renewal.next_ms;
    if (s->deadline_ms && s->deadline_ms < *next_due)
        *next_due = s->deadline_ms;
    pthread_mutex_unlock(&s->lock);
}

void *sqlq_consumer_renew_main(void *arg)
{
    struct sqlq_consumer *c = arg;
    pthread_mutex_lock(&c->renew_mu);
    while (!c->renew_stop) {
        c->renew_kick = false;
        c->renew_wake_ms = UINT64_MAX; /* scanning: a message started now may be missed */
        pthread_mutex_unlock(&c->renew_mu);
        uint64_t now = sqlq_clock_now_ms(c->clock);
        uint64_t next_due = now + 1000;
        for (size_t i = 0; i < c->nworkers; i++)
            renew_slot(c, &c->workers[i].slot, &next_due);
        now = sqlq_clock_now_ms(c->clock);
        pthread_mutex_lock(&c->renew_mu);
        if (!c->renew_stop && !c->renew_kick && next_due > now) {
            c->renew_wake_ms = next_due;
            sqlq_consumer_cond_wait_ms(&c->renew_cv, &c->renew_mu, next_due - now);
        }
    }
    pthread_mutex_unlock(&c->renew_mu);
    return NULL;
}
