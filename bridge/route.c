/* route: one watched table published to one queue: poll → publish → release → advance. */
#include "route_internal.h"

#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROGRESS_LOG_MS 30000u
/* Under load the sync version moves at most this often. Delivered changes are recorded by
 * their released leases, which a poll never hands out again, so advancing is bookkeeping (how
 * far the log may be trimmed), not what keeps a delivered change from coming back: per batch
 * it cost a transaction of five round trips. */
#define ADVANCE_EVERY_MS 1000u

bool sqlq_route_stopping(const sqlq_route *r)
{
    return *r->env.stop != 0;
}

void sqlq_route_mark_down(sqlq_route *r, bool *flag, bool down, bool is_db)
{
    if (*flag == down)
        return;
    *flag = down;
    if (!down && !is_db)
        r->last_queue_ok_ms = sqlq_clock_now_ms(&r->clock);
    if (r->env.health)
        atomic_fetch_add(is_db ? &r->env.health->db_down : &r->env.health->queue_down, down ? 1 : -1);
}

void sqlq_route_config_default(sqlq_route_config *c)
{
    memset(c, 0, sizeof(*c));
    c->bridge_name = "default";
    c->max_batch_size = 100;
    c->polling_interval_ms = 1000;
    c->max_in_flight = 16;
    c->lease_s = 60;
    c->max_attempts = 5;
    c->start_from = SQLQ_START_BEGINNING;
    c->format = SQLQ_FORMAT_ROW;
    c->oversize = SQLQ_OVERSIZE_TRUNCATE;
    c->max_message_bytes = SQLQ_MESSAGE_MAX_TEXT;
    c->message_ttl_s = -1;
}

static uint64_t queue_clock_now(void *ctx)
{
    return sqlq_clock_now_ms(&((sqlq_route *)ctx)->clock);
}

/* Requests already on the wire finish after a stop request (their changes are then released);
 * only waits before a retry are cut short. */
static bool queue_clock_sleep(void *ctx, uint64_t ms)
{
    return ms == 0 || sqlq_clock_sleep_ms(&((sqlq_route *)ctx)->clock, ms);
}

static double queue_clock_random(void *ctx)
{
    return sqlq_clock_random(&((sqlq_route *)ctx)->clock);
}

static sqlq_backoff_policy wait_policy(void)
{
    sqlq_backoff_policy p = {500, 30000, 0, 0, 0.2};
    return p;
}

static void init_metrics(sqlq_route *r)
{
    sqlq_metrics *m = r->env.metrics;
    sqlq_label tq[] = {{"table", r->cfg.table}, {"queue", r->cfg.queue}};
    sqlq_label q[] = {{"queue", r->cfg.queue}};
    sqlq_label t[] = {{"table", r->cfg.table}};
    r->m_published = sqlq_metrics_counter(m, SQLQ_METRIC_CHANGES_PUBLISHED, NULL, tq, 2);
    r->m_poisoned = sqlq_metrics_counter(m, SQLQ_METRIC_MESSAGES_POISONED, NULL, q, 1);
    r->m_renewals = sqlq_metrics_counter(m, SQLQ_METRIC_LEASE_RENEWALS, NULL, t, 1);
    r->m_publish_s = sqlq_metrics_histogram(m, SQLQ_METRIC_PUBLISH_SECONDS, NULL, NULL, 0, q, 1);
    r->m_pending = sqlq_metrics_gauge(m, SQLQ_METRIC_PENDING_CHANGES, NULL, t, 1);
    r->m_pending_age = sqlq_metrics_gauge(m, "sqlq_oldest_pending_change_age_seconds",
                                          "Age of the oldest captured change not yet delivered "
                                          "(to within 5 s), per table.", t, 1);
    sqlq_label rq[] = {{"reason", "queue_unavailable"}};
    sqlq_label rd[] = {{"reason", "database_unavailable"}};
    sqlq_label rl[] = {{"reason", "lease_lost"}};
    r->m_retry_queue = sqlq_metrics_counter(m, SQLQ_METRIC_RETRIES, NULL, rq, 1);
    r->m_retry_db = sqlq_metrics_counter(m, SQLQ_METRIC_RETRIES, NULL, rd, 1);
    r->m_lease_lost = sqlq_metrics_counter(m, SQLQ_METRIC_RETRIES, NULL, rl, 1);
}

sqlq_result sqlq_route_create(const sqlq_route_env *env, const sqlq_route_config *cfg,
                              sqlq_route **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_route *r = calloc(1, sizeof(*r));
    if (!r)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    r->env = *env;
    r->cfg = *cfg;
    r->clock = sqlq_clock_system(env->stop);
    r->queue_clock = (sqlq_clock){queue_clock_now, queue_clock_sleep, queue_clock_random, r};
    sqlq_capture_config_default(&r->ccfg);
    r->ccfg.bridge_name = cfg->bridge_name;
    r->ccfg.table = cfg->table;
    r->ccfg.instance_id = env->instance_id;
    r->ccfg.max_batch_size = cfg->max_batch_size;
    r->ccfg.lease_s = cfg->lease_s;
    r->ccfg.max_attempts = cfg->max_attempts;
    r->ccfg.start_from = cfg->start_from;
    r->ccfg.source = cfg->source;
    r->ccfg.cursor_column = cfg->cursor_column;
    r->ccfg.soft_delete_column = cfg->soft_delete_column;
    r->ccfg.safety_lag_ms = cfg->safety_lag_ms;
    r->ccfg.allow_retention_gap = cfg->allow_retention_gap;
    sqlq_backoff_policy p = wait_policy();
    sqlq_backoff_init(&r->db_backoff, &p, &r->clock);
    sqlq_backoff_policy op = sqlq_backoff_policy_outage();
    sqlq_backoff_init(&r->probe_backoff, &op, &r->clock);
    init_metrics(r);

    sqlq_queue_options qo;
    sqlq_queue_options_default(&qo);
    qo.encoding = env->encoding;
    qo.clock = &r->queue_clock;
    qo.timeout_ms = 10000;
    /* The client retries a put for a few seconds; past that the route takes over (logs the
     * outage, keeps the leases renewed and retries with its own back-off). */
    qo.retry.max_total_ms = 5000;
    sqlq_outage_init(&r->outage, cfg->table, cfg->queue);
    sqlq_delivery_config dc = {cfg->queue, {0}, cfg->max_in_flight, cfg->max_attempts, cfg->message_ttl_s};
    sqlq_envelope_config_default(&dc.envelope);
    dc.envelope.bridge_name = cfg->bridge_name;
    dc.envelope.table = cfg->table;
    dc.envelope.format = cfg->format;
    dc.envelope.oversize = cfg->oversize;
    dc.envelope.encoding = env->encoding;
    dc.envelope.max_text = cfg->max_message_bytes;
    sqlq_result rc = sqlq_queue_client_create(env->account, &qo, &r->client, err);
    if (rc == SQLQ_OK)
        rc = sqlq_delivery_create(r->client, &dc, &r->delivery, err);
    if (rc != SQLQ_OK) {
        sqlq_route_destroy(r);
        return rc;
    }
    *out = r;
    return SQLQ_OK;
}

void sqlq_route_destroy(sqlq_route *r)
{
    if (!r)
        return;
    sqlq_change_batch_free(&r->pend); /* normally empty: the loop releases it before it ends */
    sqlq_lease_renewer_stop(r->renewer);
    sqlq_capture_close(r->cap);
    sqlq_db_close(r->db);
    sqlq_delivery_destroy(r->delivery);
    sqlq_queue_client_destroy(r->client);
    free(r);
}

void sqlq_route_stats_add(const sqlq_route *r, sqlq_bridge_stats *sum)
{
    sqlq_delivery_counts c;
    sqlq_delivery_counts_get(r->delivery, &c);
    sum->changes += r->changes;
    sum->messages += c.messages;
    sum->released += r->released;
    sum->poisoned += c.poisoned;
    sum->lost += r->lost;
    sum->transient += c.transient;
}

void sqlq_route_log_error(const char *event, const sqlq_route *r, const sqlq_error *e)
{
    if (e->transient)
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, event, e, "table=%s queue=%s transient=true", r->cfg.table, r->cfg.queue);
    else
        SQLQ_LOG_ERR(SQLQ_LOG_ERROR, event, e, "table=%s queue=%s", r->cfg.table, r->cfg.queue);
}

/* With --once: what is left of the outage budget when an outage began at since_ms. */
static uint64_t once_budget_left(const sqlq_route *r, uint64_t since_ms)
{
    uint64_t budget = (uint64_t)r->env.once_outage_s * 1000u, now = sqlq_clock_now_ms(&r->clock);
    return now - since_ms >= budget ? 0 : budget - (now - since_ms);
}

/* With --once: the outage that began at since_ms outlasted the budget; the route gives up. */
static bool give_up(sqlq_route *r, uint64_t since_ms, const char *what, const char *cause, sqlq_result code)
{
    if (!r->env.once || since_ms == 0 || once_budget_left(r, since_ms) > 0)
        return false;
    if (!r->gave_up)
        sqlq_error_set(&r->gave_up_err, code, false,
                       "%s unavailable for %d s (once_outage_s), giving up: %s", what,
                       r->env.once_outage_s, cause);
    r->gave_up = true;
    return true;
}

/* Sleep the next back-off step (with --once, never past the outage budget of an outage that
 * began at since_ms, 0 = none); false when a stop request cut it short. */
static bool backoff_sleep(sqlq_route *r, sqlq_backoff *b, uint64_t since_ms)
{
    uint64_t delay = 30000;
    if (!sqlq_backoff_next(b, 0, &delay))
        sqlq_backoff_reset(b);
    if (r->env.once && since_ms && delay > once_budget_left(r, since_ms))
        delay = once_budget_left(r, since_ms);
    return sqlq_clock_sleep_ms(&r->clock, delay) && !sqlq_route_stopping(r);
}

/* With --once: the queue service's outage outlasted the budget. */
static bool queue_give_up(sqlq_route *r)
{
    return give_up(r, r->outage.since_ms, "queue service", r->outage.cause, SQLQ_E_NETWORK);
}

static void db_failed(sqlq_route *r)
{
    if (r->db_down_since_ms == 0)
        r->db_down_since_ms = sqlq_clock_now_ms(&r->clock);
}

/* (Re)open the capture on the current connection. */
static sqlq_result open_capture(sqlq_route *r, sqlq_error *err)
{
    sqlq_capture_close(r->cap);
    r->cap = NULL;
    return sqlq_capture_open(r->db, &r->ccfg, &r->cap, err);
}

/* After a failed database call: wait, reconnect when the failure was transient (or a failure
 * repeats: a driver may report a dead connection as something else), reopen the capture.
 * false: give up (stop requested, or a permanent failure in --once mode). */
bool sqlq_route_recover_db(sqlq_route *r, const char *what, const sqlq_error *failed)
{
    sqlq_route_log_error(what, r, failed);
    r->db_failures++;
    db_failed(r);
    if (sqlq_route_stopping(r) || (!failed->transient && r->env.once) ||
        give_up(r, r->db_down_since_ms, "database", failed->message, SQLQ_E_SQL))
        return false;
    if (!backoff_sleep(r, &r->db_backoff, r->db_down_since_ms))
        return false;
    sqlq_error err;
    sqlq_error_clear(&err);
    bool reconnect = failed->transient || r->db_failures >= 2;
    if (reconnect && sqlq_db_reconnect(r->db, r->env.stop, &err) != SQLQ_OK) {
        sqlq_route_log_error("db_reconnect_failed", r, &err);
        return !sqlq_route_stopping(r);
    }
    sqlq_error_clear(&err);
    if (open_capture(r, &err) != SQLQ_OK)
        sqlq_route_log_error("capture_open_failed", r, &err);
    else
        SQLQ_INFO("db_reconnected", "table=%s", r->cfg.table);
    return !sqlq_route_stopping(r);
}

static int renew_interval_ms(const sqlq_route *r)
{
    if (r->env.renew_interval_ms > 0)
        return r->env.renew_interval_ms;
    int third = r->cfg.lease_s * 1000 / 3;
    return third < 15000 ? (third > 100 ? third : 100) : 15000;
}

/* Connect, open the capture, start lease renewal and create the queue; transient failures are
 * retried until they pass or a stop request comes. */
static sqlq_result start(sqlq_route *r, sqlq_error *err)
{
    for (;;) {
        sqlq_error e;
        sqlq_error_clear(&e);
        sqlq_result rc = r->db ? SQLQ_OK : sqlq_db_connect(r->env.db_connection, &r->db, &e);
        if (rc == SQLQ_OK && !r->cap)
            rc = open_capture(r, &e);
        if (rc == SQLQ_OK && !r->renewer)
            rc = sqlq_lease_renewer_start(r->env.db_connection, &r->ccfg, renew_interval_ms(r),
                                          &r->renewer, &e);
        /* The queue is not touched here: the first put creates it if missing, so a credential
         * that may only add messages is enough; the first idle poll probes it for /readyz. */
        if (rc == SQLQ_OK) {
            SQLQ_INFO("route_started", "table=%s queue=%s bridge=%s instance=%s format=%s message_ttl_s=%lld",
                      r->cfg.table, r->cfg.queue, r->cfg.bridge_name, r->env.instance_id,
                      sqlq_envelope_format_name(r->cfg.format), r->cfg.message_ttl_s);
            r->db_down_since_ms = 0;
            sqlq_route_mark_down(r, &r->queue_down, true, false); /* until the queue service answers */
            if (r->env.health)
                atomic_fetch_add(&r->env.health->started, 1);
            return SQLQ_OK;
        }
        sqlq_route_log_error("route_start_failed", r, &e);
        db_failed(r);
        if (!e.transient || give_up(r, r->db_down_since_ms, "database", e.message, SQLQ_E_SQL)) {
            if (err && err->code == SQLQ_OK)
                *err = r->gave_up ? r->gave_up_err : e;
            return r->gave_up ? r->gave_up_err.code : rc;
        }
        if (r->db && !r->cap) { /* a connection that failed mid-way: start it afresh */
            sqlq_db_close(r->db);
            r->db = NULL;
        }
        if (!backoff_sleep(r, &r->db_backoff, r->db_down_since_ms))
            return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "stopped before the route started");
    }
}

/* The first change of b not yet done: during an outage one message probes the service, so
 * that a long outage costs one request per back-off step, not one per change. */
static size_t first_undone(const sqlq_change_batch *b, const bool *done)
{
    size_t i = 0;
    while (i < b->count && done[i])
        i++;
    return i;
}

/* Publish one polled batch until every change is accepted, poisoned or refused for good;
 * during an outage keep retrying with back-off (leases renewed meanwhile, attempts not
 * counted); with --once give up after once_outage_s. `pf` (may be NULL): poll the next batch
 * while the first publish round is on the wire; *have_next tells whether pf->batch holds it. */
static void deliver(sqlq_route *r, const sqlq_change_batch *b, sqlq_route_prefetch *pf, bool *have_next)
{
    sqlq_route_prefetch helper = {.r = r};
    if (!pf && r->pend.count > 0)
        pf = &helper; /* a helper only to release the previous batch */
    sqlq_outcome *outcomes = calloc(b->count, sizeof(*outcomes));
    bool *done = calloc(b->count, sizeof(*done));
    sqlq_backoff qb;
    sqlq_backoff_policy p = sqlq_backoff_policy_outage(); /* catch up within 10 s of a recovery */
    sqlq_backoff_init(&qb, &p, &r->clock);
    const sqlq_change_batch *next = NULL;
    sqlq_route_set_in_flight(r, b, NULL, &r->pend);
    for (unsigned round = 0; outcomes && done; round++) {
        sqlq_error e;
        sqlq_error_clear(&e);
        if (round == 0 && pf)
            sqlq_route_prefetch_start(pf, b, pf != &helper);
        uint64_t t0 = sqlq_clock_now_ms(&r->clock);
        bool probe = r->outage.down;
        size_t from = probe ? first_undone(b, done) : 0, n = probe ? 1 : b->count;
        if (sqlq_delivery_publish(r->delivery, b->items + from, n, outcomes + from, &e) != SQLQ_OK)
            sqlq_route_log_error("publish_failed", r, &e);
        sqlq_histogram_observe(r->m_publish_s, (double)(sqlq_clock_now_ms(&r->clock) - t0) / 1000.0);
        if (round == 0 && pf && sqlq_route_prefetch_join(pf)) {
            *have_next = true;
            next = &pf->batch;
        }
        sqlq_route_note_round(r);
        /* Accepted in the first round with more already polled: its release rides along with
         * the next batch. */
        sqlq_route_settle(r, b, outcomes, done, round == 0 && next && next->count > 0);
        if (first_undone(b, done) == b->count)
            break;
        sqlq_route_set_in_flight(r, b, done, next);
        if (probe && !r->outage.down)
            continue; /* the probe went through: the rest at once */
        if (r->outage.down && queue_give_up(r)) {
            sqlq_route_abandon_rest(r, b, done); /* not counted: the outage is not their fault */
            break;
        }
        if (sqlq_route_stopping(r) || !backoff_sleep(r, &qb, r->outage.down ? r->outage.since_ms : 0)) {
            sqlq_route_abandon_rest(r, b, done);
            break;
        }
    }
    sqlq_route_set_in_flight(r, &r->pend, NULL, next); /* what stays leased until the next batch */
    free(outcomes);
    free(done);
}

static void advance(sqlq_route *r)
{
    if (!r->cap)
        return;
    r->last_advance_ms = sqlq_clock_now_ms(&r->clock);
    sqlq_error e;
    sqlq_error_clear(&e);
    int64_t v = 0;
    if (sqlq_capture_advance(r->cap, &v, &e) != SQLQ_OK)
        sqlq_route_log_error("advance_failed", r, &e); /* the next poll notices a broken connection */
    else
        SQLQ_DEBUG("advanced", "table=%s sync_version=%lld", r->cfg.table, (long long)v);
}

/* Metrics read from elsewhere: pending changes (a query) and lease renewals, every 5 s. */
static void refresh_metrics(sqlq_route *r, uint64_t now)
{
    if (!r->env.metrics || now - r->last_status_ms < 5000)
        return;
    r->last_status_ms = now;
    unsigned long long renewals = r->renewer ? sqlq_lease_renewer_count(r->renewer) : 0;
    sqlq_counter_add(r->m_renewals, renewals - r->renewals_seen);
    r->renewals_seen = renewals;
    sqlq_capture_status st;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (r->cap && sqlq_capture_status_get(r->cap, &st, &e) == SQLQ_OK) {
        sqlq_gauge_set(r->m_pending, (double)st.pending);
        sqlq_gauge_set(r->m_pending_age, st.oldest_pending_age_s);
        sqlq_capture_status_free(&st);
    }
}

static void progress(sqlq_route *r, bool force)
{
    uint64_t now = sqlq_clock_now_ms(&r->clock);
    refresh_metrics(r, now);
    if (!force && now - r->last_progress_ms < PROGRESS_LOG_MS)
        return;
    r->last_progress_ms = now;
    sqlq_bridge_stats s;
    memset(&s, 0, sizeof(s));
    sqlq_route_stats_add(r, &s);
    SQLQ_INFO("progress", "table=%s queue=%s changes=%llu messages=%llu released=%llu poisoned=%llu lost=%llu",
              r->cfg.table, r->cfg.queue, s.changes, s.messages, s.released, s.poisoned, s.lost);
}

/* One poll; false when polling failed (after waiting and reconnecting) and the loop should
 * look at the stop flag; *fatal when it must end (permanent failure in --once mode). */
static bool poll_once(sqlq_route *r, sqlq_change_batch *b, bool *fatal, sqlq_error *err)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result rc = r->cap ? sqlq_capture_poll(r->cap, b, &e)
                            : sqlq_error_set(&e, SQLQ_E_SQL, true, "capture not open");
    if (rc == SQLQ_OK) {
        sqlq_backoff_reset(&r->db_backoff);
        r->db_failures = 0;
        r->db_down_since_ms = 0;
        sqlq_route_mark_down(r, &r->db_down, false, true);
        return true;
    }
    sqlq_route_mark_down(r, &r->db_down, true, true);
    sqlq_counter_inc(r->m_retry_db);
    if (!sqlq_route_recover_db(r, "poll_failed", &e) && !sqlq_route_stopping(r)) {
        *fatal = true;
        if (err && err->code == SQLQ_OK)
            *err = e;
    }
    return false;
}

sqlq_result sqlq_route_run(sqlq_route *r, sqlq_error *err)
{
    sqlq_result rc = start(r, err);
    if (rc != SQLQ_OK)
        return sqlq_route_stopping(r) ? SQLQ_OK : rc;
    r->last_progress_ms = sqlq_clock_now_ms(&r->clock);
    bool idle_advanced = false, fatal = false;
    sqlq_route_prefetch pf = {.r = r};
    sqlq_change_batch next = {0};
    bool polled_ahead = false;
    sqlq_backoff idle_backoff;
    sqlq_backoff_policy op = sqlq_backoff_policy_outage();
    sqlq_backoff_init(&idle_backoff, &op, &r->clock);
    while (!sqlq_route_stopping(r) && !fatal && !r->gave_up) {
        sqlq_change_batch b = {0};
        if (polled_ahead) {
            b = next;
            memset(&next, 0, sizeof(next));
        } else if (!poll_once(r, &b, &fatal, err)) {
            continue;
        }
        polled_ahead = false;
        if (b.count == 0) {
            sqlq_change_batch_free(&b);
            sqlq_route_release_pending(r);
            if (!idle_advanced)
                advance(r);
            idle_advanced = true;
            refresh_metrics(r, sqlq_clock_now_ms(&r->clock));
            sqlq_route_probe_queue(r);
            /* --once ends when drained, but not silently while the queue service is down. */
            if (r->env.once && r->queue_down && !queue_give_up(r)) {
                (void)backoff_sleep(r, &idle_backoff, r->outage.since_ms);
                continue;
            }
            if (r->env.once)
                break;
            (void)sqlq_clock_sleep_ms(&r->clock, (uint64_t)r->cfg.polling_interval_ms);
            continue;
        }
        idle_advanced = false;
        r->changes += b.count;
        uint64_t t0 = sqlq_clock_now_ms(&r->clock);
        /* A full batch: more is likely waiting, poll it while this one is on the wire. */
        deliver(r, &b, b.full && !sqlq_route_stopping(r) ? &pf : NULL, &polled_ahead);
        if (!b.full || sqlq_clock_now_ms(&r->clock) - r->last_advance_ms >= ADVANCE_EVERY_MS)
            advance(r);
        SQLQ_DEBUG("batch", "table=%s changes=%zu full=%d ms=%llu", r->cfg.table, b.count, (int)b.full,
                   (unsigned long long)(sqlq_clock_now_ms(&r->clock) - t0));
        bool full = b.full;
        sqlq_change_batch_free(&b);
        if (polled_ahead) {
            next = pf.batch;
            memset(&pf.batch, 0, sizeof(pf.batch));
        }
        progress(r, false);
        if (!full && !r->env.once)
            (void)sqlq_clock_sleep_ms(&r->clock, (uint64_t)r->cfg.polling_interval_ms);
    }
    sqlq_route_release_pending(r);
    if (next.count > 0) { /* polled ahead, then asked to stop: give them back as they were */
        bool *none = calloc(next.count, sizeof(*none));
        if (none)
            sqlq_route_abandon_rest(r, &next, none);
        free(none);
    }
    sqlq_change_batch_free(&next);
    progress(r, true);
    SQLQ_INFO("route_stopped", "table=%s queue=%s", r->cfg.table, r->cfg.queue);
    if (r->gave_up && err && err->code == SQLQ_OK)
        *err = r->gave_up_err;
    if (r->gave_up)
        return r->gave_up_err.code;
    return fatal ? (err && err->code ? err->code : SQLQ_E_SQL) : SQLQ_OK;
}
