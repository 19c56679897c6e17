/* route_prefetch: the route's one helper thread, alive from the route's start to its stop,
 * that releases the previous batch and polls the next one while the current batch is on the
 * wire; and the lease renewal set that covers both. */
#include "route_internal.h"

#include "log.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* The previous batch was accepted by the queue: its release is bookkeeping that need not hold
 * up this one. Then the poll, which sees those changes released. */
static void run_job(sqlq_route_helper *h)
{
    sqlq_route *r = h->r;
    sqlq_route_release_pending(r);
    if (!h->poll)
        return;
    h->rc = r->cap ? sqlq_capture_poll(r->cap, &h->batch, &h->err)
                   : sqlq_error_set(&h->err, SQLQ_E_SQL, true, "capture not open");
    /* Leased now: renewed from now on, not from when the current batch is settled (its
     * publish may retry for longer than a lease lasts). The route thread is inside the
     * publish call and does not touch the renewal set until the job is over. */
    if (h->rc == SQLQ_OK && h->batch.count > 0)
        sqlq_route_set_in_flight(r, h->current, NULL, &h->batch);
}

static void *helper_main(void *arg)
{
    sqlq_route_helper *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->job && !h->quit)
            pthread_cond_wait(&h->cv, &h->mu);
        if (!h->job)
            break;
        pthread_mutex_unlock(&h->mu);
        run_job(h);
        pthread_mutex_lock(&h->mu);
        h->job = false;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Without a thread (it could not be created) the route works in turn: jobs run inline and
 * nothing is polled ahead. */
void sqlq_route_helper_start(sqlq_route *r)
{
    sqlq_route_helper *h = &r->helper;
    if (h->running)
        return;
    h->r = r;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->job = h->quit = false;
    h->running = pthread_create(&h->thread, NULL, helper_main, h) == 0;
    if (!h->running) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
        SQLQ_WARN("route_helper_failed",
                  "table=%s note=\"cannot start a thread: the route "
                  "polls and publishes in turn\"",
                  r->cfg.table);
    }
}

void sqlq_route_helper_post(sqlq_route *r, const sqlq_change_batch *current, bool poll)
{
    sqlq_route_helper *h = &r->helper;
    assert(!r->helper_owns_conn); /* one job at a time */
    h->current = current;
    h->poll = poll && h->running;
    h->rc = SQLQ_OK;
    sqlq_error_clear(&h->err);
    memset(&h->batch, 0, sizeof(h->batch));
    if (!h->running) {
        sqlq_route_release_pending(r);
        return;
    }
    r->helper_owns_conn = true;
    pthread_mutex_lock(&h->mu);
    h->job = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

/* Wait for the job; true when h->batch holds a polled batch. A failed poll is logged, and the
 * next poll of the loop goes through the usual recovery. */
bool sqlq_route_helper_wait(sqlq_route *r)
{
    sqlq_route_helper *h = &r->helper;
    if (!r->helper_owns_conn)
        return false;
    pthread_mutex_lock(&h->mu);
    while (h->job)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    r->helper_owns_conn = false;
    assert(r->pend.count == 0); /* released before the current batch is settled */
    if (!h->poll)
        return false;
    if (h->rc == SQLQ_OK)
        return true;
    sqlq_route_log_error("poll_failed", r, &h->err);
    sqlq_change_batch_free(&h->batch);
    return false;
}

void sqlq_route_helper_stop(sqlq_route *r)
{
    sqlq_route_helper *h = &r->helper;
    if (!h->running)
        return;
    (void)sqlq_route_helper_wait(r);
    pthread_mutex_lock(&h->mu);
    h->quit = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    h->running = false;
}

/* Lease renewal covers what is still undelivered of `b` and all of `next` (already leased);
 * nothing for a source whose leases never expire. */
void sqlq_route_set_in_flight(sqlq_route *r, const sqlq_change_batch *b, const bool *done,
                              const sqlq_change_batch *next)
{
    if (!sqlq_capture_leases_expire(r->cap))
        return;
    size_t extra = next ? next->count : 0, n = b->count + extra;
    sqlq_change *all = malloc((n ? n : 1) * sizeof(*all));
    bool *keep = malloc((n ? n : 1) * sizeof(*keep));
    for (size_t i = 0; all && keep && i < n; i++) {
        all[i] = i < b->count ? b->items[i] : next->items[i - b->count];
        keep[i] = i >= b->count || !done || !done[i];
    }
    if (!all || !keep || sqlq_lease_renewer_set_subset(r->renewer, all, keep, n) != SQLQ_OK)
        SQLQ_WARN("lease_renew_set_failed", "table=%s err=\"out of memory\"", r->cfg.table);
    free(all);
    free(keep);
}
