/* route_queue: the queue service's health as one route sees it: idle probes, the outage
 * record after each publish round, /readyz. */
#include "route_internal.h"

#include "fault.h"

#include <string.h>
#include <time.h>

/* An idle route has no reason to talk to the queue service: ask it every few seconds so that
 * /readyz tells the truth (one cheap metadata request). */
#define QUEUE_PROBE_MS 5000u

/* The queue service answered a probe (or refused it): the outage record and /readyz follow. */
static void probe_result(sqlq_route *r, uint64_t now, bool ok, sqlq_fault_kind kind, const char *op,
                         const sqlq_delivery_lane *lane, const sqlq_error *e)
{
    if (ok) {
        r->last_queue_ok_ms = now;
        sqlq_backoff_reset(&r->probe_backoff);
        sqlq_outage_recovered(&r->outage, now);
    } else {
        uint64_t delay = 10000;
        if (!sqlq_backoff_next(&r->probe_backoff, 0, &delay))
            sqlq_backoff_reset(&r->probe_backoff);
        r->next_probe_ms = sqlq_clock_now_ms(&r->clock) + delay;
        sqlq_counter_inc(r->m_retry_queue);
        sqlq_fault_context c = {op,
                                lane->queue,
                                e->http_status,
                                e->azure_code,
                                lane->sas ? lane->sas : r->env.account->sas,
                                (int64_t)time(NULL),
                                e->message};
        char cause[400], detail[600] = "";
        sqlq_fault_describe(kind, &c, cause, sizeof(cause));
        sqlq_error_format(e, detail, sizeof(detail));
        sqlq_outage_failed(&r->outage, now, cause, detail);
    }
    sqlq_route_mark_down(r, &r->queue_down, !ok, false);
}

/* Ask whether the queue exists (Get Queue Metadata). A missing queue is created now (the one
 * case the bridge needs the create permission), so consumers can start before the first
 * change. A credential without read permission (SAS sp=a) gets 403 here: reachable, valid.
 * A shard set's queues are asked in turn, one per probe. */
void sqlq_route_probe_queue(sqlq_route *r)
{
    uint64_t now = sqlq_clock_now_ms(&r->clock);
    if (r->queue_down ? now < r->next_probe_ms : now - r->last_queue_ok_ms < QUEUE_PROBE_MS)
        return; /* while down, the outage back-off: never a probe per poll */
    bool exists = false;
    sqlq_error e;
    sqlq_error_clear(&e);
    size_t i = r->probe_lane++ % sqlq_delivery_lane_count(r->delivery);
    const sqlq_delivery_lane *lane = sqlq_delivery_lane_get(r->delivery, i);
    sqlq_result rc = sqlq_queue_exists(lane->client, lane->queue, &exists, &e);
    const char *op = "get queue properties";
    if (rc == SQLQ_OK && !exists) {
        op = "create queue";
        rc = sqlq_delivery_prepare_lane(r->delivery, i, &e);
    }
    bool expired = sqlq_fault_sas_expired(lane->sas ? lane->sas : r->env.account->sas, (int64_t)time(NULL));
    sqlq_fault_kind kind = expired ? SQLQ_FAULT_AUTHENTICATION
                                   : sqlq_fault_classify(&e);
    bool ok = !expired &&
              (rc == SQLQ_OK || (kind == SQLQ_FAULT_PERMISSION && strcmp(op, "create queue") != 0));
    probe_result(r, now, ok, kind, op, lane, &e);
}

/* After a publish round: a service-wide fault starts or prolongs the outage (logged with its
 * probable cause, /readyz 503); an answer from the queue ends it. */
void sqlq_route_note_round(sqlq_route *r)
{
    sqlq_delivery_fault f;
    sqlq_delivery_fault_get(r->delivery, &f);
    uint64_t now = sqlq_clock_now_ms(&r->clock);
    if (f.any) {
        char cause[400], detail[600];
        sqlq_delivery_fault_describe(&f, r->env.account->sas, cause, sizeof(cause));
        sqlq_error_format(&f.error, detail, sizeof(detail));
        sqlq_outage_failed(&r->outage, now, cause, detail);
        sqlq_counter_inc(r->m_retry_queue);
    } else {
        sqlq_outage_recovered(&r->outage, now);
        r->last_queue_ok_ms = now;
    }
    sqlq_route_mark_down(r, &r->queue_down, f.any, false);
}
