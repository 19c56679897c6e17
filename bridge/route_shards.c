/* route_shards: a route's shard set: one lane (queue + client) per queue, the lanes' clients,
 * and the per-shard and per-instance publish rates /metrics shows. */
#include "route_internal.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE_SAMPLE_MS 5000u

const sqlq_account *sqlq_route_shard_account(const sqlq_route *r, size_t i)
{
    const sqlq_account *a = r->cfg.shard_accounts && i < r->cfg.nshards ? r->cfg.shard_accounts[i] : NULL;
    return a ? a : r->env.account;
}

static void lane_metrics(sqlq_route *r, size_t i)
{
    char shard[24];
    snprintf(shard, sizeof(shard), "%zu", i);
    sqlq_label l[] = {{"table", r->cfg.table}, {"queue", r->lanes[i].queue}, {"shard", shard},
                      {"instance", r->env.instance_id}};
    r->m_shard_published[i] = sqlq_metrics_counter(
        r->env.metrics, "sqlq_shard_changes_published_total",
        "Changes the queue of one shard accepted from this instance, per table and shard queue.",
        l, 3);
    r->m_shard_rate[i] = sqlq_metrics_gauge(
        r->env.metrics, "sqlq_shard_publish_rate",
        "Changes per second this instance published to one shard queue (over about 5 s).", l, 4);
}

sqlq_result sqlq_route_shards_create(sqlq_route *r, const sqlq_queue_options *lane_opts,
                                     sqlq_delivery_config *dc, sqlq_error *err)
{
    size_t n = r->cfg.nshards ? r->cfg.nshards : 1;
    r->m_shard_published = calloc(n, sizeof(*r->m_shard_published));
    r->m_shard_rate = calloc(n, sizeof(*r->m_shard_rate));
    r->shard_seen = calloc(n, sizeof(*r->shard_seen));
    r->lanes = calloc(n, sizeof(*r->lanes));
    r->lane_clients = calloc(n, sizeof(*r->lane_clients));
    if (!r->m_shard_published || !r->m_shard_rate || !r->shard_seen || !r->lanes || !r->lane_clients)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_label l[] = {{"table", r->cfg.table}, {"queue", r->cfg.queue}, {"instance", r->env.instance_id}};
    r->m_rate = sqlq_metrics_gauge(r->env.metrics, "sqlq_publish_rate",
                                   "Changes per second this instance published for a route (over "
                                   "about 5 s), per table, queue (or shard set) and instance.",
                                   l, 3);
    if (r->cfg.nshards == 0)
        return SQLQ_OK;
    r->nlanes = n;
    for (size_t i = 0; i < n; i++) {
        const sqlq_account *a = sqlq_route_shard_account(r, i);
        r->lanes[i] = (sqlq_delivery_lane){r->cfg.shard_queues[i], r->client, a->sas};
        if (i > 0) {
            sqlq_result rc = sqlq_queue_client_create(a, lane_opts, &r->lane_clients[i], err);
            if (rc != SQLQ_OK)
                return rc;
            r->lanes[i].client = r->lane_clients[i];
        }
        lane_metrics(r, i);
    }
    dc->lanes = r->lanes;
    dc->nlanes = n;
    return SQLQ_OK;
}

void sqlq_route_shards_destroy(sqlq_route *r)
{
    for (size_t i = 0; r->lane_clients && i < r->nlanes; i++)
        sqlq_queue_client_destroy(r->lane_clients[i]);
    free(r->lane_clients);
    free(r->lanes);
    free(r->m_shard_published);
    free(r->m_shard_rate);
    free(r->shard_seen);
}

/* How long `sqlq status` shows a report of the rates: six samples, so that a route that is
 * slow to come back to its loop (a long poll, a queue outage) still shows. */
#define RATE_SHOWN_S 30

/* The rates of a sample where `sqlq status` reads them (capture_presence.h): the route's and
 * each queue's ({"queue": per_s}). A failure only leaves the last report to run out. */
static void report_rates(sqlq_route *r, const double *lane, size_t n, double total)
{
    if (!r->cap)
        return;
    json_t *queues = json_object();
    for (size_t i = 0; queues && i < n; i++)
        json_object_set_new(queues, r->nlanes ? r->lanes[i].queue : r->cfg.queue,
                            json_real(lane[i]));
    char *text = queues ? json_dumps(queues, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(queues);
    sqlq_error e;
    sqlq_error_clear(&e);
    if (!text)
        sqlq_error_set(&e, SQLQ_E_NOMEM, false, "out of memory");
    else if (sqlq_capture_rate(r->cap, total, text, RATE_SHOWN_S, &e) == SQLQ_OK)
        e.code = SQLQ_OK;
    if (e.code != SQLQ_OK)
        SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "rate_report_failed", &e, "table=%s", r->cfg.table);
    free(text);
}

void sqlq_route_shards_metrics(sqlq_route *r, uint64_t now)
{
    if (!r->delivery || !r->shard_seen)
        return;
    size_t n = sqlq_delivery_lane_count(r->delivery);
    uint64_t elapsed = now - r->rate_ms;
    bool sample = r->rate_ms == 0 || elapsed >= RATE_SAMPLE_MS;
    if (!sample)
        return;
    double *lane = calloc(n ? n : 1, sizeof(*lane));
    unsigned long long total = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned long long acc = sqlq_delivery_lane_accepted(r->delivery, i);
        unsigned long long seen = r->nlanes ? r->shard_seen[i] : r->rate_seen;
        total += acc;
        if (lane && r->rate_ms != 0)
            lane[i] = (double)(acc - seen) * 1000.0 / (double)elapsed;
        if (r->nlanes == 0)
            continue;
        sqlq_counter_add(r->m_shard_published[i], acc - r->shard_seen[i]);
        if (r->rate_ms != 0)
            sqlq_gauge_set(r->m_shard_rate[i], lane ? lane[i] : 0);
        r->shard_seen[i] = acc;
    }
    if (r->rate_ms != 0) {
        double per_s = (double)(total - r->rate_seen) * 1000.0 / (double)elapsed;
        sqlq_gauge_set(r->m_rate, per_s);
        if (lane)
            report_rates(r, lane, n, per_s);
    }
    free(lane);
    r->rate_seen = total;
    r->rate_ms = now;
}
