/* renewal: when to extend a message's visibility while its handler runs (pure schedule).
 * Renew at half the lease; after a transient failure retry sooner, before the lease runs out;
 * stop for good once ownership is lost (PopReceiptMismatch, 404, 409). */
#ifndef SQLQ_RENEWAL_H
#define SQLQ_RENEWAL_H

#include "result.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlq_renewal {
    uint64_t lease_ms;      /* visibility set by each get or update */
    uint64_t held_until_ms; /* when the message becomes visible unless renewed */
    uint64_t next_ms;       /* when to renew next */
    unsigned failures;      /* consecutive failed attempts */
    bool lost;              /* ownership lost: never renew again */
} sqlq_renewal;

typedef enum {
    SQLQ_RENEWAL_RENEWED = 0, /* lease extended; next_ms is half a lease away */
    SQLQ_RENEWAL_RETRY,       /* failed, may still work: next_ms is sooner */
    SQLQ_RENEWAL_LOST         /* someone else owns it now (or it is gone): stop */
} sqlq_renewal_outcome;

/* The minimum retry delay after a failed renewal. */
#define SQLQ_RENEWAL_MIN_RETRY_MS 100u

/* A message received at now_ms with a visibility of lease_ms. */
void sqlq_renewal_start(sqlq_renewal *r, uint64_t lease_ms, uint64_t now_ms);
bool sqlq_renewal_due(const sqlq_renewal *r, uint64_t now_ms);
/* Record the result of an Update Message attempted at now_ms. SQLQ_E_POP_RECEIPT,
 * SQLQ_E_NOT_FOUND and SQLQ_E_CONFLICT mean ownership is lost. Any other failure retries after
 * a quarter of the time still held (at least SQLQ_RENEWAL_MIN_RETRY_MS, at most a quarter
 * lease), so several attempts fit before the message becomes visible. */
sqlq_renewal_outcome sqlq_renewal_record(sqlq_renewal *r, uint64_t now_ms, sqlq_result result);
/* True for the results that mean another consumer may own the message. */
bool sqlq_renewal_ownership_lost(sqlq_result result);

#endif
