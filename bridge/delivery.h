/* delivery: one route's publishing side: turns polled changes into messages (envelope), puts
 * them with many requests in flight, sends exhausted or unsendable changes to {queue}-poison,
 * and says per change what happened so the route releases only what a queue accepted. */
#ifndef SQLQ_DELIVERY_H
#define SQLQ_DELIVERY_H

#include "capture.h"
#include "envelope.h"
#include "queue_client.h"
#include "result.h"

typedef enum {
    SQLQ_OUTCOME_PENDING = 0, /* not published yet */
    SQLQ_OUTCOME_ACCEPTED,    /* the main queue accepted its message: release */
    SQLQ_OUTCOME_POISONED,    /* the poison queue accepted it: release */
    SQLQ_OUTCOME_TRANSIENT,   /* queue unreachable, throttled, 5xx: retry, attempt not counted */
    SQLQ_OUTCOME_FAILED       /* refused for good (4xx): abandon, the attempt counts */
} sqlq_outcome;

/* How a put's result is treated. SQLQ_E_NOT_FOUND (queue deleted) is transient: the queue is
 * created again before the retry. */
sqlq_outcome sqlq_delivery_classify(sqlq_result r, const sqlq_error *err);

typedef struct sqlq_delivery_config {
    const char *queue;
    sqlq_envelope_config envelope;
    int max_in_flight;
    int max_attempts;
} sqlq_delivery_config;

typedef struct sqlq_delivery sqlq_delivery;

/* The client is borrowed (one per thread) and must outlive the delivery. */
SQLQ_NODISCARD sqlq_result sqlq_delivery_create(sqlq_queue_client *client, const sqlq_delivery_config *cfg,
                                                sqlq_delivery **out, sqlq_error *err);
void sqlq_delivery_destroy(sqlq_delivery *d);

/* Create the main queue if missing. Transient failures come back with err->transient. */
SQLQ_NODISCARD sqlq_result sqlq_delivery_prepare(sqlq_delivery *d, sqlq_error *err);

/* Publish every change whose outcome is PENDING or TRANSIENT, once; set its outcome. Changes
 * with attempts > max_attempts go to poison with the last failure seen for them. Returns
 * SQLQ_OK when every change got an outcome (look at them), else the reason none could. */
SQLQ_NODISCARD sqlq_result sqlq_delivery_publish(sqlq_delivery *d, const sqlq_change *changes,
                                                 size_t n, sqlq_outcome *outcomes, sqlq_error *err);

typedef struct sqlq_delivery_counts {
    unsigned long long messages, poisoned, failed, transient;
} sqlq_delivery_counts;
void sqlq_delivery_counts_get(const sqlq_delivery *d, sqlq_delivery_counts *out);

#endif
