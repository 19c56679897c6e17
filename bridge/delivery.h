/* delivery: one route's publishing side: turns polled changes into messages (envelope), puts
 * them with many requests in flight, sends exhausted or unsendable changes to {queue}-poison,
 * and says per change what happened so the route releases only what a queue accepted. */
#ifndef SQLQ_DELIVERY_H
#define SQLQ_DELIVERY_H

#include "capture.h"
#include "envelope.h"
#include "fault.h"
#include "queue_client.h"
#include "result.h"
#include "route_filter.h"

typedef enum {
    SQLQ_OUTCOME_PENDING = 0, /* not published yet */
    SQLQ_OUTCOME_ACCEPTED,    /* the main queue accepted its message: release */
    SQLQ_OUTCOME_POISONED,    /* the poison queue accepted it: release */
    SQLQ_OUTCOME_TRANSIENT,   /* a fault of the service, not of this change (outage: network,
                                 throttling, credentials, permissions, missing queue): retry
                                 with back-off, the attempt is not counted */
    SQLQ_OUTCOME_FAILED,      /* this message refused (too large, bad body): abandon, the
                                 attempt counts toward poison */
    SQLQ_OUTCOME_FILTERED     /* the route does not publish it (route_filter.h): release */
} sqlq_outcome;

/* How a put's result is treated (retry/fault decides): only refusals specific to one message
 * count; everything that would fail any message is an outage. A queue deleted meanwhile is
 * created again at once. */
sqlq_outcome sqlq_delivery_classify(sqlq_result r, const sqlq_error *err);

/* One queue of a route's shard set (message/shard.h says which change goes where), with the
 * client that reaches it: each lane's puts run on a thread of their own, so a client is never
 * shared between lanes. */
typedef struct sqlq_delivery_lane {
    const char *queue;
    sqlq_queue_client *client; /* borrowed; must outlive the delivery */
    const char *sas;           /* its account's SAS (NULL: a key or a token), for fault causes */
} sqlq_delivery_lane;

typedef struct sqlq_delivery_config {
    const char *queue; /* the one queue when nlanes is 0 */
    sqlq_envelope_config envelope;
    int max_in_flight;
    int max_attempts;
    long long message_ttl_s; /* main-queue messages: -1 never expire (poison copies: always -1) */
    const sqlq_route_filter *filter; /* optional: operations and columns published; borrowed */
    int initial_visibility_s; /* main-queue messages become visible this late (0: at once) */
    const sqlq_delivery_lane *lanes; /* a shard set of nlanes queues (copied); NULL: queue alone */
    size_t nlanes;
} sqlq_delivery_config;

typedef struct sqlq_delivery sqlq_delivery;

/* The client is borrowed (one per thread) and must outlive the delivery; with lanes it is not
 * used (each lane has its own). Lane 0 is put on the calling thread, the others on threads of
 * their own, all at once, each with up to max_in_flight requests on the wire. */
SQLQ_NODISCARD sqlq_result sqlq_delivery_create(sqlq_queue_client *client, const sqlq_delivery_config *cfg,
                                                sqlq_delivery **out, sqlq_error *err);
void sqlq_delivery_destroy(sqlq_delivery *d);

/* How many queues the changes are spread over (1 without a shard set), and lane i's. */
size_t sqlq_delivery_lane_count(const sqlq_delivery *d);
const sqlq_delivery_lane *sqlq_delivery_lane_get(const sqlq_delivery *d, size_t i);
/* Changes lane i's main queue accepted so far (for per-shard metrics). */
unsigned long long sqlq_delivery_lane_accepted(const sqlq_delivery *d, size_t i);
/* Create lane i's main queue if missing (as sqlq_delivery_prepare does for lane 0). */
SQLQ_NODISCARD sqlq_result sqlq_delivery_prepare_lane(sqlq_delivery *d, size_t i, sqlq_error *err);

/* Create the main queue if missing. Transient failures come back with err->transient. Called
 * only when the queue is known to be missing (an idle route's probe); a put that finds it
 * missing creates it too: no create permission is needed while the queue exists. */
SQLQ_NODISCARD sqlq_result sqlq_delivery_prepare(sqlq_delivery *d, sqlq_error *err);

/* Publish every change whose outcome is PENDING or TRANSIENT, once; set its outcome. Each
 * change goes to the lane of its key (sqlq_shard_of; the batch format packs per lane), its
 * poison copy to that lane's {queue}-poison. Changes of an operation the filter leaves out become FILTERED without a message. Changes
 * with attempts > max_attempts go to poison with the last failure seen for them. Returns
 * SQLQ_OK when every change got an outcome (look at them), else the reason none could. */
SQLQ_NODISCARD sqlq_result sqlq_delivery_publish(sqlq_delivery *d, const sqlq_change *changes,
                                                 size_t n, sqlq_outcome *outcomes, sqlq_error *err);

/* The service-wide fault the last publish round met, if any: what /readyz and the outage log
 * line report. */
typedef struct sqlq_delivery_fault {
    bool any;
    sqlq_fault_kind kind;
    char op[24];    /* "put message" or "create queue" */
    char queue[64]; /* the main queue or its poison queue */
    const char *sas; /* that queue's account SAS, when the lanes name one */
    sqlq_error error;
} sqlq_delivery_fault;
void sqlq_delivery_fault_get(const sqlq_delivery *d, sqlq_delivery_fault *out);
/* Its probable cause in one line (retry/fault), given the credential's SAS (NULL for a key;
 * the lane's own SAS, when it has one, wins);
 * the service's own answer is f->error. */
void sqlq_delivery_fault_describe(const sqlq_delivery_fault *f, const char *sas, char *out, size_t size);

typedef struct sqlq_delivery_counts {
    unsigned long long messages, poisoned, failed, transient, filtered;
} sqlq_delivery_counts;
void sqlq_delivery_counts_get(const sqlq_delivery *d, sqlq_delivery_counts *out);

#endif
