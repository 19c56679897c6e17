/* route: one watched table published to one queue: poll → publish → release → advance, as a
 * state machine (route_state.h): sqlq_route_run runs one state's work at a time and lets
 * sqlq_route_transition pick the next. */
#include "route_internal.h"

#include "capture_stop.h"
#include "log.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROGRESS_LOG_MS 30000u

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
    c->wakeup = true;
}

static uint64_t queue_clock_now(void *ctx)
{
    return sqlq_clock_now_ms(&((sqlq_route *)ctx)->clock);
}

/* Requests already on the wire finish after a stop request (their changes are then released);
 * only waits before a retry are cut short. The client's retries of a put take up to 5 s: the
 * metrics are refreshed before each wait (every 5 s at most) when the connection is the route
 * thread's, so an outage's backlog is seen at once, not after the first put gave up. */
static bool queue_clock_sleep(void *ctx, uint64_t ms)
{
    sqlq_route *r = ctx;
    if (ms > 0 && !r->helper_owns_conn)
        sqlq_route_refresh_metrics(r, sqlq_clock_now_ms(&r->clock));
    return ms == 0 || sqlq_clock_sleep_ms(&r->clock, ms);
}

/* A lane's client (route_shards.c) puts on a thread of its own: the same clock, without the
 * metrics refresh, which uses the route's connection. */
static bool lane_clock_sleep(void *ctx, uint64_t ms)
{
    sqlq_route *r = ctx;
    return ms == 0 || sqlq_clock_sleep_ms(&r->clock, ms);
}

static double queue_clock_random(void *ctx)
{
    return sqlq_clock_random(&((sqlq_route *)ctx)->clock);
}

/* The queue client is about to retry a failed request: a fault of the service (what delivery
 * treats as an outage, not a refusal of one message) turns /readyz to 503 at this first
 * failure, not when the client's retries are spent. The route thread's own client: no lock. */
static void queue_retrying(void *ctx, const sqlq_error *e)
{
    sqlq_route *r = ctx;
    if (sqlq_delivery_classify(e->code, e) == SQLQ_OUTCOME_TRANSIENT)
        sqlq_route_mark_down(r, &r->queue_down, true, false);
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
    r->m_filtered = sqlq_metrics_counter(m, SQLQ_METRIC_CHANGES_FILTERED, NULL, tq, 2);
    r->m_wakeups = sqlq_metrics_counter(m, SQLQ_METRIC_WAKEUPS, NULL, t, 1);
    r->m_publish_s = sqlq_metrics_histogram(m, SQLQ_METRIC_PUBLISH_SECONDS, NULL, NULL, 0, q, 1);
    r->m_pending = sqlq_metrics_gauge(m, SQLQ_METRIC_PENDING_CHANGES, NULL, t, 1);
    r->m_pending_age = sqlq_metrics_gauge(m, "sqlq_oldest_pending_change_age_seconds",
                                          "Age of the oldest captured change not yet delivered "
                                          "(to within 5 s), per table.", t, 1);
    if (r->cfg.source == SQLQ_SOURCE_LOGICAL) {
        r->m_slot_retained = sqlq_metrics_gauge(
            m, "sqlq_slot_retained_wal_bytes",
            "WAL the route's replication slot keeps on the server (source logical).", t, 1);
        r->m_slot_lag = sqlq_metrics_gauge(
            m, "sqlq_slot_lag_bytes",
            "WAL written since what the route's slot confirmed (source logical).", t, 1);
        r->m_slot_lag_s = sqlq_metrics_gauge(
            m, "sqlq_slot_lag_seconds",
            "Age of the oldest transaction received and not yet confirmed (source logical).", t,
            1);
    }
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
    r->lane_clock = (sqlq_clock){queue_clock_now, lane_clock_sleep, queue_clock_random, r};
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
    r->ccfg.key_columns = cfg->key_columns;
    r->ccfg.safety_lag_ms = cfg->safety_lag_ms;
    r->ccfg.allow_retention_gap = cfg->allow_retention_gap;
    r->ccfg.where = cfg->where;
    r->ccfg.changed = cfg->changed;
    r->ccfg.before_image = cfg->before_image;
    r->ccfg.skip_truncate = cfg->skip_truncate;
    r->ccfg.warned = sqlq_log_once_create(); /* NULL (out of memory): warnings at every open */
    sqlq_backoff_policy p = wait_policy();
    sqlq_backoff_init(&r->db_backoff, &p, &r->clock);
    sqlq_backoff_policy op = sqlq_backoff_policy_outage();
    sqlq_backoff_init(&r->probe_backoff, &op, &r->clock);
    init_metrics(r);

    sqlq_queue_options qo;
    sqlq_queue_options_default(&qo);
    qo.encoding = env->encoding;
    qo.clock = &r->queue_clock;
    qo.on_retry = queue_retrying;
    qo.retry_ctx = r;
    qo.timeout_ms = 10000;
    qo.watch = env->health ? &env->health->queue_answers : NULL;
    /* The client retries a put for a few seconds; past that the route takes over (logs the
     * outage, keeps the leases renewed and retries with its own back-off). */
    qo.retry.max_total_ms = 5000;
    sqlq_outage_init(&r->outage, cfg->table, cfg->queue);
    sqlq_delivery_config dc = {cfg->queue, {0}, cfg->max_in_flight, cfg->max_attempts, cfg->message_ttl_s,
                               &r->filter, cfg->initial_visibility_s, NULL, 0};
    sqlq_envelope_config_default(&dc.envelope);
    dc.envelope.bridge_name = cfg->bridge_name;
    dc.envelope.table = cfg->table;
    dc.envelope.format = cfg->format;
    dc.envelope.oversize = cfg->oversize;
    dc.envelope.encoding = env->encoding;
    dc.envelope.max_text = cfg->max_message_bytes;
    /* the lanes of a shard set: no on_retry (the route's outage record follows each round) */
    sqlq_queue_options lo = qo;
    lo.clock = &r->lane_clock;
    lo.on_retry = NULL;
    lo.retry_ctx = NULL;
    sqlq_result rc = sqlq_route_filter_parse(cfg->columns, cfg->exclude_columns, cfg->ops, &r->filter, err);
    if (rc == SQLQ_OK)
        rc = sqlq_queue_client_create(sqlq_route_shard_account(r, 0), &qo, &r->client, err);
    if (rc == SQLQ_OK)
        rc = sqlq_route_shards_create(r, &lo, &dc, err);
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
    sqlq_route_helper_stop(r); /* normally stopped: STOPPING stops it */
    sqlq_change_batch_free(&r->pend); /* normally empty: STOPPING releases it */
    sqlq_change_batch_free(&r->next);
    sqlq_change_batch_free(&r->batch);
    free(r->outcomes);
    free(r->done);
    sqlq_lease_renewer_stop(r->renewer);
    sqlq_wakeup_destroy(r->wakeup);
    sqlq_capture_close(r->cap);
    sqlq_log_once_destroy(r->ccfg.warned);
    sqlq_backlog_close(r->backlog);
    sqlq_db_close(r->db);
    sqlq_delivery_destroy(r->delivery);
    sqlq_route_shards_destroy(r);
    sqlq_queue_client_destroy(r->client);
    sqlq_route_filter_free(&r->filter);
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
bool sqlq_route_ending(const sqlq_route *r)
{
    return sqlq_route_stopping(r) || r->fatal || r->gave_up;
}

void sqlq_route_advance(sqlq_route *r)
{
    assert(!r->helper_owns_conn);
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

/* Every 5 s: the publish rates (also written where `sqlq status` reads them), and with
 * metrics those read from elsewhere: pending changes (a query on the route's connection, so
 * never while the helper owns it) and lease renewals. */
void sqlq_route_refresh_metrics(sqlq_route *r, uint64_t now)
{
    assert(!r->helper_owns_conn);
    if (now - r->last_status_ms < 5000)
        return;
    r->last_status_ms = now;
    sqlq_route_shards_metrics(r, now); /* and the rates `sqlq status` shows */
    if (!r->env.metrics)
        return;
    unsigned long long renewals = r->renewer ? sqlq_lease_renewer_count(r->renewer) : 0;
    sqlq_counter_add(r->m_renewals, renewals - r->renewals_seen);
    r->renewals_seen = renewals;
    sqlq_capture_status st;
    sqlq_error e;
    sqlq_error_clear(&e);
    double pending = 0, age = 0;
    if (sqlq_route_stop_backlog(r, &pending, &age)) { /* capture stopped: from the log */
        sqlq_gauge_set(r->m_pending, pending);
        sqlq_gauge_set(r->m_pending_age, age);
    } else if (r->cap && sqlq_capture_status_get(r->cap, &st, &e) == SQLQ_OK) {
        /* Held back by an open writer of the log (PostgreSQL): committed, not delivered yet. */
        sqlq_gauge_set(r->m_pending, (double)(st.pending + st.held_back));
        sqlq_gauge_set(r->m_pending_age, st.oldest_pending_age_s);
        if (st.logical && r->m_slot_retained) {
            sqlq_gauge_set(r->m_slot_retained, (double)st.retained_wal_bytes);
            sqlq_gauge_set(r->m_slot_lag, (double)st.lag_bytes);
            sqlq_gauge_set(r->m_slot_lag_s, st.lag_s);
        }
        sqlq_capture_status_free(&st);
    }
}

void sqlq_route_progress(sqlq_route *r, bool force)
{
    uint64_t now = sqlq_clock_now_ms(&r->clock);
    sqlq_route_refresh_metrics(r, now);
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
 * look at the stop flag; r->fatal when it must end (permanent failure in --once mode). */
static bool poll_once(sqlq_route *r, sqlq_change_batch *b, sqlq_error *err)
{
    assert(!r->helper_owns_conn);
    sqlq_error e;
    sqlq_error_clear(&e);
    r->last_poll_ms = sqlq_clock_now_ms(&r->clock);
    sqlq_result rc = SQLQ_E_SQL;
    if (r->cap)
        rc = sqlq_capture_poll(r->cap, b, &e);
    else if (sqlq_route_stopped(r)) /* the reopen failed for good: say why, not "transient" */
        sqlq_route_stop_error(r, &e);
    else
        sqlq_error_set(&e, SQLQ_E_SQL, true, "capture not open");
    r->poll_took_ms = sqlq_clock_now_ms(&r->clock) - r->last_poll_ms;
    if (rc == SQLQ_OK) {
        sqlq_backoff_reset(&r->db_backoff);
        r->db_failures = 0;
        r->db_down_since_ms = 0;
        sqlq_route_mark_down(r, &r->db_down, false, true);
        sqlq_route_stop_clear(r);
        return true;
    }
    sqlq_route_mark_down(r, &r->db_down, true, true);
    sqlq_route_stop_note(r, &e);
    sqlq_counter_inc(r->m_retry_db);
    /* The capture cannot go on: what it handed out and the queue accepted is released to it
     * before it is opened again (a source whose releases are its own, the logical one,
     * confirms them as it closes; the new one would not know them). */
    if (!e.transient && r->cap)
        sqlq_route_release_pending(r);
    if (!sqlq_route_recover_db(r, "poll_failed", &e) && !sqlq_route_stopping(r)) {
        r->fatal = true;
        if (err && err->code == SQLQ_OK && sqlq_route_stopped(r))
            sqlq_route_stop_error(r, err); /* the state gone, say, not the poll's SQL error */
        else if (err && err->code == SQLQ_OK)
            *err = e;
    }
    return false;
}

/* START: connect, open the capture, start lease renewal and the helper. */
static void state_start(sqlq_route *r, sqlq_route_facts *f, sqlq_error *err)
{
    r->start_rc = sqlq_route_start(r, err);
    if (r->start_rc == SQLQ_OK) {
        r->last_progress_ms = sqlq_clock_now_ms(&r->clock);
        sqlq_backoff_policy op = sqlq_backoff_policy_outage();
        sqlq_backoff_init(&r->idle_backoff, &op, &r->clock);
        sqlq_route_helper_start(r);
    }
    f->end = r->start_rc != SQLQ_OK;
}

/* POLL: the batch polled ahead (the previous one is settled by now), or a poll. */
static void state_poll(sqlq_route *r, sqlq_route_facts *f, sqlq_error *err)
{
    assert(r->batch.count == 0 && !r->outcomes && !r->helper_owns_conn);
    f->end = sqlq_route_ending(r);
    if (f->end)
        return;
    if (r->have_next) {
        r->batch = r->next;
        memset(&r->next, 0, sizeof(r->next));
        r->have_next = false;
        f->got_batch = true;
        r->waited_ms = r->poll_took_ms = 0; /* polled while the previous batch was on the wire */
    } else {
        f->got_batch = poll_once(r, &r->batch, err);
        f->end = sqlq_route_ending(r) && !f->got_batch;
    }
    f->empty = r->batch.count == 0;
    r->held_back_ms = f->got_batch ? r->batch.held_back_ms : 0;
    if (f->got_batch && f->empty)
        sqlq_change_batch_free(&r->batch);
    else if (f->got_batch)
        sqlq_route_publish_begin(r, f);
}

/* --once on a cursor source whose safety lag still holds rows back (a number cursor has no
 * sample lag old yet): wait out the lag, said in the log, and poll again rather than end. */
static void once_wait_lag(sqlq_route *r)
{
    SQLQ_INFO("once_waits_safety_lag",
              "table=%s wait_ms=%llu note=\"--once waits out the cursor's safety lag, then polls "
              "again; rows newer than the lag then are left for the next run\"",
              r->cfg.table, (unsigned long long)r->held_back_ms);
    (void)sqlq_clock_sleep_ms(&r->clock, r->held_back_ms);
}

/* IDLE: nothing new. Release what is pending, advance once, keep the metrics and /readyz
 * true, then wait for the next poll; --once ends here, but not silently while the queue
 * service is down. */
static void state_idle(sqlq_route *r, sqlq_route_facts *f)
{
    sqlq_route_release_pending(r);
    assert(r->pend.count == 0 && r->next.count == 0);
    if (!r->idle_advanced)
        sqlq_route_advance(r);
    r->idle_advanced = true;
    sqlq_route_refresh_metrics(r, sqlq_clock_now_ms(&r->clock));
    sqlq_route_probe_queue(r);
    if (r->env.once && r->queue_down && !sqlq_route_queue_give_up(r))
        (void)sqlq_route_outage_sleep(r, &r->idle_backoff, r->outage.since_ms);
    else if (r->env.once && r->held_back_ms > 0)
        once_wait_lag(r);
    else if (r->env.once)
        f->drained = true;
    else
        sqlq_route_wait_for_change(r);
    f->end = sqlq_route_ending(r);
}

void sqlq_route_wait_for_change(sqlq_route *r)
{
    assert(!r->helper_owns_conn);
    uint64_t t0 = sqlq_clock_now_ms(&r->clock);
    if (sqlq_wakeup_wait(r->wakeup, r->db, r->cap, &r->clock, (uint64_t)r->cfg.polling_interval_ms,
                         r->last_poll_ms))
        sqlq_counter_inc(r->m_wakeups);
    r->waited_ms = sqlq_clock_now_ms(&r->clock) - t0;
}

/* STOPPING: release what was accepted; what was polled ahead goes back as it was. */
static void state_stopping(sqlq_route *r)
{
    sqlq_route_helper_stop(r);
    sqlq_route_release_pending(r);
    if (r->next.count > 0) {
        bool *none = calloc(r->next.count, sizeof(*none));
        if (none)
            sqlq_route_abandon_rest(r, &r->next, none);
        free(none);
    }
    sqlq_change_batch_free(&r->next);
    r->have_next = false;
    assert(r->pend.count == 0 && r->batch.count == 0);
    sqlq_route_progress(r, true);
    SQLQ_INFO("route_stopped", "table=%s queue=%s", r->cfg.table, r->cfg.queue);
}

/* Run the current state's work, then move to the state its facts lead to. */
static void step(sqlq_route *r, sqlq_error *err)
{
    sqlq_route_facts f;
    memset(&f, 0, sizeof(f));
    switch (r->state) {
    case SQLQ_ROUTE_START:
        state_start(r, &f, err);
        break;
    case SQLQ_ROUTE_POLL:
        state_poll(r, &f, err);
        break;
    case SQLQ_ROUTE_IDLE:
        state_idle(r, &f);
        break;
    case SQLQ_ROUTE_PUBLISH:
        sqlq_route_publish_round(r, &f);
        break;
    case SQLQ_ROUTE_BACKOFF:
        sqlq_route_publish_wait(r, &f);
        break;
    case SQLQ_ROUTE_SETTLED:
        sqlq_route_publish_settled(r, &f);
        break;
    case SQLQ_ROUTE_STOPPING:
        state_stopping(r);
        break;
    case SQLQ_ROUTE_DONE:
    case SQLQ_ROUTE_NSTATES:
        break;
    }
    sqlq_route_state next = sqlq_route_transition(r->state, &f);
    SQLQ_TRACE("route_state", "table=%s from=%s to=%s", r->cfg.table,
               sqlq_route_state_name(r->state), sqlq_route_state_name(next));
    r->state = next;
}

sqlq_result sqlq_route_run(sqlq_route *r, sqlq_error *err)
{
    r->state = SQLQ_ROUTE_START;
    while (r->state != SQLQ_ROUTE_DONE)
        step(r, err);
    if (r->start_rc != SQLQ_OK)
        return sqlq_route_stopping(r) ? SQLQ_OK : r->start_rc;
    if (r->gave_up && err && err->code == SQLQ_OK)
        *err = r->gave_up_err;
    if (r->gave_up)
        return r->gave_up_err.code;
    return r->fatal ? (err && err->code ? err->code : SQLQ_E_SQL) : SQLQ_OK;
}
