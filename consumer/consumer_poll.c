/* consumer_poll: the polling loop: Get Messages when there is room, check the reply, hand the
 * messages to the workers, back off when the queue is empty or the service fails, and end a
 * drain (exit_when_empty) honestly. */
#include "consumer_internal.h"

#include "log.h"
#include "polling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A drain has waited long enough for the handler's target (drain_gives_up_on_target acts). */
static bool drain_target_over(const sqlq_consumer *c)
{
    return c->opt.exit_when_empty &&
           sqlq_consumer_target_down_ms(c) >= SQLQ_CONSUMER_DRAIN_TARGET_MS;
}

/* Wait until fewer than new_batch_threshold messages are in flight (or a drain has waited long
 * enough for the handler's target); false on stop. */
static bool wait_for_capacity(sqlq_consumer *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->in_flight >= (size_t)c->opt.new_batch_threshold && !sqlq_consumer_stop_requested(c) &&
           !drain_target_over(c))
        sqlq_consumer_cond_wait_ms(&c->idle_cv, &c->mu, 100);
    pthread_mutex_unlock(&c->mu);
    return !sqlq_consumer_stop_requested(c);
}

static void enqueue(sqlq_consumer *c, sqlq_message_list *list)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < list->count && c->pending_count < c->pending_cap; i++) {
        size_t at = (c->pending_head + c->pending_count) % c->pending_cap;
        c->pending[at] = list->items[i];
        memset(&list->items[i], 0, sizeof(list->items[i]));
        c->pending_count++;
        c->in_flight++;
        pthread_cond_signal(&c->work_cv); /* one idle worker per message, not all of them */
    }
    atomic_store(&c->n.in_flight, c->in_flight);
    pthread_mutex_unlock(&c->mu);
}

typedef struct poll_state {
    sqlq_polling polling;
    sqlq_polling outage; /* extra back-off while deletes/updates fail with an outage */
    void *conn;
    sqlq_result last_error; /* of the current streak of failed polls, SQLQ_OK when none */
    bool logged_missing;
    sqlq_result result; /* of the latest poll */
    sqlq_error err;     /* its error */
} poll_state;

static void note_poll_error(sqlq_consumer *c, poll_state *ps, sqlq_result r, const sqlq_error *err)
{
    atomic_fetch_add(&c->n.poll_errors, 1);
    atomic_fetch_add(&c->n.poll_failing, 1);
    if (r == SQLQ_E_PARSE) {
        atomic_fetch_add(&c->n.rejected_replies, 1);
        SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.bad_reply", err,
                   "queue=%s note=\"a service error: nothing of this reply is used; "
                   "its messages are visible again when their lease ends\"",
                   c->queue);
    } else if (c->opt.exit_when_empty) { /* a drain stops here: drain_failed says so, no retry */
        SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "consumer.poll_failed", err, "queue=%s", c->queue);
    } else if (r == SQLQ_E_NOT_FOUND) {
        if (!ps->logged_missing)
            SQLQ_WARN("consumer.queue_missing",
                      "queue=%s note=\"queue does not exist (yet); polling continues with back-off "
                      "until it is created\"",
                      c->queue);
        ps->logged_missing = true;
    } else if (ps->last_error != r) {
        char why[sizeof(c->outage_cause)];
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.poll_failed", err,
                  "queue=%s cause=\"%s\" note=\"retrying with back-off; messages are "
                  "not touched\"",
                  c->queue,
                  sqlq_disposition_is_outage(err) ? sqlq_consumer_outage_cause(c, err, why, sizeof(why))
                                                  : "the queue service refused the request");
    } else {
        SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "consumer.poll_failed", err, "queue=%s", c->queue);
    }
    ps->last_error = r;
}

/* A reply is used only when it is what was asked for: at most `want` messages, each with a pop
 * receipt and a DequeueCount of at least 1 (the fields themselves are checked by the parser). */
static sqlq_result check_reply(const sqlq_consumer *c, const sqlq_message_list *l, int want,
                               sqlq_error *err)
{
    if (l->count > (size_t)want)
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "the queue service returned %zu messages for a request of at most %d "
                              "(lease %d s)",
                              l->count, want, c->opt.lease_s);
    for (size_t i = 0; i < l->count; i++)
        if (!l->items[i].pop_receipt || l->items[i].dequeue_count < 1)
            return sqlq_error_set(err, SQLQ_E_PARSE, false,
                                  "the queue service returned message %s without a pop receipt or "
                                  "with DequeueCount %ld (a received message has 1 or more)",
                                  l->items[i].id, l->items[i].dequeue_count);
    return SQLQ_OK;
}

/* One Get Messages. Returns the delay before the next poll, or UINT64_MAX to stop. */
static uint64_t poll_once(sqlq_consumer *c, poll_state *ps)
{
    int want = c->opt.batch_size;
    unsigned long long got_so_far = atomic_load(&c->n.received);
    if (c->opt.max_messages) {
        if (got_so_far >= c->opt.max_messages)
            return UINT64_MAX;
        if ((unsigned long long)want > c->opt.max_messages - got_so_far)
            want = (int)(c->opt.max_messages - got_so_far);
    }
    sqlq_message_list list = {0};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_poll_event ev = {.at_ms = sqlq_clock_now_ms(c->clock)};
    sqlq_result r = c->transport.get(ps->conn, c->queue, want, c->opt.lease_s, &list, &err);
    if (r == SQLQ_OK)
        r = check_reply(c, &list, want, &err);
    if (r != SQLQ_OK)
        sqlq_message_list_free(&list);
    if (r != SQLQ_OK && sqlq_consumer_stop_requested(c))
        r = SQLQ_E_CANCELLED; /* aborted by the stop, or failing while stopping: not a fault */
    ps->result = r;
    ps->err = err;
    atomic_fetch_add(&c->n.polls, 1);
    if (r == SQLQ_OK)
        atomic_store(&c->n.poll_failing, 0);
    ev.result = r;
    ev.received = r == SQLQ_OK ? (int)list.count : 0;
    if (r == SQLQ_OK && list.count > 0) {
        if (ps->last_error != SQLQ_OK || ps->logged_missing)
            SQLQ_INFO("consumer.poll_recovered", "queue=%s", c->queue);
        ps->last_error = SQLQ_OK;
        ps->logged_missing = false;
        atomic_fetch_add(&c->n.received, list.count);
        sqlq_polling_reset(&ps->polling);
        enqueue(c, &list);
        ev.next_delay_ms = 0;
    } else if (r == SQLQ_E_CANCELLED) {
        ev.next_delay_ms = UINT64_MAX;
    } else {
        if (r == SQLQ_OK) {
            if (ps->last_error != SQLQ_OK || ps->logged_missing)
                SQLQ_INFO("consumer.poll_recovered", "queue=%s", c->queue);
            ps->last_error = SQLQ_OK;
            ps->logged_missing = false;
            atomic_fetch_add(&c->n.empty_polls, 1);
        } else {
            note_poll_error(c, ps, r, &err);
        }
        ev.next_delay_ms = sqlq_polling_empty(&ps->polling);
    }
    sqlq_message_list_free(&list);
    atomic_store(&c->n.backoff_ms, ev.next_delay_ms == UINT64_MAX ? 0 : ev.next_delay_ms);
    sqlq_gauge_set(c->n.m_backoff, ev.next_delay_ms == UINT64_MAX ? 0.0 : (double)ev.next_delay_ms);
    SQLQ_DEBUG("consumer.poll", "queue=%s received=%d result=%s next_delay_ms=%llu", c->queue,
               ev.received, sqlq_strerror(r), (unsigned long long)ev.next_delay_ms);
    if (c->opt.on_poll)
        c->opt.on_poll(c->opt.on_poll_ctx, &ev);
    return ev.next_delay_ms;
}

static bool nothing_in_flight(sqlq_consumer *c)
{
    pthread_mutex_lock(&c->mu);
    bool idle = c->in_flight == 0;
    pthread_mutex_unlock(&c->mu);
    return idle;
}

/* exit_when_empty: true when the drain is over, either because the service answered with no
 * message while nothing was in flight (empty) or because a poll failed (the run's error). */
static bool drain_over(sqlq_consumer *c, const poll_state *ps, bool idle_before)
{
    if (!c->opt.exit_when_empty || sqlq_consumer_stop_requested(c) || ps->result == SQLQ_E_CANCELLED)
        return false;
    if (ps->result == SQLQ_OK) {
        if (idle_before)
            SQLQ_INFO("consumer.empty", "queue=%s note=\"the queue service answered with no "
                      "message: queue empty, stopping\"", c->queue);
        return idle_before;
    }
    SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.drain_failed", &ps->err,
               "queue=%s note=\"the queue could not be read (after the poll's "
               "retries): not empty, stopping with an error\"",
               c->queue);
    c->drain_result = ps->result;
    c->drain_err = ps->err;
    c->drain_end = SQLQ_DRAIN_QUEUE_UNREADABLE;
    return true;
}

/* A drain gives up once the handler's target has been unavailable for
 * SQLQ_CONSUMER_DRAIN_TARGET_MS: its held and unstarted messages go back (not counted). */
static bool drain_gives_up_on_target(sqlq_consumer *c)
{
    if (!drain_target_over(c))
        return false;
    pthread_mutex_lock(&c->target_mu);
    c->drain_err = c->target_err;
    pthread_mutex_unlock(&c->target_mu);
    c->drain_result = SQLQ_E_UNAVAILABLE;
    c->drain_end = SQLQ_DRAIN_TARGET_DOWN;
    atomic_store(&c->abandon_held, true);
    SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.drain_failed", &c->drain_err,
                 "queue=%s note=\"the handler's target stayed unavailable for %u s: stopping with "
                 "an error; its messages go back to the queue, not counted toward poison\"",
                 c->queue, SQLQ_CONSUMER_DRAIN_TARGET_MS / 1000u);
    return true;
}

/* While the handler's target is unavailable and messages are held, take no more: the held ones
 * find out when it answers again. False when polling must end. */
static bool target_pause(sqlq_consumer *c)
{
    while (sqlq_consumer_target_down_ms(c) > 0 && atomic_load(&c->n.held) > 0) {
        if (drain_gives_up_on_target(c) || sqlq_consumer_stop_requested(c))
            return false;
        if (!sqlq_clock_sleep_ms(c->clock, 100))
            return false;
    }
    return !drain_gives_up_on_target(c);
}

/* While deletes and updates fail with an outage, wait longer before taking more messages. */
static bool outage_pause(sqlq_consumer *c, poll_state *ps)
{
    if (atomic_load(&c->n.service_failing) == 0) {
        sqlq_polling_reset(&ps->outage);
        return true;
    }
    return sqlq_clock_sleep_ms(c->clock, sqlq_polling_empty(&ps->outage));
}

void sqlq_consumer_poll_loop(sqlq_consumer *c, void *conn)
{
    poll_state ps = {.conn = conn, .last_error = SQLQ_OK};
    sqlq_polling_init(&ps.polling, c->opt.min_polling_ms, c->opt.max_polling_ms, c->clock);
    sqlq_polling_init(&ps.outage, c->opt.min_polling_ms, c->opt.max_polling_ms, c->clock);
    while (wait_for_capacity(c) && target_pause(c) && outage_pause(c, &ps)) {
        /* Sampled before the request: a message released after a failure is visible before its
         * worker stops counting it, so idle-then-empty really means nothing is left. */
        bool idle_before = nothing_in_flight(c);
        uint64_t delay = poll_once(c, &ps);
        if (delay == UINT64_MAX)
            break;
        if (delay == 0)
            continue;
        if (drain_over(c, &ps, idle_before))
            break;
        if (!sqlq_clock_sleep_ms(c->clock, delay))
            break;
    }
}
