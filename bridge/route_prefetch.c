/* route_prefetch: the helper thread that polls a route's next batch while the current one is
 * on the wire, and the lease renewal set that covers both. */
#include "route_internal.h"

#include "log.h"

#include <stdlib.h>
#include <string.h>

static void *prefetch_main(void *arg)
{
    sqlq_route_prefetch *p = arg;
    /* The previous batch was accepted by the queue: its release is bookkeeping that need not
     * hold up this one. Then the poll, which sees those changes released. */
    sqlq_route_release_pending(p->r);
    if (!p->poll)
        return NULL;
    p->rc = p->r->cap ? sqlq_capture_poll(p->r->cap, &p->batch, &p->err)
                      : sqlq_error_set(&p->err, SQLQ_E_SQL, true, "capture not open");
    /* Leased now: renewed from now on, not from when the current batch is settled (its
     * publish may retry for longer than a lease lasts). The route thread is inside the
     * publish call and does not touch the renewal set until it has joined this thread. */
    if (p->rc == SQLQ_OK && p->batch.count > 0)
        sqlq_route_set_in_flight(p->r, p->current, NULL, &p->batch);
    return NULL;
}

void sqlq_route_prefetch_start(sqlq_route_prefetch *p, const sqlq_change_batch *current, bool poll)
{
    p->current = current;
    p->poll = poll;
    sqlq_error_clear(&p->err);
    memset(&p->batch, 0, sizeof(p->batch));
    p->rc = SQLQ_OK;
    p->started = pthread_create(&p->thread, NULL, prefetch_main, p) == 0;
    if (!p->started)
        sqlq_route_release_pending(p->r);
}

/* Join the helper; false when nothing usable came of it (not started, or its poll failed:
 * logged, and the next poll of the loop goes through the usual recovery). */
bool sqlq_route_prefetch_join(sqlq_route_prefetch *p)
{
    if (!p->started)
        return false;
    pthread_join(p->thread, NULL);
    p->started = false;
    if (!p->poll)
        return false;
    if (p->rc == SQLQ_OK)
        return true;
    sqlq_route_log_error("poll_failed", p->r, &p->err);
    sqlq_change_batch_free(&p->batch);
    return false;
}

/* Lease renewal covers what is still undelivered of `b` and all of `next` (already leased). */
void sqlq_route_set_in_flight(sqlq_route *r, const sqlq_change_batch *b, const bool *done,
                              const sqlq_change_batch *next)
{
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
