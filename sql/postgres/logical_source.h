/* logical_source: a PostgreSQL table's changes read from a logical replication slot (pgoutput)
 * and handed to the route as the capture API hands them: polled in commit order, released when
 * the queue accepted them, the slot confirmed only past what was all released (pg_ack.h). */
#ifndef SQLQ_LOGICAL_SOURCE_H
#define SQLQ_LOGICAL_SOURCE_H

#include "capture.h"
#include "db.h"
#include "pg_slot.h"
#include "result.h"
#include "table.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlq_logical_source sqlq_logical_source;

/* Describe the table, run the refusals (pg_slot.h: the slot must exist and not be lost, the
 * table be in the publication; before_image and changed need REPLICA IDENTITY FULL; where is
 * refused). The stream starts at the first poll, on a connection of its own (a handle that
 * never polls, like the bridge's renewal thread's, starts none). db must outlive the source. */
SQLQ_NODISCARD sqlq_result sqlq_logical_source_open(sqlq_db *db, const sqlq_capture_config *cfg,
                                                    sqlq_logical_source **out, sqlq_error *err);
/* The same checks without opening anything: `sqlq config check`. warnings may be NULL. */
SQLQ_NODISCARD sqlq_result sqlq_logical_source_check(sqlq_db *db, const sqlq_capture_config *cfg,
                                                     json_t *warnings, sqlq_error *err);
/* `sqlq setup --source logical` of one route (cfg->table, bridge_name, key_columns,
 * before_image/changed for the replica identity they need): the refusals first (nothing is
 * created when one applies), then the publication and the slot (pg_slot.h), registered in
 * sqlq's registry as kind "slot" (so `sqlq status` finds it). lines and warnings get what to
 * print. drop: remove the slot and, when no other route's slot of the table is left, the
 * publication, and the registry row. */
SQLQ_NODISCARD sqlq_result sqlq_logical_source_setup(sqlq_db *db, const sqlq_capture_config *cfg,
                                                     bool drop, json_t *lines, json_t *warnings,
                                                     sqlq_error *err);
/* Stops the stream: what was polled and not released is sent again by the next holder of the
 * slot (the server resumes after the confirmed position). */
void sqlq_logical_source_close(sqlq_logical_source *ls);
const sqlq_table *sqlq_logical_source_table(const sqlq_logical_source *ls);

/* Up to max_batch_size changes in commit order, waiting up to wait_ms for the first when none
 * is ready. version = the transaction's commit LSN; lease_token = the transaction's place in
 * the acknowledgement order (copy it along, as for every source). A slot another instance
 * streams from: an empty batch (this one waits, and takes over when the slot is free). A slot
 * dropped or lost: SQLQ_E_UNSUPPORTED naming sqlq backfill. */
SQLQ_NODISCARD sqlq_result sqlq_logical_source_poll(sqlq_logical_source *ls, uint64_t wait_ms,
                                                    sqlq_change_batch *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_logical_source_release(sqlq_logical_source *ls,
                                                       const sqlq_change *changes, size_t n,
                                                       sqlq_error *err);
/* Give changes back (they are polled again first); count_attempt adds one to their attempts. */
SQLQ_NODISCARD sqlq_result sqlq_logical_source_abandon(sqlq_logical_source *ls,
                                                       const sqlq_change *changes, size_t n,
                                                       bool count_attempt, sqlq_error *err);
/* Wait up to timeout_ms for changes ready to poll; true when there are (or the stream failed
 * for good: the next poll says why). */
bool sqlq_logical_source_wait(sqlq_logical_source *ls, uint64_t timeout_ms);
/* The position the slot may be confirmed at now (sent with the next status update). */
int64_t sqlq_logical_source_confirmable(sqlq_logical_source *ls);

typedef struct sqlq_logical_status {
    sqlq_pg_slot_names names;
    sqlq_pg_slot_state slot;
    bool holder;            /* this instance streams from the slot */
    long long ready;        /* received, not polled yet */
    long long in_flight;    /* polled, not released yet */
    double lag_s;           /* age of the oldest transaction received and not yet confirmed */
    uint64_t confirmed;     /* what this instance reported as flushed */
    long long skipped;      /* messages skipped (type, origin, logical messages, unknown) */
    long long truncates;    /* TRUNCATEs of the table seen (not published) */
    json_t *warnings;       /* borrowed: the open's warnings about the server (strings) */
} sqlq_logical_status;

SQLQ_NODISCARD sqlq_result sqlq_logical_source_status(sqlq_logical_source *ls,
                                                      sqlq_logical_status *out, sqlq_error *err);

#endif
