/* bridge: the daemon that publishes every change of watched tables to queues, at least once:
 * one thread per route (table → queue) looping poll → publish → release → advance. */
#include "bridge.h"

#include "clock.h"
#include "instance.h"
#include "log.h"
#include "queue_client.h"
#include "route.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct worker {
    sqlq_route *route;
    pthread_t thread;
    bool started;
    sqlq_result result;
    sqlq_error error;
    struct shared *shared;
} worker;

/* What the threads share; left allocated when a shutdown times out with threads still running. */
typedef struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled when a route finishes */
    sqlq_stop stop;
    size_t finished;
    size_t nworkers;
    worker *workers;
    char instance_id[160];
} shared;

bool sqlq_bridge_ready(void *health, char *reason, size_t reason_size)
{
    sqlq_bridge_health *h = health;
    int routes = atomic_load(&h->routes), started = atomic_load(&h->started);
    if (atomic_load(&h->stopping)) {
        snprintf(reason, reason_size, "stopping");
        return false;
    }
    if (started < routes) {
        snprintf(reason, reason_size, "%d of %d routes started (database, capture, queue)", started, routes);
        return false;
    }
    if (!sqlq_queue_answering(&h->queue_answers, reason, reason_size))
        return false;
    int db_down = atomic_load(&h->db_down), queue_down = atomic_load(&h->queue_down);
    if (db_down || queue_down) {
        snprintf(reason, reason_size,
                 "%d route(s) failing on the database (unreachable, or capture stopped: see the "
                 "log), %d on the queue service",
                 db_down, queue_down);
        return false;
    }
    return true;
}

void sqlq_bridge_instance_id(char *out, size_t out_size)
{
    sqlq_instance_id_make(out, out_size);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    sqlq_error_clear(&w->error);
    w->result = sqlq_route_run(w->route, &w->error);
    pthread_mutex_lock(&w->shared->mu);
    w->shared->finished++;
    if (w->result != SQLQ_OK)
        w->shared->stop = 1; /* one route failing for good stops the process: exit 1 */
    pthread_cond_broadcast(&w->shared->cv);
    pthread_mutex_unlock(&w->shared->mu);
    return NULL;
}

static void shared_free(shared *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nworkers; i++)
        sqlq_route_destroy(s->workers[i].route);
    free(s->workers);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static sqlq_result create_routes(const sqlq_bridge_config *cfg, shared *s, sqlq_error *err)
{
    sqlq_route_env env = {cfg->db_connection, cfg->account, cfg->encoding, s->instance_id,
                          cfg->renew_interval_ms, cfg->once, cfg->once_outage_s > 0 ? cfg->once_outage_s : 60,
                          &s->stop, cfg->metrics, cfg->health};
    for (size_t i = 0; i < cfg->nroutes; i++) {
        s->workers[i].shared = s;
        sqlq_result rc = sqlq_route_create(&env, &cfg->routes[i], &s->workers[i].route, err);
        if (rc != SQLQ_OK)
            return rc;
    }
    return SQLQ_OK;
}

/* A signal handler sets cfg->stop and cannot signal a condition variable: until a stop
 * request, the wait also ends this often to pass the signal's flag on to the routes. */
#define SIGNAL_CHECK_MS 50


/* Wait for the workers (each finishing signals s->cv), passing a stop request on; false when
 * they overran the shutdown timeout. */
static bool supervise(const sqlq_bridge_config *cfg, shared *s)
{
    uint64_t timeout_ms = (uint64_t)(cfg->shutdown_timeout_s > 0 ? cfg->shutdown_timeout_s : 30) * 1000u;
    struct timespec deadline = {0, 0};
    bool stopping = false, in_time = true;
    pthread_mutex_lock(&s->mu);
    while (s->finished < s->nworkers && in_time) {
        if (cfg->stop && *cfg->stop)
            s->stop = 1;
        if (s->stop && !stopping) { /* from the signal or a route that failed for good */
            stopping = true;
            deadline = sqlq_clock_monotonic_after(timeout_ms);
            if (cfg->health)
                atomic_store(&cfg->health->stopping, 1);
            SQLQ_INFO("bridge_stopping", "timeout_s=%d", cfg->shutdown_timeout_s);
        }
        struct timespec until = stopping ? deadline : sqlq_clock_monotonic_after(SIGNAL_CHECK_MS);
        int rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
        in_time = !(stopping && rc == ETIMEDOUT && s->finished < s->nworkers);
    }
    pthread_mutex_unlock(&s->mu);
    return in_time;
}

sqlq_result sqlq_bridge_run(const sqlq_bridge_config *cfg, sqlq_bridge_stats *out_stats, sqlq_error *err)
{
    if (out_stats)
        memset(out_stats, 0, sizeof(*out_stats));
    if (cfg->nroutes == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "no routes: give --table and --queue or a config file with routes");
    shared *s = calloc(1, sizeof(*s));
    worker *workers = calloc(cfg->nroutes, sizeof(*workers));
    if (!s || !workers) {
        free(s);
        free(workers);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->workers = workers;
    s->nworkers = cfg->nroutes;
    if (cfg->instance_id)
        snprintf(s->instance_id, sizeof(s->instance_id), "%s", cfg->instance_id);
    else
        sqlq_bridge_instance_id(s->instance_id, sizeof(s->instance_id));
    if (cfg->health) {
        atomic_store(&cfg->health->routes, (int)cfg->nroutes);
        atomic_store(&cfg->health->started, 0);
        atomic_store(&cfg->health->db_down, 0);
        atomic_store(&cfg->health->queue_down, 0);
    }
    SQLQ_INFO("bridge_starting", "instance=%s routes=%zu once=%d", s->instance_id, cfg->nroutes, (int)cfg->once);
    sqlq_result rc = create_routes(cfg, s, err);
    if (rc != SQLQ_OK) {
        shared_free(s);
        return rc;
    }
    for (size_t i = 0; i < s->nworkers; i++) {
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
            rc = sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot start a route thread");
            pthread_mutex_lock(&s->mu);
            s->stop = 1;
            s->finished += s->nworkers - i; /* the ones never started count as finished */
            pthread_mutex_unlock(&s->mu);
            break;
        }
        workers[i].started = true;
    }
    if (!supervise(cfg, s)) {
        SQLQ_ERROR("shutdown_timeout", "timeout_s=%d note=\"leaving with work in flight; its leases expire "
                   "and another instance delivers it\"", cfg->shutdown_timeout_s);
        /* s stays allocated: threads still use it */
        return sqlq_error_set(err, SQLQ_E_TIMEOUT, false,
                              "routes did not stop within %d s: changes still on the wire stay "
                              "leased until their lease (lease_s) expires, then the next start "
                              "or another instance publishes them again (duplicates, nothing "
                              "lost); exit 1: the stop was not clean",
                              cfg->shutdown_timeout_s);
    }
    for (size_t i = 0; i < s->nworkers; i++) {
        if (!workers[i].started)
            continue;
        pthread_join(workers[i].thread, NULL);
        if (rc == SQLQ_OK && workers[i].result != SQLQ_OK) {
            rc = workers[i].result;
            if (err && err->code == SQLQ_OK)
                *err = workers[i].error;
        }
        if (out_stats)
            sqlq_route_stats_add(workers[i].route, out_stats);
    }
    shared_free(s);
    return rc;
}
