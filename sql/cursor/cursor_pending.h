/* cursor_pending: the batches a cursor source polled but has not committed yet, and which of
 * their changes were delivered (a batch commits only when all of them were). */
#ifndef SQLQ_CURSOR_PENDING_H
#define SQLQ_CURSOR_PENDING_H

#include "capture.h"
#include "cursor_state.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlq_cursor_item {
    int64_t version;
    char *key; /* canonical JSON of the change key (sorted, compact) */
    bool delivered;
} sqlq_cursor_item;

typedef struct sqlq_cursor_batch {
    int64_t batch_id;
    sqlq_checkpoint end; /* cursor_value and key of its last row: what committing it stores */
    sqlq_cursor_item *items;
    size_t count, delivered;
} sqlq_cursor_batch;

typedef struct sqlq_cursor_pending {
    sqlq_cursor_batch *batches; /* oldest first */
    size_t count;
} sqlq_cursor_pending;

void sqlq_cursor_pending_clear(sqlq_cursor_pending *p);
/* Append a batch of n changes ending at *end (its fields are taken over on success). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_pending_add(sqlq_cursor_pending *p, int64_t batch_id,
                                                   sqlq_checkpoint *end,
                                                   const sqlq_change *changes, size_t n);
/* Mark the change delivered in the oldest batch holding it undelivered; false when none does. */
bool sqlq_cursor_pending_mark(sqlq_cursor_pending *p, const sqlq_change *ch);
/* How many batches at the front are fully delivered, and their rows (out_rows optional). */
size_t sqlq_cursor_pending_ready(const sqlq_cursor_pending *p, int64_t *out_rows);
/* Remove the first k batches (after their commit). */
void sqlq_cursor_pending_drop(sqlq_cursor_pending *p, size_t k);
/* Changes polled and not delivered yet. */
size_t sqlq_cursor_pending_outstanding(const sqlq_cursor_pending *p);
/* The id the next batch gets: one more than the newest pending batch, or than committed. */
int64_t sqlq_cursor_pending_next_id(const sqlq_cursor_pending *p, int64_t committed);

#endif
