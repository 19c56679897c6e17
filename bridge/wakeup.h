/* wakeup: what a route waits for between polls that found no full batch: a hint that its
 * table changed, or the polling interval, whichever comes first. The hint is the change signal
 * of the route's source (change_source.h: a notification heard on a connection of its own, a
 * probe on the route's connection every few milliseconds, a stream's ready changes); this
 * module keeps only the timing: slices of the wait (a stop request is seen within one), and a
 * coalescing window after a hint. A source without a signal: the interval alone. A hint only:
 * the poll stays the source of truth, so a lost hint delays a change by at most one
 * interval. */
#ifndef SQLQ_WAKEUP_H
#define SQLQ_WAKEUP_H

#include "capture.h"
#include "clock.h"
#include "db.h"
#include "result.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlq_wakeup sqlq_wakeup;

/* The wake-up of a route whose capture `cap` is open on `db`; *out is NULL (a plain sleep)
 * when its source gives no cheap signal. */
SQLQ_NODISCARD sqlq_result sqlq_wakeup_create(const char *db_connection, sqlq_db *db,
                                              sqlq_capture *cap, sqlq_wakeup **out,
                                              sqlq_error *err);
void sqlq_wakeup_destroy(sqlq_wakeup *w);
/* After a hint, the wait goes on this long so that a burst of commits becomes one poll of a
 * full batch rather than many polls of one change each (the signal's window; 0 for w NULL). */
uint64_t sqlq_wakeup_coalesce_ms(const sqlq_wakeup *w);
/* Wait for a hint or interval_ms (w may be NULL); clock's sleep ends at once on a stop request.
 * db is the route's connection (a probe may run on it); nobody else may use it meanwhile.
 * cap: the route's capture (its last poll's covered version, sqlq_capture_covered_version; may
 * be NULL). After a hint the wait goes on for the signal's coalescing window: from the hint,
 * or from last_poll_ms (when the last poll began) for changes found committed since then
 * (SQLQ_SIGNAL_CHANGED_BEFORE). true when a hint ended the wait. */
bool sqlq_wakeup_wait(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap, const sqlq_clock *clock,
                      uint64_t interval_ms, uint64_t last_poll_ms);
/* A short batch was polled (cap's last poll) and goes on the queue: without waiting, ask for
 * what sqlq_wakeup_hinted will compare with what that poll covered (the signal's peek: say,
 * the last version handed out, read while the batch is on the wire; a hint only: versions
 * taken since make the route poll again at once). w NULL, a signal without a peek: nothing. */
void sqlq_wakeup_peek(sqlq_wakeup *w, const sqlq_capture *cap);
/* Without waiting: whether a hint came since the last wait or check (consumed, with every
 * other that came). A route asks this when a short batch is on the queue: if so it polls
 * again at once (after what is left of the coalescing window) instead of waiting. w NULL:
 * never. db and cap as for sqlq_wakeup_wait. */
bool sqlq_wakeup_hinted(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap);

#endif
