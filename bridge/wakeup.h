/* wakeup: what a route waits for between polls that found no full batch: a hint that its
 * table changed, or the polling interval, whichever comes first. PostgreSQL change logs: a
 * notification of the capture trigger (LISTEN on a libpq connection of its own), which the
 * trigger sends only while the route's listener is armed (pg_arm.h: armed before the wait; the
 * arm is itself a hint when changes committed unsignalled since the last poll); SQLite: a
 * probe of PRAGMA data_version on the route's connection every few milliseconds; others: the
 * interval alone. A hint only: the poll stays the source of truth, so a lost hint delays a
 * change by at most one interval. */
#ifndef SQLQ_WAKEUP_H
#define SQLQ_WAKEUP_H

#include "capture.h"
#include "clock.h"
#include "db.h"
#include "result.h"

#include <stdbool.h>
#include <stdint.h>

/* After a notification, the wait goes on this long so that a burst of commits becomes one
 * poll of a full batch rather than many polls of one change each. */
#define SQLQ_WAKEUP_COALESCE_MS 5u
/* SQLite: the change probe's period. */
#define SQLQ_WAKEUP_PROBE_MS 10u

typedef struct sqlq_wakeup sqlq_wakeup;

/* The wake-up of a route whose capture `cap` (source as configured) is open on `db`; *out is
 * NULL (a plain sleep) when the database and source give no cheap signal. */
SQLQ_NODISCARD sqlq_result sqlq_wakeup_create(const char *db_connection, sqlq_db *db,
                                              const sqlq_capture *cap, sqlq_source_kind source,
                                              sqlq_wakeup **out, sqlq_error *err);
void sqlq_wakeup_destroy(sqlq_wakeup *w);
/* Wait for a hint or interval_ms (w may be NULL); clock's sleep ends at once on a stop request.
 * db is the route's connection (the SQLite probe runs on it); nobody else may use it meanwhile.
 * cap: the route's capture (its last poll's covered version, sqlq_capture_covered_version; may
 * be NULL). After a hint the wait goes on for the coalescing window: from the hint for a
 * notification, from last_poll_ms (when the last poll began) for an arm that found changes
 * committed meanwhile. true when a hint ended the wait. */
bool sqlq_wakeup_wait(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap, const sqlq_clock *clock,
                      uint64_t interval_ms, uint64_t last_poll_ms);
/* A short batch was polled (cap's last poll) and goes on the queue: without waiting, ask for
 * what sqlq_wakeup_hinted will compare with what that poll covered (PostgreSQL: the version
 * sequence's last value, read while the batch is on the wire; a hint only, which takes no
 * lock: versions taken since make the route poll again at once, and writers were not made to
 * notify meanwhile). w NULL, other databases: nothing. */
void sqlq_wakeup_peek(sqlq_wakeup *w, const sqlq_capture *cap);
/* Without waiting: whether a hint came since the last wait or check (consumed, with every
 * other that came). A route asks this when a short batch is on the queue: if so it polls
 * again at once (after what is left of the coalescing window) instead of waiting. w NULL:
 * never. db and cap as for sqlq_wakeup_wait. */
bool sqlq_wakeup_hinted(sqlq_wakeup *w, sqlq_db *db, const sqlq_capture *cap);

#endif
