/* route_shards: a route's shard set: one lane (queue + client) per queue, the lanes' clients,
 * and the per-shard and per-instance publish rates /metrics shows. */
#include "route_internal.h"

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

void sqlq_route_shards_metrics(sqlq_route *r, uint64_t now)
{
    if (!r->delivery || !r->shard_seen)
        return;
    size_t n = sqlq_delivery_lane_count(r->delivery);
    uint64_t elapsed = now - r->rate_ms;
    bool sample = r->rate_ms == 0 || elapsed >= RATE_SAMPLE_MS;
    unsigned long long total = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned long long acc = sqlq_delivery_lane_accepted(r->delivery, i);
        total += acc;
        if (r->nlanes == 0 || !sample)
            continue;
        sqlq_counter_add(r->m_shard_published[i], acc - r->shard_seen[i]);
        if (r->rate_ms != 0)
            sqlq_gauge_set(r->m_shard_rate[i], (double)(acc - r->shard_seen[i]) * 1000.0 / (double)elapsed);
        r->shard_seen[i] = acc;
    }
    if (!sample)
        return;
    if (r->rate_ms != 0)
        sqlq_gauge_set(r->m_rate, (double)(total - r->rate_seen) * 1000.0 / (double)elapsed);
    r->rate_seen = total;
    r->rate_ms = now;
}
