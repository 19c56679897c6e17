/* route_stopped: a route whose capture cannot go on (its key changed, its triggers are gone,
 * its state was removed: a permanent failure), and what keeps that from being silent. It says why, in sqlq_route_stopped{table,reason}
 * and the log, and keeps measuring its backlog from the change log alone (capture_backlog.h),
 * so sqlq_pending_changes and the oldest change's age go on while nothing is delivered. */
#include "route_internal.h"

#include "capture_stop.h"
#include "clock.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define STOPPED_HELP "1 while the route cannot capture, with the reason (docs/bridge.md)"

static void set_gauge(sqlq_route *r, const char *reason, double v)
{
    sqlq_label l[] = {{"table", r->cfg.table}, {"reason", reason}};
    sqlq_gauge_set(sqlq_metrics_gauge(r->env.metrics, SQLQ_METRIC_ROUTE_STOPPED, STOPPED_HELP, l, 2),
                   v);
}

void sqlq_route_stop_note(sqlq_route *r, const sqlq_error *e)
{
    if (e->transient || e->code == SQLQ_E_CANCELLED)
        return;
    const char *reason = sqlq_capture_stop_reason(e);
    /* A failure named more precisely earlier (a key change, then the reopen's "no key") keeps
     * its reason; its message is the latest. */
    bool keep = r->stop_reason[0] && strcmp(reason, SQLQ_STOP_OTHER) == 0;
    r->stop_err = *e;
    if (keep)
        return;
    if (r->stop_reason[0] && strcmp(r->stop_reason, reason) != 0)
        set_gauge(r, r->stop_reason, 0);
    snprintf(r->stop_reason, sizeof(r->stop_reason), "%s", reason);
    snprintf(r->stop_err.reason, sizeof(r->stop_err.reason), "%s", reason);
    set_gauge(r, reason, 1);
}

void sqlq_route_stop_clear(sqlq_route *r)
{
    if (!r->stop_reason[0])
        return;
    set_gauge(r, r->stop_reason, 0);
    SQLQ_INFO("capture_resumed", "table=%s reason_was=%s", r->cfg.table, r->stop_reason);
    r->stop_reason[0] = '\0';
    sqlq_backlog_close(r->backlog);
    r->backlog = NULL;
}

bool sqlq_route_stopped(const sqlq_route *r)
{
    return r->stop_reason[0] != '\0';
}

void sqlq_route_stop_error(const sqlq_route *r, sqlq_error *out)
{
    *out = r->stop_err;
}

bool sqlq_route_stop_backlog(sqlq_route *r, double *pending, double *age_s)
{
    if (!sqlq_route_stopped(r) || !r->db)
        return false;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_backlog_counts c;
    sqlq_result rc = r->backlog ? SQLQ_OK
                                : sqlq_backlog_open(r->db, r->cfg.table, r->cfg.bridge_name,
                                                    &r->backlog, &e);
    if (rc == SQLQ_OK)
        rc = sqlq_backlog_read(r->backlog, sqlq_clock_wall_ms(), &c, &e);
    if (rc != SQLQ_OK) { /* the connection may be down too: the next refresh tries again */
        SQLQ_DEBUG("backlog_unread", "table=%s err=\"%s\"", r->cfg.table, e.message);
        sqlq_backlog_close(r->backlog);
        r->backlog = NULL;
        return false;
    }
    *pending = (double)c.pending;
    *age_s = c.oldest_pending_age_s;
    return true;
}

void sqlq_route_opened(sqlq_route *r)
{
    if (r->ccfg.require_state)
        return;
    r->ccfg.require_state = true;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_capture_presence(r->cap, false, &e) != SQLQ_OK)
        sqlq_route_log_error("presence_failed", r, &e);
}
