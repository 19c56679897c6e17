/* route: one watched table published to one queue: poll → publish → release → advance. */
#include "route.h"

#include "backoff.h"
#include "delivery.h"
#include "lease_renewer.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PROGRESS_LOG_MS 30000u
/* Under load the sync version moves at most this often. Delivered changes are recorded by
 * their released leases, which a poll never hands out again, so advancing is bookkeeping (how
 * far the log may be trimmed), not what keeps a delivered change from coming back: per batch
 * it cost a transaction of five round trips. */
#define ADVANCE_EVERY_MS 1000u

struct sqlq_route {
    sqlq_route_env env;
    sqlq_route_config cfg;
    sqlq_capture_config ccfg;
    sqlq_clock clock;       /* every sleep ends at once on a stop request */
    sqlq_clock queue_clock; /* the queue client's: a stop request ends retry waits only */
    sqlq_backoff db_backoff;
    sqlq_db *db;
    sqlq_capture *cap;
    sqlq_queue_client *client;
    sqlq_delivery *delivery;
    sqlq_lease_renewer *renewer;
    /* Accepted by the queue, not yet released: released by the helper of the next batch while
     * that batch is on the wire (see prefetch), or at once when there is none. */
    sqlq_change_batch pend;
    unsigned long long changes, released, lost, renewals_seen;
    unsigned db_failures; /* consecutive failed database calls */
    uint64_t last_progress_ms, last_status_ms, last_advance_ms;
    uint64_t last_queue_ok_ms;   /* last time the queue service answered */
    bool db_down, queue_down;    /* reported to /readyz through env.health */
    sqlq_counter *m_published, *m_poisoned, *m_renewals;
    sqlq_counter *m_retry_queue, *m_retry_db, *m_lease_lost; /* sqlq_retries_total{reason} */
    sqlq_histogram *m_publish_s;
    sqlq_gauge *m_pending;
    sqlq_gauge *m_pending_age;
};

static void log_error(const char *event, const sqlq_route *r, const sqlq_error *e);

static bool stopping(const sqlq_route *r)
{
    return *r->env.stop != 0;
}

/* Keep the health counters /readyz reads in step with this route's state. */
static void mark_down(sqlq_route *r, bool *flag, bool down, bool is_db)
{
    if (*flag == down)
        return;
    *flag = down;
    if (!down && !is_db)
        r->last_queue_ok_ms = sqlq_clock_now_ms(&r->clock);
    if (r->env.health)
        atomic_fetch_add(is_db ? &r->env.health->db_down : &r->env.health->queue_down, down ? 1 : -1);
}

/* An idle route has no reason to talk to the queue service: ask it every few seconds so that
 * /readyz tells the truth (one cheap metadata request). */
#define QUEUE_PROBE_MS 5000u

static void probe_queue(sqlq_route *r)
{
    uint64_t now = sqlq_clock_now_ms(&r->clock);
    if (!r->queue_down && now - r->last_queue_ok_ms < QUEUE_PROBE_MS)
        return;
    bool exists = false;
    sqlq_error e;
    sqlq_error_clear(&e);
    bool ok = sqlq_queue_exists(r->client, r->cfg.queue, &exists, &e) == SQLQ_OK;
    if (ok)
        r->last_queue_ok_ms = now;
    else
        sqlq_counter_inc(r->m_retry_queue);
    if (!ok && !r->queue_down)
        log_error("queue_probe_failed", r, &e);
    mark_down(r, &r->queue_down, !ok, false);
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
    init_metrics(r);

    sqlq_queue_options qo;
    sqlq_queue_options_default(&qo);
    qo.encoding = env->encoding;
    qo.clock = &r->queue_clock;
    qo.timeout_ms = 10000;
    /* The client retries a put for a few seconds; past that the route takes over (logs the
     * outage, keeps the leases renewed and retries with its own back-off). */
    qo.retry.max_total_ms = 5000;
    sqlq_delivery_config dc = {cfg->queue, {0}, cfg->max_in_flight, cfg->max_attempts};
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

static void log_error(const char *event, const sqlq_route *r, const sqlq_error *e)
{
    char msg[600];
    sqlq_error_format(e, msg, sizeof(msg));
    if (e->transient)
        SQLQ_WARN(event, "table=%s queue=%s transient=true err=\"%s\"", r->cfg.table, r->cfg.queue, msg);
    else
        SQLQ_ERROR(event, "table=%s queue=%s err=\"%s\"", r->cfg.table, r->cfg.queue, msg);
}

/* Sleep the next back-off step; false when a stop request cut it short. */
static bool backoff_sleep(sqlq_route *r, sqlq_backoff *b)
{
    uint64_t delay = 30000;
    if (!sqlq_backoff_next(b, 0, &delay))
        sqlq_backoff_reset(b);
    return sqlq_clock_sleep_ms(&r->clock, delay) && !stopping(r);
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
static bool recover_db(sqlq_route *r, const char *what, const sqlq_error *failed)
{
    log_error(what, r, failed);
    r->db_failures++;
    if (stopping(r) || (!failed->transient && r->env.once))
        return false;
    if (!backoff_sleep(r, &r->db_backoff))
        return false;
    sqlq_error err;
    sqlq_error_clear(&err);
    bool reconnect = failed->transient || r->db_failures >= 2;
    if (reconnect && sqlq_db_reconnect(r->db, r->env.stop, &err) != SQLQ_OK) {
        log_error("db_reconnect_failed", r, &err);
        return !stopping(r);
    }
    sqlq_error_clear(&err);
    if (open_capture(r, &err) != SQLQ_OK)
        log_error("capture_open_failed", r, &err);
    else
        SQLQ_INFO("db_reconnected", "table=%s", r->cfg.table);
    return !stopping(r);
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
        if (rc == SQLQ_OK)
            rc = sqlq_delivery_prepare(r->delivery, &e);
        if (rc == SQLQ_OK) {
            SQLQ_INFO("route_started", "table=%s queue=%s bridge=%s instance=%s format=%s",
                      r->cfg.table, r->cfg.queue, r->cfg.bridge_name, r->env.instance_id,
                      sqlq_envelope_format_name(r->cfg.format));
            r->last_queue_ok_ms = sqlq_clock_now_ms(&r->clock);
            if (r->env.health)
                atomic_fetch_add(&r->env.health->started, 1);
            return SQLQ_OK;
        }
        log_error("route_start_failed", r, &e);
        if (!e.transient) {
            if (err && err->code == SQLQ_OK)
                *err = e;
            return rc;
        }
        if (r->db && !r->cap) { /* a connection that failed mid-way: start it afresh */
            sqlq_db_close(r->db);
            r->db = NULL;
        }
        if (!backoff_sleep(r, &r->db_backoff))
            return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "stopped before the route started");
    }
}

/* Release (or abandon) until the database takes it. Giving up is safe: the leases expire and
 * the changes are delivered again. */
static void settle_list(sqlq_route *r, const sqlq_change *list, size_t k, bool abandon, bool count_attempt)
{
    for (int permanent_failures = 0; k > 0;) {
        sqlq_error e;
        sqlq_error_clear(&e);
        size_t lost = 0;
        sqlq_result rc = !r->cap ? sqlq_error_set(&e, SQLQ_E_SQL, true, "capture not open")
                         : abandon ? sqlq_capture_abandon(r->cap, list, k, count_attempt, &e)
                                   : sqlq_capture_release(r->cap, list, k, &lost, &e);
        if (rc == SQLQ_E_LEASE_LOST) { /* fenced off: the new owner reads these changes again */
            r->lost += k;
            sqlq_counter_add(r->m_lease_lost, k);
            SQLQ_WARN("lease_lost", "table=%s n=%zu note=\"another instance took over and delivers them again\"",
                      r->cfg.table, k);
            return;
        }
        if (rc == SQLQ_OK) {
            sqlq_backoff_reset(&r->db_backoff);
            r->db_failures = 0;
            if (!abandon)
                r->released += k - lost;
            if (lost > 0) {
                r->lost += lost;
                sqlq_counter_add(r->m_lease_lost, lost);
                SQLQ_WARN("lease_lost", "table=%s n=%zu note=\"another instance owns these changes now "
                          "and delivers them again\"", r->cfg.table, lost);
            }
            return;
        }
        if ((!e.transient && ++permanent_failures >= 3) ||
            !recover_db(r, abandon ? "abandon_failed" : "release_failed", &e)) {
            SQLQ_WARN("changes_left_leased", "table=%s n=%zu note=\"delivered again once the leases expire\"",
                      r->cfg.table, k);
            return;
        }
    }
}

/* Keep `list` (deep copies) in r->pend, released later by release_pending. */
static bool defer_release(sqlq_route *r, const sqlq_change *list, size_t k)
{
    sqlq_change *copy = malloc((k ? k : 1) * sizeof(*copy));
    if (!copy || r->pend.count > 0) {
        free(copy);
        return false;
    }
    for (size_t i = 0; i < k; i++) {
        copy[i] = list[i];
        json_incref(copy[i].key);
        json_incref(copy[i].row);
    }
    r->pend.items = copy;
    r->pend.count = k;
    return true;
}

static void release_pending(sqlq_route *r)
{
    if (r->pend.count > 0)
        settle_list(r, r->pend.items, r->pend.count, false, false);
    sqlq_change_batch_free(&r->pend);
}

/* Release what a queue accepted, abandon (attempt counted) what was refused for good; mark them
 * done. `defer`: when every change is accepted or poisoned, keep the release for later. */
static void settle(sqlq_route *r, const sqlq_change_batch *b, const sqlq_outcome *outcomes, bool *done,
                   bool defer)
{
    sqlq_change *rel = malloc(b->count * sizeof(*rel));
    sqlq_change *fail = malloc(b->count * sizeof(*fail));
    size_t nr = 0, nf = 0;
    for (size_t i = 0; rel && fail && i < b->count; i++) {
        if (done[i])
            continue;
        if (outcomes[i] == SQLQ_OUTCOME_ACCEPTED)
            sqlq_counter_inc(r->m_published);
        if (outcomes[i] == SQLQ_OUTCOME_POISONED)
            sqlq_counter_inc(r->m_poisoned);
        if (outcomes[i] == SQLQ_OUTCOME_ACCEPTED || outcomes[i] == SQLQ_OUTCOME_POISONED) {
            rel[nr++] = b->items[i];
            done[i] = true;
        } else if (outcomes[i] == SQLQ_OUTCOME_FAILED) {
            fail[nf++] = b->items[i];
            done[i] = true;
        }
    }
    bool all = rel && fail && nf == 0;
    for (size_t i = 0; all && i < b->count; i++)
        all = done[i];
    if (!(defer && all && defer_release(r, rel, nr)))
        settle_list(r, rel, nr, false, false);
    settle_list(r, fail, nf, true, true);
    free(rel);
    free(fail);
}

/* Give back what is still undelivered without counting the attempt (stop request). */
static void abandon_rest(sqlq_route *r, const sqlq_change_batch *b, bool *done)
{
    sqlq_change *rest = malloc(b->count * sizeof(*rest));
    size_t k = 0;
    for (size_t i = 0; rest && i < b->count; i++)
        if (!done[i]) {
            rest[k++] = b->items[i];
            done[i] = true;
        }
    settle_list(r, rest, k, true, false);
    free(rest);
}

/* The next batch, polled on the route's connection by a helper thread while the current one is
 * on the wire: the database and the queue service work at the same time instead of in turn.
 * The current batch is settled only after the helper is joined (one user of the connection
 * at a time), and the next batch is published only after the current one is settled, so the
 * order of messages and the rule "publish, then release, then advance" are unchanged. */
typedef struct prefetch {
    sqlq_route *r;
    const sqlq_change_batch *current; /* on the wire meanwhile */
    bool poll;                        /* poll the next batch (after releasing r->pend) */
    pthread_t thread;
    bool started;
    sqlq_result rc;
    sqlq_error err;
    sqlq_change_batch batch;
} prefetch;

static void set_in_flight(sqlq_route *r, const sqlq_change_batch *b, const bool *done,
                          const sqlq_change_batch *next);

static void *prefetch_main(void *arg)
{
    prefetch *p = arg;
    /* The previous batch was accepted by the queue: its release is bookkeeping that need not
     * hold up this one. Then the poll, which sees those changes released. */
    release_pending(p->r);
    if (!p->poll)
        return NULL;
    p->rc = p->r->cap ? sqlq_capture_poll(p->r->cap, &p->batch, &p->err)
                      : sqlq_error_set(&p->err, SQLQ_E_SQL, true, "capture not open");
    /* Leased now: renewed from now on, not from when the current batch is settled (its
     * publish may retry for longer than a lease lasts). The route thread is inside the
     * publish call and does not touch the renewal set until it has joined this thread. */
    if (p->rc == SQLQ_OK && p->batch.count > 0)
        set_in_flight(p->r, p->current, NULL, &p->batch);
    return NULL;
}

static void prefetch_start(prefetch *p, const sqlq_change_batch *current, bool poll)
{
    p->current = current;
    p->poll = poll;
    sqlq_error_clear(&p->err);
    memset(&p->batch, 0, sizeof(p->batch));
    p->rc = SQLQ_OK;
    p->started = pthread_create(&p->thread, NULL, prefetch_main, p) == 0;
    if (!p->started)
        release_pending(p->r);
}

/* Join the helper; false when nothing usable came of it (not started, or its poll failed:
 * logged, and the next poll of the loop goes through the usual recovery). */
static bool prefetch_join(prefetch *p)
{
    if (!p->started)
        return false;
    pthread_join(p->thread, NULL);
    p->started = false;
    if (!p->poll)
        return false;
    if (p->rc == SQLQ_OK)
        return true;
    log_error("poll_failed", p->r, &p->err);
    sqlq_change_batch_free(&p->batch);
    return false;
}

/* Lease renewal covers what is still undelivered of `b` and all of `next` (already leased). */
static void set_in_flight(sqlq_route *r, const sqlq_change_batch *b, const bool *done,
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

/* Publish one polled batch until every change is accepted, poisoned or refused for good;
 * while the queue is unreachable keep retrying with back-off (leases renewed meanwhile).
 * `pf` (may be NULL): poll the next batch while the first publish round is on the wire;
 * *have_next tells whether pf->batch holds it. */
static void deliver(sqlq_route *r, const sqlq_change_batch *b, prefetch *pf, bool *have_next)
{
    prefetch helper = {.r = r};
    if (!pf && r->pend.count > 0)
        pf = &helper; /* a helper only to release the previous batch */
    sqlq_outcome *outcomes = calloc(b->count, sizeof(*outcomes));
    bool *done = calloc(b->count, sizeof(*done));
    sqlq_backoff qb;
    sqlq_backoff_policy p = {1000, 10000, 0, 0, 0.2}; /* catch up within 10 s of a recovery */
    sqlq_backoff_init(&qb, &p, &r->clock);
    const sqlq_change_batch *next = NULL;
    set_in_flight(r, b, NULL, &r->pend);
    for (unsigned round = 0; outcomes && done; round++) {
        sqlq_error e;
        sqlq_error_clear(&e);
        if (round == 0 && pf)
            prefetch_start(pf, b, pf != &helper);
        uint64_t t0 = sqlq_clock_now_ms(&r->clock);
        if (sqlq_delivery_publish(r->delivery, b->items, b->count, outcomes, &e) != SQLQ_OK)
            log_error("publish_failed", r, &e);
        sqlq_histogram_observe(r->m_publish_s, (double)(sqlq_clock_now_ms(&r->clock) - t0) / 1000.0);
        if (round == 0 && pf && prefetch_join(pf)) {
            *have_next = true;
            next = &pf->batch;
        }
        /* Accepted in the first round with more already polled: its release rides along with
         * the next batch. */
        settle(r, b, outcomes, done, round == 0 && next && next->count > 0);
        size_t left = 0, transient = 0;
        for (size_t i = 0; i < b->count; i++) {
            left += !done[i];
            transient += outcomes[i] == SQLQ_OUTCOME_TRANSIENT;
        }
        mark_down(r, &r->queue_down, transient > 0, false);
        if (transient > 0)
            sqlq_counter_inc(r->m_retry_queue);
        if (left == 0)
            break;
        set_in_flight(r, b, done, next);
        if (round == 0 || round % 10 == 0)
            SQLQ_WARN("queue_unavailable", "table=%s queue=%s waiting=%zu round=%u note=\"retrying with back-off\"",
                      r->cfg.table, r->cfg.queue, left, round + 1);
        if (stopping(r) || !backoff_sleep(r, &qb)) {
            abandon_rest(r, b, done);
            break;
        }
    }
    set_in_flight(r, &r->pend, NULL, next); /* what stays leased until the next batch */
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
        log_error("advance_failed", r, &e); /* the next poll notices a broken connection */
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
        mark_down(r, &r->db_down, false, true);
        return true;
    }
    mark_down(r, &r->db_down, true, true);
    sqlq_counter_inc(r->m_retry_db);
    if (!recover_db(r, "poll_failed", &e) && !stopping(r)) {
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
        return stopping(r) ? SQLQ_OK : rc;
    r->last_progress_ms = sqlq_clock_now_ms(&r->clock);
    bool idle_advanced = false, fatal = false;
    prefetch pf = {.r = r};
    sqlq_change_batch next = {0};
    bool polled_ahead = false;
    while (!stopping(r) && !fatal) {
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
            release_pending(r);
            if (!idle_advanced)
                advance(r);
            idle_advanced = true;
            refresh_metrics(r, sqlq_clock_now_ms(&r->clock));
            probe_queue(r);
            if (r->env.once)
                break;
            (void)sqlq_clock_sleep_ms(&r->clock, (uint64_t)r->cfg.polling_interval_ms);
            continue;
        }
        idle_advanced = false;
        r->changes += b.count;
        uint64_t t0 = sqlq_clock_now_ms(&r->clock);
        /* A full batch: more is likely waiting, poll it while this one is on the wire. */
        deliver(r, &b, b.full && !stopping(r) ? &pf : NULL, &polled_ahead);
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
    release_pending(r);
    if (next.count > 0) { /* polled ahead, then asked to stop: give them back as they were */
        bool *none = calloc(next.count, sizeof(*none));
        if (none)
            abandon_rest(r, &next, none);
        free(none);
    }
    sqlq_change_batch_free(&next);
    progress(r, true);
    SQLQ_INFO("route_stopped", "table=%s queue=%s", r->cfg.table, r->cfg.queue);
    return fatal ? (err && err->code ? err->code : SQLQ_E_SQL) : SQLQ_OK;
}
