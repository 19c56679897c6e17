/* route_publish: the states of one batch of a route: PUBLISH (a round of puts), BACKOFF (wait
 * during an outage, or give back on a stop) and SETTLED (advance, progress, pause). Publish,
 * then release, then advance: a change is released only after a queue accepted it, and the
 * sync version only moves past released changes. */
#include "route_internal.h"

#include "log.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Under load the sync version moves at most this often. Delivered changes are recorded by
 * their released leases, which a poll never hands out again, so advancing is bookkeeping (how
 * far the log may be trimmed), not what keeps a delivered change from coming back: per batch
 * it cost a transaction of five round trips. */
#define ADVANCE_EVERY_MS 1000u

/* The first change of the batch not yet done: during an outage one message probes the
 * service, so that a long outage costs one request per back-off step, not one per change. */
static size_t first_undone(const sqlq_route *r)
{
    size_t i = 0;
    while (i < r->batch.count && r->done[i])
        i++;
    return i;
}

/* POLL took a batch with changes: set up its publishing. */
void sqlq_route_publish_begin(sqlq_route *r, sqlq_route_facts *f)
{
    assert(r->outcomes == NULL && r->done == NULL);
    r->idle_advanced = false;
    r->changes += r->batch.count;
    r->batch_t0_ms = sqlq_clock_now_ms(&r->clock);
    r->round = 0;
    r->outcomes = calloc(r->batch.count, sizeof(*r->outcomes));
    r->done = calloc(r->batch.count, sizeof(*r->done));
    sqlq_backoff_policy p = sqlq_backoff_policy_outage(); /* catch up within 10 s of a recovery */
    sqlq_backoff_init(&r->publish_backoff, &p, &r->clock);
    sqlq_route_set_in_flight(r, &r->batch, NULL, &r->pend);
    /* A short batch: while it is on the wire, find out whether more was committed since its
     * poll (short_batch_hinted reads the answer). */
    if (!r->batch.full && !r->env.once)
        sqlq_wakeup_peek(r->wakeup, r->cap);
    (void)f;
}

/* The first round: the helper releases what the previous batch had accepted and, when this
 * batch is full (more is likely waiting), polls the next one meanwhile. */
static void first_round_start(sqlq_route *r)
{
    bool ahead = r->batch.full && !sqlq_route_stopping(r);
    if (ahead || r->pend.count > 0)
        sqlq_route_helper_post(r, &r->batch, ahead);
}

static void first_round_end(sqlq_route *r)
{
    if (sqlq_route_helper_wait(r)) {
        r->next = r->helper.batch;
        memset(&r->helper.batch, 0, sizeof(r->helper.batch));
        r->have_next = true;
    }
    assert(r->pend.count == 0 && !r->helper_owns_conn);
}

/* After the first round of a short batch: whether a wake-up hint came meanwhile (consumed and
 * remembered in r->hinted: SETTLED then polls without waiting). */
static bool short_batch_hinted(sqlq_route *r)
{
    if (r->batch.full || !r->wakeup || r->env.once || sqlq_route_stopping(r))
        return false;
    r->hinted = sqlq_wakeup_hinted(r->wakeup, r->db, r->cap);
    if (r->hinted)
        sqlq_counter_inc(r->m_wakeups);
    return r->hinted;
}

/* A hint came while the batch was on the wire: poll as soon as the coalescing window, counted
 * from the last poll, is over (under load the batch's own puts were the window), taking along
 * the hints it brought. */
static void coalesce_after_hint(sqlq_route *r)
{
    uint64_t now = sqlq_clock_now_ms(&r->clock),
             due = r->last_poll_ms + sqlq_wakeup_coalesce_ms(r->wakeup);
    if (now < due)
        (void)sqlq_clock_sleep_ms(&r->clock, due - now);
    (void)sqlq_wakeup_hinted(r->wakeup, r->db, r->cap);
    r->waited_ms = sqlq_clock_now_ms(&r->clock) - now;
}

/* PUBLISH: one round of puts for the changes not yet done; settle what came of it. */
void sqlq_route_publish_round(sqlq_route *r, sqlq_route_facts *f)
{
    if (!r->outcomes || !r->done) { /* out of memory: they stay leased and come back */
        f->batch_done = true;
        return;
    }
    bool first = r->round++ == 0;
    if (first)
        first_round_start(r);
    sqlq_error e;
    sqlq_error_clear(&e);
    uint64_t t0 = sqlq_clock_now_ms(&r->clock);
    r->probe = r->outage.down;
    size_t from = r->probe ? first_undone(r) : 0, n = r->probe ? 1 : r->batch.count;
    if (sqlq_delivery_publish(r->delivery, r->batch.items + from, n, r->outcomes + from, &e) !=
        SQLQ_OK)
        sqlq_route_log_error("publish_failed", r, &e);
    sqlq_histogram_observe(r->m_publish_s, (double)(sqlq_clock_now_ms(&r->clock) - t0) / 1000.0);
    if (first) {
        r->put_ms = sqlq_clock_now_ms(&r->clock) - t0;
        first_round_end(r);
    }
    sqlq_route_note_round(r);
    /* Accepted in the first round with more already polled, or about to be polled (a short
     * batch during which a commit signalled): its release rides along with the next batch. */
    bool defer = first && (r->next.count > 0 || short_batch_hinted(r));
    sqlq_route_settle(r, &r->batch, r->outcomes, r->done, defer);
    f->batch_done = first_undone(r) == r->batch.count;
    if (!f->batch_done)
        sqlq_route_set_in_flight(r, &r->batch, r->done, &r->next);
}

/* BACKOFF: some changes are not done (outage, or a transient failure). Wait with back-off
 * (leases renewed meanwhile, attempts not counted), or give them back: on a stop request, or
 * with --once after once_outage_s. The metrics go on: the backlog grows during an outage. */
void sqlq_route_publish_wait(sqlq_route *r, sqlq_route_facts *f)
{
    sqlq_route_refresh_metrics(r, sqlq_clock_now_ms(&r->clock));
    if (r->probe && !r->outage.down)
        return; /* the probe went through: the rest at once */
    bool give_back =
        (r->outage.down && sqlq_route_queue_give_up(r)) || sqlq_route_stopping(r) ||
        !sqlq_route_outage_sleep(r, &r->publish_backoff, r->outage.down ? r->outage.since_ms : 0);
    if (give_back) {
        sqlq_route_abandon_rest(r, &r->batch, r->done); /* not counted: not their fault */
        f->batch_done = true;
    }
}

/* SETTLED: every change of the batch is done. */
void sqlq_route_publish_settled(sqlq_route *r, sqlq_route_facts *f)
{
    assert(!r->outcomes || first_undone(r) == r->batch.count);
    sqlq_route_set_in_flight(r, &r->pend, NULL, &r->next); /* leased until the next batch */
    free(r->outcomes);
    free(r->done);
    r->outcomes = NULL;
    r->done = NULL;
    bool full = r->batch.full;
    /* A short batch meant idle, so it advanced; with wake-ups short batches are the steady
     * state of a moderate load (one poll per commit), so they advance at the same pace as full
     * ones, and IDLE advances once the table is quiet. */
    bool idle_next = !full && !r->wakeup;
    if (idle_next || sqlq_clock_now_ms(&r->clock) - r->last_advance_ms >= ADVANCE_EVERY_MS)
        sqlq_route_advance(r);
    /* Stage by stage: the wait before its poll, the poll, the first round of puts, all of it
     * from the poll's answer to here (puts, release when not deferred, advance). */
    SQLQ_DEBUG("batch",
               "table=%s changes=%zu full=%d wait_ms=%llu poll_ms=%llu put_ms=%llu ms=%llu hinted=%d",
               r->cfg.table, r->batch.count, (int)full, (unsigned long long)r->waited_ms,
               (unsigned long long)r->poll_took_ms, (unsigned long long)r->put_ms,
               (unsigned long long)(sqlq_clock_now_ms(&r->clock) - r->batch_t0_ms), (int)r->hinted);
    sqlq_change_batch_free(&r->batch);
    sqlq_route_progress(r, false);
    if (!full && !r->env.once && r->hinted)
        coalesce_after_hint(r);
    else if (!full && !r->env.once)
        sqlq_route_wait_for_change(r);
    r->hinted = false;
    f->end = sqlq_route_ending(r);
}
