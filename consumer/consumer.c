/* consumer: start-up and graceful shutdown (the polling loop is in consumer_poll.c, the
 * per-message work and renewal in consumer_worker.c). */
#include "consumer_internal.h"

#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool sqlq_consumer_stop_requested(const sqlq_consumer *c)
{
    return c->opt.stop && *c->opt.stop;
}

/* Abort callbacks of the REST clients (sqlq_http_set_abort): requests of workers and renewal
 * end at the shutdown bound; the poll in flight ends at once on a stop. */
static bool io_abort(void *ctx)
{
    sqlq_consumer *c = ctx;
    return sqlq_clock_mono_ms() >= atomic_load(&c->io_deadline_ms);
}

static bool poll_abort(void *ctx)
{
    sqlq_consumer *c = ctx;
    return (sqlq_consumer_stop_requested(c) && !atomic_load(&c->polling_over)) || io_abort(ctx);
}

void sqlq_consumer_options_default(sqlq_consumer_options *o)
{
    memset(o, 0, sizeof(*o));
    o->batch_size = 16;
    o->new_batch_threshold = 8;
    o->min_polling_ms = 100;
    o->max_polling_ms = 60000;
    o->lease_s = 600;
    o->visibility_timeout_s = 0;
    o->visibility_max_s = 3600;
    o->max_dequeue_count = 5;
    o->shutdown_timeout_ms = 30000;
    o->encoding = SQLQ_ENCODING_BASE64;
}

bool sqlq_received_cancelled(const sqlq_received *d)
{
    return d->cancel && atomic_load(d->cancel) != 0;
}

uint64_t sqlq_received_remaining_ms(const sqlq_received *d)
{
    if (!d->deadline_ms)
        return UINT64_MAX;
    uint64_t now = sqlq_clock_now_ms(d->clock);
    return now >= d->deadline_ms ? 0 : d->deadline_ms - now;
}

void sqlq_received_insertion_iso(const sqlq_received *d, char *out, size_t out_size)
{
    time_t t = (time_t)d->insertion_time;
    struct tm tm;
    if (out_size == 0)
        return;
    if (!gmtime_r(&t, &tm) || strftime(out, out_size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0';
}

static sqlq_result check_options(const sqlq_consumer_options *o, sqlq_error *err)
{
    if (o->batch_size < 1 || o->batch_size > 32)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "batch_size %d: allowed 1..32 (the service returns at most 32)",
                              o->batch_size);
    if (o->new_batch_threshold < 1 || o->new_batch_threshold > 1000)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "new_batch_threshold %d: allowed 1..1000",
                              o->new_batch_threshold);
    if (o->lease_s < 1 || o->lease_s > 604800)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "lease %d s: allowed 1..604800 (a Get visibility)", o->lease_s);
    if (o->visibility_timeout_s < 0 || o->visibility_timeout_s > 604800)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "visibility_timeout %d s: allowed 0..604800",
                              o->visibility_timeout_s);
    if (o->max_dequeue_count < 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "max_dequeue_count %ld: must be >= 1",
                              o->max_dequeue_count);
    if (o->min_polling_ms < 1 || o->max_polling_ms < o->min_polling_ms)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "polling interval: min %llu ms must be >= 1 and <= max %llu ms",
                              (unsigned long long)o->min_polling_ms,
                              (unsigned long long)o->max_polling_ms);
    return SQLQ_OK;
}

static sqlq_result init_sync(sqlq_consumer *c)
{
    if (pthread_mutex_init(&c->mu, NULL) != 0 || pthread_mutex_init(&c->renew_mu, NULL) != 0 ||
        pthread_mutex_init(&c->outage_mu, NULL) != 0 ||
        pthread_mutex_init(&c->target_mu, NULL) != 0 ||
        sqlq_consumer_cond_init(&c->work_cv) != 0 || sqlq_consumer_cond_init(&c->idle_cv) != 0 ||
        sqlq_consumer_cond_init(&c->renew_cv) != 0)
        return SQLQ_E_NOMEM;
    for (size_t i = 0; i < c->nworkers; i++) {
        c->workers[i].c = c;
        c->workers[i].index = i;
        if (pthread_mutex_init(&c->workers[i].slot.lock, NULL) != 0)
            return SQLQ_E_NOMEM;
    }
    return SQLQ_OK;
}

/* The record of dequeues given back; without it (no path, or it cannot be read) they count. */
static void open_abandoned(sqlq_consumer *c, const char *path)
{
    if (!path || !*path)
        return;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_abandoned_open(path, &c->abandoned, &e) != SQLQ_OK)
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "consumer.state_unusable", &e,
                     "queue=%s note=\"dequeues given back without an attempt (at shutdown, or "
                     "when a drain gives up on the handler's target) cannot be recorded: they "
                     "will count toward poison\"",
                     c->queue);
}

sqlq_result sqlq_consumer_create(const sqlq_account *account,
                                 const sqlq_queue_options *queue_options, const char *queue,
                                 const sqlq_consumer_options *options, const sqlq_handler *handler,
                                 sqlq_consumer **out, sqlq_error *err)
{
    *out = NULL;
    if (!queue || !handler || !handler->handle || !options)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "consumer: queue, options and handler needed");
    if (!sqlq_queue_name_valid(queue, err))
        return SQLQ_E_INVALID;
    sqlq_result r = check_options(options, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_consumer *c = calloc(1, sizeof(*c));
    if (!c)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "consumer: out of memory");
    if (account && account->sas && !(c->sas = strdup(account->sas))) {
        free(c);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "consumer: out of memory");
    }
    snprintf(c->queue, sizeof(c->queue), "%s", queue);
    c->opt = *options;
    c->handler = *handler;
    c->sysclock = sqlq_clock_system(options->stop);
    c->clock = options->clock ? options->clock : &c->sysclock;
    sqlq_disposition_policy_default(&c->policy);
    c->policy.max_dequeue_count = options->max_dequeue_count;
    c->policy.visibility_timeout_s = options->visibility_timeout_s;
    c->policy.visibility_backoff = options->visibility_backoff;
    c->policy.visibility_max_s = options->visibility_max_s;
    c->policy.has_poison_queue = sqlq_queue_poison_name(queue, c->poison, sizeof(c->poison));
    c->nworkers = (size_t)options->batch_size + (size_t)options->new_batch_threshold;
    c->pending_cap = c->nworkers + 32;
    c->renew_wake_ms = UINT64_MAX;
    atomic_init(&c->io_deadline_ms, UINT64_MAX);
    atomic_init(&c->polling_over, false);
    atomic_init(&c->target_down_since, 0);
    atomic_init(&c->target_epoch, 0);
    atomic_init(&c->abandon_held, false);
    c->workers = calloc(c->nworkers, sizeof(*c->workers));
    c->pending = calloc(c->pending_cap, sizeof(*c->pending));
    if (!c->workers || !c->pending || init_sync(c) != SQLQ_OK) {
        sqlq_consumer_destroy(c);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "consumer: out of memory");
    }
    sqlq_label label = {"queue", c->queue};
    c->n.m_consumed =
        sqlq_metrics_counter(options->metrics, SQLQ_METRIC_MESSAGES_CONSUMED, NULL, &label, 1);
    c->n.m_failed =
        sqlq_metrics_counter(options->metrics, SQLQ_METRIC_MESSAGES_FAILED, NULL, &label, 1);
    c->n.m_poisoned =
        sqlq_metrics_counter(options->metrics, SQLQ_METRIC_MESSAGES_POISONED, NULL, &label, 1);
    c->n.m_renewals =
        sqlq_metrics_counter(options->metrics, SQLQ_METRIC_VISIBILITY_RENEWALS, NULL, &label, 1);
    c->n.m_backoff =
        sqlq_metrics_gauge(options->metrics, SQLQ_METRIC_POLL_BACKOFF_MS, NULL, &label, 1);
    c->n.m_handler_seconds = sqlq_metrics_histogram(options->metrics, SQLQ_METRIC_HANDLER_SECONDS,
                                                    NULL, NULL, 0, &label, 1);
    c->n.m_unavailable =
        sqlq_metrics_gauge(options->metrics, SQLQ_METRIC_HANDLER_UNAVAILABLE, NULL, &label, 1);
    c->n.m_held = sqlq_metrics_gauge(options->metrics, SQLQ_METRIC_MESSAGES_HELD, NULL, &label, 1);
    open_abandoned(c, options->abandoned_path);
    if (options->transport) {
        c->transport = *options->transport;
    } else {
        r = sqlq_consumer_transport_azure(account, queue_options, &c->sysclock, options->lease_s,
                                          &c->transport, err);
        if (r != SQLQ_OK) {
            sqlq_consumer_destroy(c);
            return r;
        }
        c->own_transport = true;
        sqlq_consumer_transport_azure_abort(&c->transport, poll_abort, io_abort, c);
    }
    *out = c;
    return SQLQ_OK;
}

void sqlq_consumer_get_stats(const sqlq_consumer *c, sqlq_consumer_stats *o)
{
    consumer_counters *n = (consumer_counters *)(uintptr_t)&c->n;
    o->received = atomic_load(&n->received);
    o->succeeded = atomic_load(&n->succeeded);
    o->failed = atomic_load(&n->failed);
    o->released = atomic_load(&n->released);
    o->poisoned = atomic_load(&n->poisoned);
    o->undecodable = atomic_load(&n->undecodable);
    o->renewals = atomic_load(&n->renewals);
    o->renewal_failures = atomic_load(&n->renewal_failures);
    o->ownership_lost = atomic_load(&n->ownership_lost);
    o->delete_failures = atomic_load(&n->delete_failures);
    o->timeouts = atomic_load(&n->timeouts);
    o->polls = atomic_load(&n->polls);
    o->empty_polls = atomic_load(&n->empty_polls);
    o->poll_errors = atomic_load(&n->poll_errors);
    o->poll_failing = atomic_load(&n->poll_failing);
    o->service_failing = atomic_load(&n->service_failing);
    o->rejected_replies = atomic_load(&n->rejected_replies);
    o->held = atomic_load(&n->held);
    o->given_back = atomic_load(&n->given_back);
    o->target_down_ms = sqlq_consumer_target_down_ms(c);
    o->in_flight = atomic_load(&n->in_flight);
    o->backoff_ms = atomic_load(&n->backoff_ms);
}

/* ---- start and shutdown ---- */

static sqlq_result start_threads(sqlq_consumer *c, sqlq_error *err)
{
    size_t created = 0;
    for (; created < c->nworkers; created++) {
        consumer_worker *w = &c->workers[created];
        if (pthread_create(&w->thread, NULL, sqlq_consumer_worker_main, w) != 0)
            break;
        w->started = true;
    }
    pthread_mutex_lock(&c->mu);
    while (c->ready < created)
        pthread_cond_wait(&c->idle_cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (created < c->nworkers)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "consumer: cannot start worker thread");
    for (size_t i = 0; i < c->nworkers; i++)
        if (c->workers[i].open_result != SQLQ_OK) {
            if (err && err->code == SQLQ_OK)
                *err = c->workers[i].open_err;
            return c->workers[i].open_result;
        }
    if (pthread_create(&c->renew_thread, NULL, sqlq_consumer_renew_main, c) != 0)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "consumer: cannot start renewal thread");
    c->renew_started = true;
    return SQLQ_OK;
}

/* Messages taken but not started go back at once (visibility 0) instead of after the lease,
 * their dequeue given back (not counted toward poison). */
static void release_pending(sqlq_consumer *c, void *conn)
{
    for (;;) {
        pthread_mutex_lock(&c->mu);
        if (c->pending_count == 0) {
            pthread_mutex_unlock(&c->mu);
            return;
        }
        sqlq_message m = c->pending[c->pending_head];
        c->pending_head = (c->pending_head + 1) % c->pending_cap;
        c->pending_count--;
        c->in_flight--;
        atomic_store(&c->n.in_flight, c->in_flight);
        pthread_mutex_unlock(&c->mu);
        sqlq_consumer_give_back(c, conn, &m, m.pop_receipt,
                                atomic_load(&c->abandon_held)
                                    ? "not started: the handler's target is unavailable"
                                    : "not started before the stop");
        sqlq_message_free(&m);
    }
}

static void cancel_running(sqlq_consumer *c)
{
    for (size_t i = 0; i < c->nworkers; i++)
        atomic_store(&c->workers[i].slot.cancel, 1);
}

/* Wait (real time) until every worker has exited, or ms pass. Returns true when all exited. */
static bool wait_workers(sqlq_consumer *c, uint64_t ms)
{
    uint64_t t0 = sqlq_clock_mono_ms();
    pthread_mutex_lock(&c->mu);
    for (;;) {
        size_t alive = 0;
        for (size_t i = 0; i < c->nworkers; i++)
            alive += c->workers[i].started && !c->workers[i].exited;
        uint64_t spent = sqlq_clock_mono_ms() - t0;
        if (alive == 0 || spent >= ms) {
            pthread_mutex_unlock(&c->mu);
            return alive == 0;
        }
        sqlq_consumer_cond_wait_ms(&c->idle_cv, &c->mu, ms - spent < 100 ? ms - spent : 100);
    }
}

static void stop_renewal(sqlq_consumer *c)
{
    if (!c->renew_started)
        return;
    pthread_mutex_lock(&c->renew_mu);
    c->renew_stop = true;
    pthread_cond_signal(&c->renew_cv);
    pthread_mutex_unlock(&c->renew_mu);
    pthread_join(c->renew_thread, NULL);
    c->renew_started = false;
}

static sqlq_result shutdown_threads(sqlq_consumer *c, void *conn)
{
    uint64_t handlers_until = sqlq_clock_mono_ms() + c->opt.shutdown_timeout_ms;
    uint64_t hard_until = handlers_until + SQLQ_CONSUMER_CANCEL_GRACE_MS;
    /* requests end a second before the wait does, so an aborted one can unwind in time */
    atomic_store(&c->io_deadline_ms, hard_until - 1000u);
    atomic_store(&c->polling_over, true);
    /* On a stop request, messages not started go back; at max_messages or an empty queue the
     * workers finish what was taken. */
    if (conn && (sqlq_consumer_stop_requested(c) || atomic_load(&c->abandon_held)))
        release_pending(c, conn);
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    size_t running = c->in_flight;
    pthread_cond_broadcast(&c->work_cv);
    pthread_mutex_unlock(&c->mu);
    if (running)
        SQLQ_INFO("consumer.stopping", "queue=%s running=%zu shutdown_timeout_ms=%llu", c->queue,
                  running, (unsigned long long)c->opt.shutdown_timeout_ms);
    sqlq_result r = SQLQ_OK;
    uint64_t now = sqlq_clock_mono_ms();
    if (!wait_workers(c, handlers_until > now ? handlers_until - now : 0)) {
        SQLQ_WARN("consumer.shutdown_timeout",
                  "queue=%s shutdown_timeout_ms=%llu note=\"messages still in progress (a handler "
                  "running, or its delete or release waiting for the queue service): cancelling "
                  "the handlers (--exec: SIGTERM, SIGKILL after 2 s); each cancelled message is released "
                  "at once (visible again now, not counted toward poison); requests to the queue "
                  "service still unanswered %u ms later are aborted (a message whose release is "
                  "aborted is visible again when its lease ends)\"",
                  c->queue, (unsigned long long)c->opt.shutdown_timeout_ms,
                  SQLQ_CONSUMER_CANCEL_GRACE_MS - 1000u);
        cancel_running(c);
        now = sqlq_clock_mono_ms();
        if (!wait_workers(c, hard_until > now ? hard_until - now : 0)) {
            SQLQ_ERROR("consumer.handler_stuck", "queue=%s note=\"a handler ignored cancellation\"",
                       c->queue);
            r = SQLQ_E_TIMEOUT;
        }
    }
    stop_renewal(c);
    for (size_t i = 0; i < c->nworkers; i++) {
        consumer_worker *w = &c->workers[i];
        if (w->started && (r == SQLQ_OK || w->exited)) {
            pthread_join(w->thread, NULL);
            w->started = false;
        } else if (w->started) {
            pthread_detach(w->thread);
            w->started = false;
        }
    }
    return r;
}

sqlq_result sqlq_consumer_run(sqlq_consumer *c, sqlq_error *err)
{
    void *conn = NULL;
    sqlq_result r = c->transport.open(c->transport.ctx, SQLQ_CONN_POLL, &conn, err);
    if (r == SQLQ_OK)
        r = c->transport.open(c->transport.ctx, SQLQ_CONN_RENEW, &c->renew_conn, err);
    if (r == SQLQ_OK)
        r = start_threads(c, err);
    if (r == SQLQ_OK) {
        SQLQ_INFO("consumer.started",
                  "queue=%s poison_queue=%s workers=%zu batch_size=%d new_batch_threshold=%d "
                  "lease_s=%d max_dequeue_count=%ld encoding=%s",
                  c->queue, c->policy.has_poison_queue ? c->poison : "(none)", c->nworkers,
                  c->opt.batch_size, c->opt.new_batch_threshold, c->opt.lease_s,
                  c->opt.max_dequeue_count, sqlq_encoding_name(c->opt.encoding));
        sqlq_consumer_poll_loop(c, conn);
    }
    sqlq_result sr = shutdown_threads(c, r == SQLQ_OK ? conn : NULL);
    if (r == SQLQ_OK && sr != SQLQ_OK)
        r = sqlq_error_set(err, sr, false, "a handler did not return within the shutdown timeout");
    if (r == SQLQ_OK && c->drain_result == SQLQ_OK && c->opt.exit_when_empty &&
        atomic_load(&c->n.service_failing) > 0) {
        /* a drain whose deletes or releases failed did not empty the queue */
        pthread_mutex_lock(&c->outage_mu);
        c->drain_err = c->outage_err;
        pthread_mutex_unlock(&c->outage_mu);
        c->drain_result = c->drain_err.code != SQLQ_OK ? c->drain_err.code : SQLQ_E_HTTP;
        c->drain_end = SQLQ_DRAIN_NOT_SETTLED;
        char e[700];
        sqlq_error_format(&c->drain_err, e, sizeof(e));
        snprintf(c->drain_err.message, sizeof(c->drain_err.message),
                 "deletes or releases failed at the end (%.300s): handled messages are delivered "
                 "again after their lease",
                 e);
    }
    if (r == SQLQ_OK && c->drain_result != SQLQ_OK) {
        r = c->drain_result;
        if (err && err->code == SQLQ_OK)
            *err = c->drain_err;
    }
    if (conn)
        c->transport.close(conn);
    if (c->renew_conn && sr == SQLQ_OK)
        c->transport.close(c->renew_conn);
    c->renew_conn = NULL;
    if (r == SQLQ_OK || r == c->drain_result) {
        sqlq_consumer_stats s;
        sqlq_consumer_get_stats(c, &s);
        SQLQ_INFO("consumer.stopped",
                  "queue=%s received=%llu succeeded=%llu failed=%llu poisoned=%llu "
                  "delete_failed=%llu ownership_lost=%llu given_back=%llu",
                  c->queue, s.received, s.succeeded, s.failed, s.poisoned, s.delete_failures,
                  s.ownership_lost, s.given_back);
    }
    return r;
}

sqlq_drain_end sqlq_consumer_drain_end(const sqlq_consumer *c)
{
    return c->drain_end;
}

void sqlq_consumer_destroy(sqlq_consumer *c)
{
    if (!c)
        return;
    if (c->pending) {
        for (size_t i = 0; i < c->pending_count; i++)
            sqlq_message_free(&c->pending[(c->pending_head + i) % c->pending_cap]);
        free(c->pending);
    }
    free(c->workers);
    free(c->sas);
    sqlq_abandoned_close(c->abandoned);
    if (c->own_transport)
        sqlq_consumer_transport_free(&c->transport);
    free(c);
}
