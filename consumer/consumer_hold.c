/* consumer_hold: while the handler's target (a --sql database, an --http endpoint, whatever an
 * --exec command reaches) is unavailable: its messages are held (kept invisible, renewed) and
 * retried with back-off, never counted toward poison; the outage is logged, shown on /readyz and
 * in sqlq_handler_unavailable. Also the one way a dequeue is given back without an attempt. */
#include "consumer_internal.h"

#include "backoff.h"
#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TARGET_LOG_EVERY_MS 30000u
#define TARGET_LOG_CHANGE_MS 1000u /* a new reason is logged at once, at most once a second */
#define HOLD_SLICE_MS 100u         /* how often a held message looks at stop and recovery */

uint64_t sqlq_consumer_target_down_ms(const struct sqlq_consumer *c)
{
    uint64_t since = atomic_load(&((struct sqlq_consumer *)(uintptr_t)c)->target_down_since);
    if (!since)
        return 0;
    uint64_t now = sqlq_clock_mono_ms();
    return now > since ? now - since : 1;
}

void sqlq_consumer_target_failed(struct sqlq_consumer *c, const sqlq_error *err)
{
    uint64_t now = sqlq_clock_mono_ms();
    pthread_mutex_lock(&c->target_mu);
    uint64_t since = atomic_load(&c->target_down_since);
    bool first = since == 0;
    if (first) {
        atomic_store(&c->target_down_since, now);
        sqlq_gauge_set(c->n.m_unavailable, 1);
    }
    bool changed = strcmp(c->target_logged, err->message) != 0;
    bool log_it = first || (changed && now - c->target_logged_ms >= TARGET_LOG_CHANGE_MS) ||
                  now - c->target_logged_ms >= TARGET_LOG_EVERY_MS;
    snprintf(c->target_cause, sizeof(c->target_cause), "%s", err->message);
    c->target_err = *err;
    if (log_it) {
        c->target_logged_ms = now;
        snprintf(c->target_logged, sizeof(c->target_logged), "%s", err->message);
    }
    pthread_mutex_unlock(&c->target_mu);
    if (log_it)
        SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.handler_outage", err,
                     "queue=%s held=%llu down_ms=%llu note=\"the handler's target is unavailable, "
                     "no fault of the messages: they are held (kept invisible, renewed) and "
                     "retried with back-off, never counted toward poison; no further messages "
                     "are taken until it answers\"",
                     c->queue, atomic_load(&c->n.held),
                     (unsigned long long)(first ? 0 : now - since));
}

void sqlq_consumer_target_ok(struct sqlq_consumer *c)
{
    if (atomic_load(&c->target_down_since) == 0)
        return;
    pthread_mutex_lock(&c->target_mu);
    uint64_t since = atomic_exchange(&c->target_down_since, 0);
    if (since)
        sqlq_gauge_set(c->n.m_unavailable, 0);
    pthread_mutex_unlock(&c->target_mu);
    if (!since)
        return;
    atomic_fetch_add(&c->target_epoch, 1);
    uint64_t now = sqlq_clock_mono_ms();
    SQLQ_INFO("consumer.handler_outage_over",
              "queue=%s down_ms=%llu held=%llu note=\"the handler's target answers again: held "
              "messages are retried now, polling resumes\"",
              c->queue, (unsigned long long)(now > since ? now - since : 0),
              atomic_load(&c->n.held));
}

bool sqlq_consumer_target_down(const sqlq_consumer *c, char *cause, size_t cause_size)
{
    if (atomic_load(&((sqlq_consumer *)(uintptr_t)c)->target_down_since) == 0)
        return false;
    pthread_mutex_lock(&((sqlq_consumer *)(uintptr_t)c)->target_mu);
    snprintf(cause, cause_size, "%s", c->target_cause);
    pthread_mutex_unlock(&((sqlq_consumer *)(uintptr_t)c)->target_mu);
    return true;
}

/* ---- holding one message ---- */

static bool slot_lost(consumer_worker *w)
{
    pthread_mutex_lock(&w->slot.lock);
    bool lost = w->slot.renewal.lost;
    pthread_mutex_unlock(&w->slot.lock);
    return lost;
}

/* Arm (a new attempt) or disarm (waiting) the message timeout: a held message waits for its
 * target without a deadline; each attempt gets the whole timeout. */
static void slot_deadline(consumer_worker *w, bool arm)
{
    struct sqlq_consumer *c = w->c;
    uint64_t due = 0;
    pthread_mutex_lock(&w->slot.lock);
    w->slot.deadline_ms = 0;
    if (arm && c->opt.message_timeout_ms)
        w->slot.deadline_ms = due = sqlq_clock_now_ms(c->clock) + c->opt.message_timeout_ms;
    pthread_mutex_unlock(&w->slot.lock);
    if (due)
        sqlq_consumer_kick_renewal(c, due);
}

/* Wait delay_ms, or less when the target answered meanwhile; false when the hold must end. */
static bool wait_to_retry(consumer_worker *w, uint64_t delay_ms)
{
    struct sqlq_consumer *c = w->c;
    unsigned epoch = atomic_load(&c->target_epoch);
    uint64_t until = sqlq_clock_now_ms(c->clock) + delay_ms;
    for (;;) {
        if (sqlq_consumer_stop_requested(c) || atomic_load(&c->abandon_held) ||
            atomic_load(&w->slot.cancel) || slot_lost(w))
            return false;
        uint64_t now = sqlq_clock_now_ms(c->clock);
        if (epoch != atomic_load(&c->target_epoch) || now >= until)
            return true;
        uint64_t slice = until - now < HOLD_SLICE_MS ? until - now : HOLD_SLICE_MS;
        (void)sqlq_clock_sleep_ms(c->clock, slice); /* an interrupted sleep: the stop is seen above */
    }
}

sqlq_result sqlq_consumer_hold(consumer_worker *w, const sqlq_message *m, const sqlq_buf *body,
                               sqlq_error *err, bool *out_give_back)
{
    struct sqlq_consumer *c = w->c;
    *out_give_back = false;
    sqlq_consumer_target_failed(c, err);
    atomic_fetch_add(&c->n.held, 1);
    sqlq_gauge_add(c->n.m_held, 1);
    SQLQ_DEBUG("consumer.held", "queue=%s msg_id=%s dequeue_count=%ld", c->queue, m->id,
               m->dequeue_count);
    sqlq_backoff_policy policy = {.initial_ms = 500, .max_delay_ms = 30000, .jitter = 0.2};
    sqlq_backoff b;
    sqlq_backoff_init(&b, &policy, c->clock);
    sqlq_result r = SQLQ_E_UNAVAILABLE;
    for (;;) {
        uint64_t delay = policy.max_delay_ms;
        (void)sqlq_backoff_next(&b, 0, &delay); /* no budget: it always gives a delay */
        slot_deadline(w, false);
        if (!wait_to_retry(w, delay)) {
            *out_give_back = !slot_lost(w);
            break;
        }
        slot_deadline(w, true);
        sqlq_error e;
        sqlq_error_clear(&e);
        r = sqlq_consumer_run_handler(w, m, body, &e);
        if (r == SQLQ_E_UNAVAILABLE) {
            sqlq_consumer_target_failed(c, &e);
            continue;
        }
        sqlq_error_clear(err);
        *err = e;
        if (!atomic_load(&w->slot.cancel)) /* a cancelled attempt says nothing of the target */
            sqlq_consumer_target_ok(c);
        break;
    }
    atomic_fetch_sub(&c->n.held, 1);
    sqlq_gauge_add(c->n.m_held, -1);
    return r;
}

/* ---- giving a dequeue back ---- */

void sqlq_consumer_give_back(struct sqlq_consumer *c, void *conn, const sqlq_message *m,
                             const char *receipt, const char *why)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    bool recorded = false;
    if (c->abandoned) {
        recorded = sqlq_abandoned_record(c->abandoned, m->id, m->dequeue_count,
                                         m->expiration_time, &e) == SQLQ_OK;
        if (!recorded)
            SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.give_back_not_recorded", &e,
                         "queue=%s msg_id=%s dequeue_count=%ld note=\"this dequeue will count "
                         "toward poison\"",
                         c->queue, m->id, m->dequeue_count);
    }
    atomic_fetch_add(&c->n.given_back, 1);
    sqlq_error_clear(&e);
    char *next = NULL;
    sqlq_result r = c->transport.update(conn, c->queue, m->id, receipt, 0, &next, &e);
    free(next);
    if (r == SQLQ_OK) {
        sqlq_consumer_note_ok(c);
        SQLQ_INFO("consumer.given_back",
                  "queue=%s msg_id=%s dequeue_count=%ld why=\"%s\" note=\"visible again now; "
                  "this dequeue %s\"",
                  c->queue, m->id, m->dequeue_count, why,
                  recorded ? "is recorded and does not count toward poison"
                           : "counts toward poison (not recorded: see --state-dir)");
        return;
    }
    sqlq_consumer_note_failure(c, "release", &e);
    SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.release_failed", &e,
                 "queue=%s msg_id=%s why=\"%s\" note=\"visible again when its lease ends%s\"",
                 c->queue, m->id, why,
                 recorded ? "; this dequeue is recorded and does not count toward poison" : "");
}
