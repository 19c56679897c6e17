/* pg_ack: the WAL position a logical route may confirm, given what the queue accepted (pure). */
#include "pg_ack.h"

#include <stdlib.h>

typedef struct ack_txn {
    uint64_t end_lsn;
    size_t outstanding;
} ack_txn;

struct sqlq_pg_ack {
    ack_txn *ring; /* pending transactions, oldest at head */
    size_t cap, head, count;
    uint64_t first_seq; /* seq of the transaction at head */
    uint64_t confirmed;
    size_t outstanding;
};

sqlq_pg_ack *sqlq_pg_ack_create(uint64_t confirmed) {
    sqlq_pg_ack *a = calloc(1, sizeof *a);
    if (a)
        a->confirmed = confirmed;
    return a;
}

void sqlq_pg_ack_destroy(sqlq_pg_ack *a) {
    if (!a)
        return;
    free(a->ring);
    free(a);
}

static ack_txn *at(sqlq_pg_ack *a, size_t i) { return &a->ring[(a->head + i) % a->cap]; }

static sqlq_result grow(sqlq_pg_ack *a) {
    size_t cap = a->cap ? a->cap * 2 : 64;
    ack_txn *ring = malloc(cap * sizeof *ring);
    if (!ring)
        return SQLQ_E_NOMEM;
    for (size_t i = 0; i < a->count; i++)
        ring[i] = *at(a, i);
    free(a->ring);
    a->ring = ring;
    a->cap = cap;
    a->head = 0;
    return SQLQ_OK;
}

sqlq_result sqlq_pg_ack_txn(sqlq_pg_ack *a, uint64_t end_lsn, size_t n, uint64_t *out_seq) {
    if (a->count == a->cap && grow(a) != SQLQ_OK)
        return SQLQ_E_NOMEM;
    *at(a, a->count) = (ack_txn){end_lsn, n};
    *out_seq = a->first_seq + a->count;
    a->count++;
    a->outstanding += n;
    return SQLQ_OK;
}

sqlq_result sqlq_pg_ack_done(sqlq_pg_ack *a, uint64_t seq, size_t n) {
    if (seq < a->first_seq || seq - a->first_seq >= a->count)
        return SQLQ_E_INVALID;
    ack_txn *t = at(a, (size_t)(seq - a->first_seq));
    if (n > t->outstanding)
        return SQLQ_E_INVALID;
    t->outstanding -= n;
    a->outstanding -= n;
    return SQLQ_OK;
}

uint64_t sqlq_pg_ack_confirmable(sqlq_pg_ack *a) {
    while (a->count > 0 && at(a, 0)->outstanding == 0) {
        if (at(a, 0)->end_lsn > a->confirmed)
            a->confirmed = at(a, 0)->end_lsn;
        a->head = (a->head + 1) % a->cap;
        a->count--;
        a->first_seq++;
    }
    return a->confirmed;
}

size_t sqlq_pg_ack_outstanding(const sqlq_pg_ack *a) { return a->outstanding; }
size_t sqlq_pg_ack_pending_txns(const sqlq_pg_ack *a) { return a->count; }
