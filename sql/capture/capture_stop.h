/* capture_stop: why a capture cannot go on, as a stable name for metrics, logs and
 * `sqlq status` (sqlq_error's reason; the message says what to do). */
#ifndef SQLQ_CAPTURE_STOP_H
#define SQLQ_CAPTURE_STOP_H

#include "result.h"

#define SQLQ_STOP_KEY_CHANGED "table_key_changed"  /* the table's key is not the log's */
#define SQLQ_STOP_SOURCE_GONE "capture_source_gone" /* triggers, change tracking or the
                                                    * publication's table gone */
#define SQLQ_STOP_NOT_SET_UP "not_set_up"          /* no change log (setup not run) */
#define SQLQ_STOP_STATE_GONE "state_gone"          /* the bridge's sync state was removed */
#define SQLQ_STOP_RETENTION "retention_overrun"    /* the source no longer keeps changes not
                                                    * delivered yet: sqlq backfill */
#define SQLQ_STOP_TRUNCATED "table_truncated"      /* a TRUNCATE the route may not skip */
#define SQLQ_STOP_KEY_REFUSED "key_refused"        /* key_columns names no usable key, or
                                                    * not the one setup made: configuration */
#define SQLQ_STOP_OTHER "capture_failed"           /* any other permanent failure */

/* The reason of a permanent failure: err->reason, else SQLQ_STOP_OTHER. */
const char *sqlq_capture_stop_reason(const sqlq_error *err);

#endif
