#include "sink_pool.h"

#include "clock.h"
#include "conn_string.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* How long a limit learnt from a refusal holds before the pool tries one connection more. */
#define LIMIT_HOLD_MS 60000u
/* How often a worker waiting for a connection looks at its message's cancellation. */
#define WAIT_SLICE_MS 100u

struct sqlq_sink_pool {
    char *conn;
    char target[400];
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a connection came back */
    sqlq_db **idle;
    size_t nidle, cap; /* cap: room in idle (grown as connections open) */
    size_t open;       /* connections open: idle + taken + being opened */
    size_t connecting; /* of those, being opened */
    size_t limit;      /* 0 = none known */
    uint64_t limit_until_ms;
    bool limit_logged;
};

sqlq_result sqlq_sink_pool_create(const char *conn, sqlq_sink_pool **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_sink_pool *p = calloc(1, sizeof(*p));
    if (!p || !(p->conn = strdup(conn ? conn : ""))) {
        free(p);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &a);
    pthread_condattr_destroy(&a);
    sqlq_conn_string_describe(p->conn, p->target, sizeof(p->target));
    *out = p;
    return SQLQ_OK;
}

void sqlq_sink_pool_destroy(sqlq_sink_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nidle; i++)
        sqlq_db_close(p->idle[i]);
    free(p->idle);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->conn);
    free(p);
}

const char *sqlq_sink_pool_target(const sqlq_sink_pool *p)
{
    return p->target;
}

sqlq_result sqlq_sink_pool_unavailable(const sqlq_sink_pool *p, const sqlq_error *cause,
                                       sqlq_error *err)
{
    if (!err || err->code != SQLQ_OK)
        return SQLQ_E_UNAVAILABLE;
    sqlq_error_set(err, SQLQ_E_UNAVAILABLE, true, "--sql target database (%s) is unavailable: %s",
                   p->target, cause->message);
    memcpy(err->sqlstate, cause->sqlstate, sizeof(err->sqlstate));
    err->native_code = cause->native_code;
    return SQLQ_E_UNAVAILABLE;
}

bool sqlq_sink_pool_too_many(const sqlq_error *e)
{
    return strcmp(e->sqlstate, "53300") == 0 || e->native_code == 1040 ||
           e->native_code == 1203 || strcasestr(e->message, "too many connections") ||
           strcasestr(e->message, "too many clients") ||
           strcasestr(e->message, "connection slots are reserved") ||
           strcasestr(e->message, "maximum number of user connections");
}

/* Under p->mu: may this caller open one more connection now? */
static bool may_open(sqlq_sink_pool *p)
{
    if (p->limit && sqlq_clock_mono_ms() >= p->limit_until_ms)
        p->limit = 0; /* the refusal may have been other clients' doing: try again */
    return p->limit == 0 || p->open < p->limit || p->open == 0;
}

/* Under p->mu: the server refused a connection as too many while p->open - p->connecting were
 * open (the limit is a lower bound: connections being opened meanwhile may still succeed). */
static void learn_limit(sqlq_sink_pool *p, const sqlq_error *e)
{
    p->limit = p->open - p->connecting > 0 ? p->open - p->connecting : 1;
    p->limit_until_ms = sqlq_clock_mono_ms() + LIMIT_HOLD_MS;
    if (p->limit_logged)
        return;
    p->limit_logged = true;
    SQLQ_LOG_ERR(SQLQ_LOG_WARN, "sink.connections_limited", e,
                 "target=\"%s\" connections=%zu note=\"the database refuses more connections: the "
                 "consumer applies messages with these and waits for a free one (it opens up to "
                 "--batch-size + --new-batch-threshold; lower them or raise the server's limit)\"",
                 p->target, p->limit);
}

/* Under p->mu (released while connecting): open a new connection. */
static sqlq_result open_one(sqlq_sink_pool *p, sqlq_db **out, bool *out_wait, sqlq_error *err)
{
    *out_wait = false;
    if (p->cap <= p->open) {
        sqlq_db **grown = realloc(p->idle, (p->open + 1) * sizeof(*grown));
        if (!grown)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        p->idle = grown;
        p->cap = p->open + 1;
    }
    p->open++;
    p->connecting++;
    pthread_mutex_unlock(&p->mu);
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_db_connect(p->conn, out, &e);
    pthread_mutex_lock(&p->mu);
    p->connecting--;
    if (r == SQLQ_OK)
        return SQLQ_OK;
    p->open--;
    if (r == SQLQ_E_NOMEM)
        return sqlq_error_set(err, r, false, "%s", e.message);
    if (sqlq_sink_pool_too_many(&e) && p->open > 0) { /* others are open or being opened */
        learn_limit(p, &e);
        *out_wait = true;
        return SQLQ_OK;
    }
    return sqlq_sink_pool_unavailable(p, &e, err);
}

sqlq_result sqlq_sink_pool_take(sqlq_sink_pool *p, const sqlq_received *d, sqlq_db **out,
                                sqlq_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&p->mu);
    sqlq_result r = SQLQ_OK;
    while (!*out && r == SQLQ_OK) {
        bool wait = !may_open(p);
        if (p->nidle > 0) {
            *out = p->idle[--p->nidle];
        } else if (!wait) {
            r = open_one(p, out, &wait, err);
        }
        if (*out || r != SQLQ_OK || !wait)
            continue;
        if (d && (sqlq_received_cancelled(d) || sqlq_received_remaining_ms(d) == 0)) {
            r = sqlq_error_set(err, SQLQ_E_TIMEOUT, false,
                               "cancelled while waiting for a connection to the --sql target "
                               "database (%s): all %zu it allows are in use",
                               p->target, p->open);
            break;
        }
        struct timespec until = sqlq_clock_monotonic_after(WAIT_SLICE_MS);
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
    }
    pthread_mutex_unlock(&p->mu);
    return r;
}

void sqlq_sink_pool_give(sqlq_sink_pool *p, sqlq_db *db, bool broken)
{
    if (!db)
        return;
    sqlq_db **dead = NULL;
    size_t ndead = 0;
    pthread_mutex_lock(&p->mu);
    if (broken) {
        dead = p->idle ? malloc((p->nidle + 1) * sizeof(*dead)) : NULL;
        if (dead) {
            memcpy(dead, p->idle, p->nidle * sizeof(*dead));
            ndead = p->nidle;
            p->open -= p->nidle;
            p->nidle = 0;
        }
        p->open--;
    } else {
        p->idle[p->nidle++] = db;
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < ndead; i++)
        sqlq_db_close(dead[i]);
    free(dead);
    if (broken)
        sqlq_db_close(db);
}
