/* disposition: what the consumer does with a message: run it, delete it, release it for a
 * retry, or move it to the poison queue (the WebJobs rules, as pure functions). */
#ifndef SQLQ_DISPOSITION_H
#define SQLQ_DISPOSITION_H

#include "result.h"

#include <stdbool.h>

typedef enum {
    SQLQ_DISPOSE_RUN = 0, /* hand the message to the handler */
    SQLQ_DISPOSE_DELETE,  /* done: delete it */
    SQLQ_DISPOSE_RELEASE, /* failed: make it visible again after release_visibility_s */
    SQLQ_DISPOSE_POISON   /* copy its text to {queue}-poison, then delete it */
} sqlq_disposition;

typedef struct sqlq_disposition_policy {
    long max_dequeue_count;   /* 5: attempts before a failing message is poisoned */
    int visibility_timeout_s; /* 0: delay before a failed message is visible again */
    bool visibility_backoff;  /* grow that delay: visibility_timeout_s * 2^(dequeue_count - 1) */
    int visibility_max_s;     /* cap on the grown delay (default 3600) */
    bool has_poison_queue;    /* false when the queue name allows no -poison queue */
} sqlq_disposition_policy;

void sqlq_disposition_policy_default(sqlq_disposition_policy *p);

/* On receipt: a message already over the limit (dequeue_count > max) or one whose text cannot be
 * decoded goes straight to poison; otherwise RUN. Without a poison queue such a message is
 * released (it keeps coming back until its TTL ends: WebJobs does the same). */
sqlq_disposition sqlq_disposition_on_receive(const sqlq_disposition_policy *p, long dequeue_count,
                                             bool decodable);
/* After the handler: success deletes; a failure poisons once dequeue_count >= max, else releases. */
sqlq_disposition sqlq_disposition_on_result(const sqlq_disposition_policy *p, long dequeue_count,
                                            bool succeeded);
/* After the handler, given its result: SQLQ_E_REJECTED (the handler says no retry can succeed:
 * an --exec exit 65, an --http 422, a --sql constraint that fails for good) poisons at once;
 * SQLQ_E_UNAVAILABLE (the handler's target is down) releases, whatever the count; anything else
 * as sqlq_disposition_on_result. dequeue_count: the attempts that count (the consumer's
 * `attempt`: DequeueCount less the dequeues given back without an attempt). */
sqlq_disposition sqlq_disposition_on_handler(const sqlq_disposition_policy *p, long dequeue_count,
                                             sqlq_result handler_result);
/* The visibility timeout (seconds) for releasing a message that failed on this attempt. */
int sqlq_disposition_release_visibility(const sqlq_disposition_policy *p, long dequeue_count);

const char *sqlq_disposition_name(sqlq_disposition d);

/* A failed queue request whose cause would hit every message alike: an outage of the service
 * or the credential, never a reason to count an attempt or poison: 401/403, 408/429/5xx (after
 * the request's retries), 404 QueueNotFound, network, DNS and TLS failures. */
bool sqlq_disposition_is_outage(const sqlq_error *e);
/* The probable cause of such a failure in a few words, for the log and /readyz. */
const char *sqlq_disposition_outage_cause(const sqlq_error *e);

#endif
