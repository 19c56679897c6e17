#include "wakeup.h"

#include "catalog.h"
#include "change_log.h"
#include "log.h"
#include "pg_listen.h"

#include <stdlib.h>
#include <string.h>

#define LISTEN_SLICE_MS 10u /* a stop request is seen within this */

struct sqlq_wakeup {
    sqlq_pg_listen *listen; /* PostgreSQL */
    bool probe;             /* SQLite: PRAGMA data_version */
    bool pushed;            /* the source is handed its changes (logical): it waits itself */
    bool have_version;
    int64_t version;
};

sqlq_result sqlq_wakeup_create(const char *db_connection, sqlq_db *db, const sqlq_capture *cap,
                               sqlq_source_kind source, sqlq_wakeup **out, sqlq_error *err)
{
    *out = NULL;
    if (source == SQLQ_SOURCE_LOGICAL) {
        sqlq_wakeup *w = calloc(1, sizeof(*w));
        if (!w)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        w->pushed = true;
        *out = w;
        return SQLQ_OK;
    }
    const sqlq_dialect *d = sqlq_db_dialect(db);
    bool log = source == SQLQ_SOURCE_AUTO || source == SQLQ_SOURCE_CHANGE_LOG;
    bool pg = strcmp(d->name, "postgres") == 0, lite = strcmp(d->name, "sqlite") == 0;
    if (!log || !(pg || lite))
        return SQLQ_OK;
    sqlq_wakeup *w = calloc(1, sizeof(*w));
    if (!w)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    w->probe = lite;
    if (pg) {
        sqlq_catalog_names names;
        char channel[72];
        sqlq_result rc =
            sqlq_catalog_names_find(db, &sqlq_capture_table(cap)->name, NULL, &names, err);
        char *arm = NULL, *peek = NULL;
        if (rc == SQLQ_OK)
            rc = sqlq_change_log_pg_arm_sql(d, &names, true, &arm, err);
        if (rc == SQLQ_OK)
            rc = sqlq_change_log_pg_arm_sql(d, &names, false, &peek, err);
        if (rc == SQLQ_OK) {
            sqlq_change_log_channel(&names, channel, sizeof(channel));
            sqlq_pg_listen_sql sql = {.arm = arm, .peek = peek};
            rc = sqlq_pg_listen_create(db_connection, channel, &sql, &w->listen, err);
        }
        free(arm);
        free(peek);
        if (rc != SQLQ_OK) {
            free(w);
            return rc;
        }
    }
    *out = w;
    return SQLQ_OK;
}

void sqlq_wakeup_destroy(sqlq_wakeup *w)
{
    if (!w)
        return;
    sqlq_pg_listen_destroy(w->listen);
    free(w);
}

/* SQLite: whether another connection committed since the last probe. The first probe only
 * takes the baseline; a failed one is no hint (the next poll meets the failure). */
static bool probe_moved(sqlq_wakeup *w, sqlq_db *db)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    int64_t v = 0;
    if (sqlq_db_query_int(db, "PRAGMA data_version", NULL, 0, &v, &e) != SQLQ_OK)
        return false;
    bool moved = w->have_version && v != w->version;
    w->version = v;
    w->have_version = true;
    return moved;
}

static bool is_hint(sqlq_pg_listen_event e)
{
    return e == SQLQ_PG_LISTEN_NOTIFIED || e == SQLQ_PG_LISTEN_UNSIGNALLED;
}

/* One slice of the wait: the hint, or TIMEOUT. */
static sqlq_pg_listen_event hinted(sqlq_wakeup *w, sqlq_db *db, const sqlq_clock *clock,
                                   uint64_t slice_ms, int64_t covered)
{
    if (w->listen)
        return sqlq_pg_listen_wait(w->listen, slice_ms, covered);
    return sqlq_clock_sleep_ms(clock, slice_ms) && probe_moved(w, db) ? SQLQ_PG_LISTEN_NOTIFIED
                                                                      : SQLQ_PG_LISTEN_TIMEOUT;
}

/* A source that is handed its changes: wait on it, a slice at a time (a stop request is seen
 * within one). No coalescing window: it hands over whole transactions. */
static bool pushed_wait(const sqlq_capture *cap, const sqlq_clock *clock, uint64_t interval_ms)
{
    uint64_t end = sqlq_clock_now_ms(clock) + interval_ms;
    for (;;) {
        uint64_t now = sqlq_clock_now_ms(clock);
        if (now >= end || !sqlq_clock_sleep_ms(clock, 0))
            return false;
        bool waits = false;
        if (sqlq_capture_wait_ready(cap, end - now < 50 ? end - now : 50, &waits))
            return true;
        if (!waits)
            return false;
    }
}

bool sqlq_wakeup_wait(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap, const sqlq_clock *clock,
                      uint64_t interval_ms, uint64_t last_poll_ms)
{
    if (!w) {
        (void)sqlq_clock_sleep_ms(clock, interval_ms);
        return false;
    }
    if (w->pushed)
        return pushed_wait(cap, clock, interval_ms);
    int64_t covered = sqlq_capture_covered_version(cap);
    uint64_t end = sqlq_clock_now_ms(clock) + interval_ms;
    uint64_t slice = w->listen ? LISTEN_SLICE_MS : SQLQ_WAKEUP_PROBE_MS;
    sqlq_pg_listen_event e = SQLQ_PG_LISTEN_TIMEOUT;
    for (;;) {
        uint64_t now = sqlq_clock_now_ms(clock);
        if (now >= end || !sqlq_clock_sleep_ms(clock, 0))
            return false;
        e = hinted(w, db, clock, end - now < slice ? end - now : slice, covered);
        if (is_hint(e))
            break;
    }
    /* Coalesce: let the rest of a burst commit, then take what it signalled along. A
     * notification came as a commit did; an arm that found changes committed since the last
     * poll began counts its window from that poll (they were committing meanwhile). */
    uint64_t now = sqlq_clock_now_ms(clock);
    uint64_t due = e == SQLQ_PG_LISTEN_UNSIGNALLED ? last_poll_ms + SQLQ_WAKEUP_COALESCE_MS
                                                   : now + SQLQ_WAKEUP_COALESCE_MS;
    if (due > now)
        (void)sqlq_clock_sleep_ms(clock, due - now);
    if (w->listen)
        (void)sqlq_pg_listen_check(w->listen, covered);
    SQLQ_TRACE("wakeup", "source=%s",
               !w->listen                        ? "data_version"
               : e == SQLQ_PG_LISTEN_UNSIGNALLED ? "arm"
                                                 : "notify");
    return true;
}

void sqlq_wakeup_peek(sqlq_wakeup *w, const sqlq_capture *cap)
{
    if (w && w->listen)
        sqlq_pg_listen_peek(w->listen, sqlq_capture_covered_version(cap));
}

bool sqlq_wakeup_hinted(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap)
{
    if (!w)
        return false;
    if (w->pushed) {
        bool waits = false;
        return sqlq_capture_wait_ready(cap, 0, &waits);
    }
    if (w->listen)
        return is_hint(sqlq_pg_listen_check(w->listen, sqlq_capture_covered_version(cap)));
    return probe_moved(w, db);
}
