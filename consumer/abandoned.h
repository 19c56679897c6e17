/* abandoned: the consumer's durable record of dequeues it gave back without an attempt (a
 * shutdown cancelled the handler or never started it, or a drain gave up while the handler's
 * target was down), so that they do not count toward poison when the message comes back. The
 * queue service counts every Get in DequeueCount and cannot be told otherwise: the consumer
 * subtracts what this record holds for the message's id. */
#ifndef SQLQ_ABANDONED_H
#define SQLQ_ABANDONED_H

#include "result.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sqlq_abandoned sqlq_abandoned;

/* The record's file for a queue of an account: DIR/abandoned-QUEUE-HASH (HASH: 16 hex digits of
 * the queue service's URL, so that two accounts with a queue of one name do not share it). */
void sqlq_abandoned_path(const char *dir, const char *endpoint, const char *queue, char *out,
                         size_t out_size);

/* Opens (reads) the record at path; the file is created by the first sqlq_abandoned_record.
 * Entries of messages that have expired are dropped (and the file rewritten, under an exclusive
 * lock, when that removes any). Several consumers of one queue on one host may share the file:
 * each reads what the others appended before it looks a message up. */
SQLQ_NODISCARD sqlq_result sqlq_abandoned_open(const char *path, sqlq_abandoned **out,
                                               sqlq_error *err);
void sqlq_abandoned_close(sqlq_abandoned *a);

/* Dequeue number dequeue_count of message id was given back without an attempt: appended and
 * flushed to disk (fdatasync) before this returns, so the release that follows cannot outrun
 * it. expires: the message's expiration time (seconds since the epoch; 0 = unknown): the
 * entry is dropped after it, and in any case 30 days after it was written. Thread-safe. */
SQLQ_NODISCARD sqlq_result sqlq_abandoned_record(sqlq_abandoned *a, const char *id,
                                                 long dequeue_count, int64_t expires,
                                                 sqlq_error *err);
/* How many of the message's dequeues before dequeue_count were given back (0 when none, or
 * when a is NULL). Thread-safe. */
long sqlq_abandoned_discount(sqlq_abandoned *a, const char *id, long dequeue_count);
/* The message left the queue (deleted or poisoned): its entries are dropped. Thread-safe. */
void sqlq_abandoned_forget(sqlq_abandoned *a, const char *id);

#endif
