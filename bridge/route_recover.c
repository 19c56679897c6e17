/* route_recover: a route's connection and capture, opened at its start and again after a
 * failure, with back-off, the outage waits that keep its metrics fresh, and the rule that gives
 * up (--once's budget). */
#include "route_internal.h"

#include "capture_stop.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define OUTAGE_SLICE_MS 1000u /* an outage wait refreshes the metrics between slices */

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

static uint64_t backoff_delay(sqlq_route *r, sqlq_backoff *b, uint64_t since_ms)
{
    uint64_t delay = 30000;
    if (!sqlq_backoff_next(b, 0, &delay))
        sqlq_backoff_reset(b);
    if (r->env.once && since_ms && delay > once_budget_left(r, since_ms))
        delay = once_budget_left(r, since_ms);
    return delay;
}

bool sqlq_route_backoff_sleep(sqlq_route *r, sqlq_backoff *b, uint64_t since_ms)
{
    return sqlq_clock_sleep_ms(&r->clock, backoff_delay(r, b, since_ms)) && !sqlq_route_stopping(r);
}

bool sqlq_route_outage_sleep(sqlq_route *r, sqlq_backoff *b, uint64_t since_ms)
{
    uint64_t left = backoff_delay(r, b, since_ms);
    while (left > 0) {
        uint64_t step = left < OUTAGE_SLICE_MS ? left : OUTAGE_SLICE_MS;
        if (!sqlq_clock_sleep_ms(&r->clock, step) || sqlq_route_stopping(r))
            return false;
        left -= step;
        sqlq_route_refresh_metrics(r, sqlq_clock_now_ms(&r->clock));
    }
    return true;
}

bool sqlq_route_queue_give_up(sqlq_route *r)
{
    return give_up(r, r->outage.since_ms, "queue service", r->outage.cause, SQLQ_E_NETWORK);
}

static void db_failed(sqlq_route *r)
{
    if (r->db_down_since_ms == 0)
        r->db_down_since_ms = sqlq_clock_now_ms(&r->clock);
}

/* Every column --columns / --exclude-columns names exists: a typo would otherwise send too
 * little or leave personal data in. */
static sqlq_result check_columns(const sqlq_route *r, sqlq_error *err)
{
    const sqlq_table *t = sqlq_capture_table(r->cap);
    const char **names = calloc(t->ncolumns ? t->ncolumns : 1, sizeof(*names));
    if (!names)
        return sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
    for (size_t i = 0; i < t->ncolumns; i++)
        names[i] = t->columns[i].name;
    const char *unknown = sqlq_route_filter_unknown(&r->filter, names, t->ncolumns);
    sqlq_result rc = SQLQ_OK;
    if (unknown)
        rc = sqlq_error_set(err, SQLQ_E_INVALID, false, "key %s: table %s has no column '%s'",
                            r->filter.exclude ? "exclude_columns" : "columns", r->cfg.table, unknown);
    free(names);
    return rc;
}

/* (Re)open the capture on the current connection. The wakeup's signal may be the capture's
 * own (the logical source's ready ring): it goes with the capture and is made anew with it. */
static sqlq_result open_capture(sqlq_route *r, sqlq_error *err)
{
    sqlq_wakeup_destroy(r->wakeup);
    r->wakeup = NULL;
    sqlq_capture_close(r->cap);
    r->cap = NULL;
    sqlq_result rc = sqlq_capture_open(r->db, &r->ccfg, &r->cap, err);
    if (rc == SQLQ_OK)
        rc = check_columns(r, err);
    sqlq_error e;
    sqlq_error_clear(&e);
    if (rc == SQLQ_OK && r->cfg.wakeup &&
        sqlq_wakeup_create(r->env.db_connection, r->db, r->cap, &r->wakeup, &e) != SQLQ_OK)
        sqlq_route_log_error("wakeup_failed", r, &e); /* polls at its interval meanwhile */
    return rc;
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
    /* A capture that cannot go on keeps its backlog measured through the wait. */
    if (!(sqlq_route_stopped(r) ? sqlq_route_outage_sleep(r, &r->db_backoff, r->db_down_since_ms)
                                : sqlq_route_backoff_sleep(r, &r->db_backoff, r->db_down_since_ms)))
        return false;
    sqlq_error err;
    sqlq_error_clear(&err);
    bool reconnect = failed->transient || r->db_failures >= 2;
    if (reconnect && sqlq_db_reconnect(r->db, r->env.stop, &err) != SQLQ_OK) {
        sqlq_route_log_error("db_reconnect_failed", r, &err);
        return !sqlq_route_stopping(r);
    }
    sqlq_error_clear(&err);
    if (open_capture(r, &err) != SQLQ_OK) {
        sqlq_route_log_error("capture_open_failed", r, &err);
        sqlq_route_stop_note(r, &err);
        if (strcmp(err.reason, SQLQ_STOP_STATE_GONE) == 0)
            return false; /* never started again from start_from: the route ends */
    }
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
sqlq_result sqlq_route_start(sqlq_route *r, sqlq_error *err)
{
    for (bool reopen = false;;) {
        sqlq_error e;
        sqlq_error_clear(&e);
        sqlq_result rc = !r->db ? sqlq_db_connect(r->env.db_connection, &r->db, &e)
                         : reopen ? sqlq_db_reopen(r->db, &e)
                                  : SQLQ_OK;
        if (rc == SQLQ_OK && !r->cap)
            rc = open_capture(r, &e);
        if (rc == SQLQ_OK)
            sqlq_route_opened(r);
        if (rc == SQLQ_OK && !r->renewer)
            rc = sqlq_lease_renewer_start(r->env.db_connection, &r->ccfg, renew_interval_ms(r),
                                          &r->renewer, &e);
        if (rc == SQLQ_OK && r->cfg.wakeup && !r->wakeup)
            rc = sqlq_wakeup_create(r->env.db_connection, r->db, r->cap, &r->wakeup, &e);
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
        reopen = r->db && !r->cap; /* a connection that failed mid-way: opened again */
        if (!sqlq_route_backoff_sleep(r, &r->db_backoff, r->db_down_since_ms))
            return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "stopped before the route started");
    }
}
