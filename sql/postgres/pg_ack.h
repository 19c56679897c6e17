/* pg_ack: the WAL position a logical route may confirm, given what the queue accepted (pure). */
#ifndef SQLQ_PG_ACK_H
#define SQLQ_PG_ACK_H

#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The rule: a transaction's commit end_lsn may be confirmed once every change of it and of
 * every transaction before it was released (accepted by the queue or poisoned). Nothing else
 * is ever confirmed: not a keepalive's WAL end, which PostgreSQL 15 was seen to send past the
 * commit of a large transaction whose changes it had not sent yet (confirming it would have
 * skipped that transaction); an idle route releases WAL through a heartbeat transaction of its
 * own instead (logical_reader.c). The confirmed position never goes back. Transactions are
 * registered in commit order (the stream's). */
typedef struct sqlq_pg_ack sqlq_pg_ack;

/* confirmed: the slot's confirmed_flush_lsn at start (nothing below it is ever reported). */
sqlq_pg_ack *sqlq_pg_ack_create(uint64_t confirmed);
void sqlq_pg_ack_destroy(sqlq_pg_ack *a);

/* A whole transaction (its Commit arrived) with n changes handed out for publishing (0: none
 * of it is published). *out_seq names it for sqlq_pg_ack_done. */
SQLQ_NODISCARD sqlq_result sqlq_pg_ack_txn(sqlq_pg_ack *a, uint64_t end_lsn, size_t n,
                                           uint64_t *out_seq);
/* n changes of transaction seq were released. More than it has outstanding, or an unknown
 * seq, is SQLQ_E_INVALID (a bookkeeping error: nothing changes). */
SQLQ_NODISCARD sqlq_result sqlq_pg_ack_done(sqlq_pg_ack *a, uint64_t seq, size_t n);
/* The position to report as flushed now (also applies what became confirmable). */
uint64_t sqlq_pg_ack_confirmable(sqlq_pg_ack *a);
/* Changes handed out and not yet released, over every transaction. */
size_t sqlq_pg_ack_outstanding(const sqlq_pg_ack *a);
/* Transactions registered and not yet confirmable. */
size_t sqlq_pg_ack_pending_txns(const sqlq_pg_ack *a);

#endif
