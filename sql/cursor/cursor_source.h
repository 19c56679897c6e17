/* cursor_source: changes of a table read by polling a monotonic column, for users who may only
 * read the table (no triggers, no change tracking): the third change source behind capture.h.
 *
 * Query: rows with (cursor, key) > checkpoint and cursor below "now - safety_lag", in
 * (cursor, key) order, at most max_batch_size. Checkpoint = (cursor value, key, batch id), kept
 * in sqlq's cursor_state table and moved only when every change of a batch was released, by a
 * compare-and-set on this instance's lease token. One instance polls a table at a time; the
 * others stand by (poll returns nothing) and take over when the lease expires. docs/cursor-source.md
 * says what this can and cannot see (hard deletes, rows committed later than the lag). */
#ifndef SQLQ_CURSOR_SOURCE_H
#define SQLQ_CURSOR_SOURCE_H

#include "capture.h"
#include "cursor_lag.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlq_cursor_source sqlq_cursor_source;

/* safety_lag_ms -1: the database's default (cursor_lag.h). */

/* Uses cfg->bridge_name, table, instance_id, max_batch_size, lease_s, max_attempts, start_from,
 * cursor_column, soft_delete_column, safety_lag_ms. Describes the table and refuses unsafe
 * cursors (SQLQ_E_INVALID with the reason: missing, nullable, floating point, text, date …).
 * state_db holds the checkpoint and lease (NULL: db itself; another connection lets the watched
 * database stay read-only). Both must outlive the source; one source per connection. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_open(sqlq_db *db, sqlq_db *state_db,
                                                   const sqlq_capture_config *cfg,
                                                   sqlq_cursor_source **out, sqlq_error *err);
/* Resigns the lease (a standby takes over at once); unreleased batches are read again there. */
void sqlq_cursor_source_close(sqlq_cursor_source *cs);
const sqlq_table *sqlq_cursor_source_table(const sqlq_cursor_source *cs);
bool sqlq_cursor_source_leader(const sqlq_cursor_source *cs);
/* The lag in force and why, in words ("lag 10000 ms (PostgreSQL default: …)"). */
const char *sqlq_cursor_source_rule(const sqlq_cursor_source *cs);
int sqlq_cursor_source_lag_ms(const sqlq_cursor_source *cs);

/* Standby: try to take the lease; while another instance holds it, an empty batch. Leader: the
 * next batch after the last one polled (batches may be polled ahead of release). Every row is
 * op update (a cursor cannot tell an insert from an update) or, with the soft-delete column
 * set, op delete (row NULL). version = the cursor value (integer; timestamps as microseconds
 * since the epoch), so a redelivered change keeps its message id. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_poll(sqlq_cursor_source *cs, sqlq_change_batch *out,
                                                   sqlq_error *err);
/* Extend the lease (the changes are not needed: one lease covers the table). A handle that
 * does not poll (the bridge's renewal thread opens its own) extends the lease its instance
 * id holds, by owner alone. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_renew(sqlq_cursor_source *cs,
                                                    const sqlq_change *changes, size_t n,
                                                    sqlq_error *err);
/* Mark changes delivered. When every change of the oldest outstanding batches is delivered, the
 * checkpoint moves to the end of the last such batch (one compare-and-set). *out_lost (optional)
 * counts changes this instance no longer holds. SQLQ_E_LEASE_LOST when the commit was rejected
 * because another instance took the lease: nothing moved, that instance re-reads the batch. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_release(sqlq_cursor_source *cs,
                                                      const sqlq_change *changes, size_t n,
                                                      size_t *out_lost, sqlq_error *err);
/* Give the outstanding batches back: the next poll reads again from the checkpoint. With
 * count_attempt the re-read changes carry attempts + 1 (see capture.h max_attempts). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_abandon(sqlq_cursor_source *cs,
                                                      const sqlq_change *changes, size_t n,
                                                      bool count_attempt, sqlq_error *err);
/* Commit what release has not committed yet (normally nothing); out_version (optional) = the
 * checkpoint's batch id. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_advance(sqlq_cursor_source *cs, int64_t *out_version,
                                                      sqlq_error *err);
/* sync_version = batch id; pending = rows after the checkpoint (a COUNT query); leased = changes
 * polled but not committed; owners = {lease owner: 1}. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_source_status_get(sqlq_cursor_source *cs,
                                                         sqlq_capture_status *out,
                                                         sqlq_error *err);

/* cursor_source_ops.c: the cursor source behind the change-source seam, on every database
 * whose dialect lists it. */
struct sqlq_change_source_ops;
extern const struct sqlq_change_source_ops sqlq_cursor_change_source;

#endif
