/* wakeup: the timing of a route's idle wait (wakeup.h); what it waits on is the change signal
 * of the route's source (change_source.h). */
#include "wakeup.h"

#include "change_source.h"
#include "log.h"

#include <stdlib.h>

struct sqlq_wakeup {
    sqlq_change_signal *signal;
};

sqlq_result sqlq_wakeup_create(const char *db_connection, sqlq_db *db, sqlq_capture *cap,
                               sqlq_wakeup **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_change_signal *s = NULL;
    sqlq_result rc = sqlq_change_signal_open(cap, db_connection, db, &s, err);
    if (rc != SQLQ_OK || !s)
        return rc;
    sqlq_wakeup *w = calloc(1, sizeof(*w));
    if (!w) {
        sqlq_change_signal_close(s);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    w->signal = s;
    *out = w;
    return SQLQ_OK;
}

void sqlq_wakeup_destroy(sqlq_wakeup *w)
{
    if (!w)
        return;
    sqlq_change_signal_close(w->signal);
    free(w);
}

uint64_t sqlq_wakeup_coalesce_ms(const sqlq_wakeup *w)
{
    return w ? sqlq_change_signal_kind(w->signal)->coalesce_ms : 0;
}

bool sqlq_wakeup_wait(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap, const sqlq_clock *clock,
                      uint64_t interval_ms, uint64_t last_poll_ms)
{
    if (!w) {
        (void)sqlq_clock_sleep_ms(clock, interval_ms);
        return false;
    }
    const sqlq_change_signal_ops *kind = sqlq_change_signal_kind(w->signal);
    int64_t covered = sqlq_capture_covered_version(cap);
    uint64_t end = sqlq_clock_now_ms(clock) + interval_ms;
    sqlq_signal_event e = SQLQ_SIGNAL_NONE;
    for (;;) {
        uint64_t now = sqlq_clock_now_ms(clock);
        if (now >= end || !sqlq_clock_sleep_ms(clock, 0))
            return false;
        uint64_t left = end - now;
        e = sqlq_change_signal_wait(w->signal, db, clock,
                                    left < kind->slice_ms ? left : kind->slice_ms, covered);
        if (e != SQLQ_SIGNAL_NONE)
            break;
    }
    /* Coalesce: let the rest of a burst commit, then take what it signalled along. A hint came
     * as a commit did; changes found committed since the last poll began count the window from
     * that poll (they were committing meanwhile). */
    uint64_t now = sqlq_clock_now_ms(clock);
    uint64_t due = e == SQLQ_SIGNAL_CHANGED_BEFORE ? last_poll_ms + kind->coalesce_ms
                                                   : now + kind->coalesce_ms;
    if (due > now)
        (void)sqlq_clock_sleep_ms(clock, due - now);
    sqlq_change_signal_consume(w->signal, covered);
    SQLQ_TRACE("wakeup", "source=%s",
               e == SQLQ_SIGNAL_CHANGED_BEFORE && kind->name_before ? kind->name_before
                                                                    : kind->name);
    return true;
}

void sqlq_wakeup_peek(sqlq_wakeup *w, const sqlq_capture *cap)
{
    if (w)
        sqlq_change_signal_peek(w->signal, sqlq_capture_covered_version(cap));
}

bool sqlq_wakeup_hinted(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap)
{
    return w && sqlq_change_signal_check(w->signal, db, sqlq_capture_covered_version(cap)) !=
                    SQLQ_SIGNAL_NONE;
}
