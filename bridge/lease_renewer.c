/* lease_renewer: a thread with its own connection and capture handle that extends the leases
 * of the changes a route still has in flight (ODBC handles belong to one thread). */
#include "lease_renewer.h"

#include "clock.h"
#include "log.h"
#include "stop.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The changes in flight, shared by reference count so the thread renews without the lock. */
typedef struct snapshot {
    int refs;
    sqlq_change *items;
    size_t n;
} snapshot;

struct sqlq_lease_renewer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, ready, stopping;
    sqlq_result start_result;
    sqlq_error start_error;
    snapshot *current;
    char *conn, *bridge_name, *table, *instance_id;
    sqlq_capture_config cfg;
    int interval_ms;
    sqlq_stop stop_flag;
    sqlq_db *db;
    sqlq_capture *cap;
    unsigned long long count;
};

static void snapshot_unref(snapshot *s)
{
    if (!s || --s->refs > 0)
        return;
    for (size_t i = 0; i < s->n; i++)
        json_decref(s->items[i].key);
    free(s->items);
    free(s);
}

static sqlq_result open_capture(sqlq_lease_renewer *r, sqlq_error *err)
{
    sqlq_capture_close(r->cap);
    r->cap = NULL;
    return sqlq_capture_open(r->db, &r->cfg, &r->cap, err);
}

/* After a failed renewal: reconnect when the failure was transient (the next tick retries). */
static void recover(sqlq_lease_renewer *r, const sqlq_error *failed)
{
    SQLQ_LOG_ERR(SQLQ_LOG_WARN, "lease_renew_failed", failed, "table=%s", r->table);
    if (!failed->transient)
        return;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_reconnect(r->db, &r->stop_flag, &err) == SQLQ_OK)
        (void)open_capture(r, &err);
}

static void renew_once(sqlq_lease_renewer *r)
{
    pthread_mutex_lock(&r->mu);
    snapshot *s = r->current;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&r->mu);
    if (s && s->n > 0) {
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_result rc = r->cap ? sqlq_capture_renew(r->cap, s->items, s->n, &err)
                                : sqlq_error_set(&err, SQLQ_E_SQL, true, "no capture handle");
        if (rc == SQLQ_OK) {
            SQLQ_DEBUG("lease_renewed", "table=%s n=%zu", r->table, s->n);
            pthread_mutex_lock(&r->mu);
            r->count++;
            pthread_mutex_unlock(&r->mu);
        } else {
            recover(r, &err);
        }
    }
    pthread_mutex_lock(&r->mu);
    snapshot_unref(s);
    pthread_mutex_unlock(&r->mu);
}

/* This instance's presence row (capture_presence.h), renewed each tick, removed at a clean
 * stop: `sqlq setup --drop` refuses while it is current. A failure is the next tick's. */
static void be_present(sqlq_lease_renewer *r, bool leaving)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (r->cap && sqlq_capture_presence(r->cap, leaving, &err) != SQLQ_OK)
        SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "presence_failed", &err, "table=%s leaving=%d", r->table,
                     (int)leaving);
}

static void *renewer_main(void *arg)
{
    sqlq_lease_renewer *r = arg;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result rc = sqlq_db_connect(r->conn, &r->db, &err);
    if (rc == SQLQ_OK)
        rc = open_capture(r, &err);
    pthread_mutex_lock(&r->mu);
    r->start_result = rc;
    r->start_error = err;
    r->ready = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (rc != SQLQ_OK)
        return NULL;
    pthread_mutex_lock(&r->mu);
    while (!r->stopping) {
        struct timespec ts = sqlq_clock_monotonic_after((uint64_t)r->interval_ms);
        int w = 0;
        while (!r->stopping && w != ETIMEDOUT)
            w = pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        if (r->stopping)
            break;
        pthread_mutex_unlock(&r->mu);
        renew_once(r);
        be_present(r, false);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    be_present(r, true);
    return NULL;
}

static sqlq_result copy_config(sqlq_lease_renewer *r, const char *conn, const sqlq_capture_config *cfg)
{
    r->cfg = *cfg;
    r->conn = strdup(conn);
    r->bridge_name = strdup(cfg->bridge_name ? cfg->bridge_name : "default");
    r->table = strdup(cfg->table ? cfg->table : "");
    r->instance_id = strdup(cfg->instance_id ? cfg->instance_id : "");
    if (!r->conn || !r->bridge_name || !r->table || !r->instance_id)
        return SQLQ_E_NOMEM;
    r->cfg.bridge_name = r->bridge_name;
    r->cfg.table = r->table;
    r->cfg.instance_id = r->instance_id;
    r->cfg.quiet = true; /* the route logged capture_opened for this table already */
    return SQLQ_OK;
}

static void renewer_free(sqlq_lease_renewer *r)
{
    snapshot_unref(r->current);
    sqlq_capture_close(r->cap);
    sqlq_db_close(r->db);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->conn);
    free(r->bridge_name);
    free(r->table);
    free(r->instance_id);
    free(r);
}

sqlq_result sqlq_lease_renewer_start(const char *conn, const sqlq_capture_config *cfg, int interval_ms,
                                     sqlq_lease_renewer **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_lease_renewer *r = calloc(1, sizeof(*r));
    if (!r)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    r->interval_ms = interval_ms > 0 ? interval_ms : 15000;
    if (copy_config(r, conn, cfg) != SQLQ_OK) {
        renewer_free(r);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    if (pthread_create(&r->thread, NULL, renewer_main, r) != 0) {
        renewer_free(r);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot start the lease renewal thread");
    }
    r->started = true;
    pthread_mutex_lock(&r->mu);
    while (!r->ready)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    if (r->start_result != SQLQ_OK) {
        sqlq_result rc = r->start_result;
        if (err && err->code == SQLQ_OK)
            *err = r->start_error;
        sqlq_lease_renewer_stop(r);
        return rc;
    }
    *out = r;
    return SQLQ_OK;
}

sqlq_result sqlq_lease_renewer_set_subset(sqlq_lease_renewer *r, const sqlq_change *changes,
                                          const bool *keep, size_t n)
{
    snapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return SQLQ_E_NOMEM;
    s->refs = 1;
    s->items = calloc(n ? n : 1, sizeof(*s->items));
    if (!s->items) {
        free(s);
        return SQLQ_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (keep && !keep[i])
            continue;
        sqlq_change *c = &s->items[s->n];
        *c = changes[i]; /* version, attempts, lease token …: renew matches on them */
        c->key = json_deep_copy(changes[i].key);
        c->row = NULL;
        c->changed = NULL; /* the batch owns them; renewal needs none */
        c->before = NULL;
        if (!c->key) {
            snapshot_unref(s);
            return SQLQ_E_NOMEM;
        }
        s->n++;
    }
    pthread_mutex_lock(&r->mu);
    snapshot *old = r->current;
    r->current = s;
    snapshot_unref(old);
    pthread_mutex_unlock(&r->mu);
    return SQLQ_OK;
}

sqlq_result sqlq_lease_renewer_set(sqlq_lease_renewer *r, const sqlq_change *changes, size_t n)
{
    return sqlq_lease_renewer_set_subset(r, changes, NULL, n);
}

unsigned long long sqlq_lease_renewer_count(sqlq_lease_renewer *r)
{
    pthread_mutex_lock(&r->mu);
    unsigned long long n = r->count;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void sqlq_lease_renewer_stop(sqlq_lease_renewer *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stopping = true;
        r->stop_flag = 1;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    renewer_free(r);
}
