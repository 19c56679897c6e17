/* route_internal: what the files of one route share (route.c: the loop; route_settle.c:
 * releasing and giving back changes; route_prefetch.c: the helper that polls ahead;
 * route_queue.c: the queue service's health as the route sees it). Not for other modules. */
#ifndef SQLQ_ROUTE_INTERNAL_H
#define SQLQ_ROUTE_INTERNAL_H

#include "route.h"

#include "backoff.h"
#include "delivery.h"
#include "lease_renewer.h"
#include "outage.h"

#include <pthread.h>

struct sqlq_route {
    sqlq_route_env env;
    sqlq_route_config cfg;
    sqlq_capture_config ccfg;
    sqlq_clock clock;       /* every sleep ends at once on a stop request */
    sqlq_clock queue_clock; /* the queue client's: a stop request ends retry waits only */
    sqlq_backoff db_backoff;
    sqlq_db *db;
    sqlq_capture *cap;
    sqlq_queue_client *client;
    sqlq_delivery *delivery;
    sqlq_lease_renewer *renewer;
    /* Accepted by the queue, not yet released: released by the helper of the next batch while
     * that batch is on the wire (see prefetch), or at once when there is none. */
    sqlq_change_batch pend;
    unsigned long long changes, released, lost, renewals_seen;
    unsigned db_failures; /* consecutive failed database calls */
    uint64_t last_progress_ms, last_status_ms, last_advance_ms;
    uint64_t last_queue_ok_ms;  /* last time the queue service answered */
    bool db_down, queue_down;   /* reported to /readyz through env.health */
    sqlq_outage outage;         /* of the queue service, as puts and probes see it */
    sqlq_backoff probe_backoff; /* probes of an idle route while the queue service is down */
    uint64_t next_probe_ms;
    uint64_t db_down_since_ms; /* first failure of the database in a row; 0 = up */
    bool gave_up;              /* once: an outage outlasted once_outage_s */
    sqlq_error gave_up_err;
    sqlq_counter *m_published, *m_poisoned, *m_renewals;
    sqlq_counter *m_retry_queue, *m_retry_db, *m_lease_lost; /* sqlq_retries_total{reason} */
    sqlq_histogram *m_publish_s;
    sqlq_gauge *m_pending;
    sqlq_gauge *m_pending_age; /* sqlq_oldest_pending_change_age_seconds */
};

/* The next batch, polled on the route's connection by a helper thread while the current one is
 * on the wire: the database and the queue service work at the same time instead of in turn.
 * The current batch is settled only after the helper is joined (one user of the connection
 * at a time), and the next batch is published only after the current one is settled, so the
 * order of messages and the rule "publish, then release, then advance" are unchanged. */
typedef struct sqlq_route_prefetch {
    sqlq_route *r;
    const sqlq_change_batch *current; /* on the wire meanwhile */
    bool poll;                        /* poll the next batch (after releasing r->pend) */
    pthread_t thread;
    bool started;
    sqlq_result rc;
    sqlq_error err;
    sqlq_change_batch batch;
} sqlq_route_prefetch;

/* route.c */
bool sqlq_route_stopping(const sqlq_route *r);
/* Keep the health counters /readyz reads in step with this route's state. */
void sqlq_route_mark_down(sqlq_route *r, bool *flag, bool down, bool is_db);
void sqlq_route_log_error(const char *event, const sqlq_route *r, const sqlq_error *e);
/* After a failed database call: wait, reconnect, reopen the capture; false: give up. */
bool sqlq_route_recover_db(sqlq_route *r, const char *what, const sqlq_error *failed);

/* route_settle.c */
/* Release (or abandon) until the database takes it; giving up is safe (leases expire). */
void sqlq_route_settle_list(sqlq_route *r, const sqlq_change *list, size_t k, bool abandon,
                            bool count_attempt);
/* Release what the previous batch had accepted (kept in r->pend). */
void sqlq_route_release_pending(sqlq_route *r);
/* Release what a queue accepted, abandon (attempt counted) what was refused for good. */
void sqlq_route_settle(sqlq_route *r, const sqlq_change_batch *b, const sqlq_outcome *outcomes,
                       bool *done, bool defer);
/* Give back what is still undelivered without counting the attempt. */
void sqlq_route_abandon_rest(sqlq_route *r, const sqlq_change_batch *b, bool *done);

/* route_prefetch.c */
void sqlq_route_prefetch_start(sqlq_route_prefetch *p, const sqlq_change_batch *current, bool poll);
/* Join the helper; false when nothing usable came of it. */
bool sqlq_route_prefetch_join(sqlq_route_prefetch *p);
/* Lease renewal covers what is still undelivered of `b` and all of `next` (already leased). */
void sqlq_route_set_in_flight(sqlq_route *r, const sqlq_change_batch *b, const bool *done,
                              const sqlq_change_batch *next);

/* route_queue.c */
/* An idle route probes the queue service (creating a missing queue) so /readyz tells the truth. */
void sqlq_route_probe_queue(sqlq_route *r);
/* After a publish round: start, prolong or end the outage record. */
void sqlq_route_note_round(sqlq_route *r);

#endif
