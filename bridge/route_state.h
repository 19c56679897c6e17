/* route_state: the states of one route and the one function that says which comes next, as
 * curl's multi.c does with mstate. The loop (route.c) runs a state's work, which reports what
 * it found out as facts; sqlq_route_transition turns state + facts into the next state. Pure:
 * no I/O, so every transition is unit-tested. */
#ifndef SQLQ_ROUTE_STATE_H
#define SQLQ_ROUTE_STATE_H

#include <stdbool.h>

typedef enum sqlq_route_state {
    SQLQ_ROUTE_START,    /* connect, open the capture, start lease renewal and the helper */
    SQLQ_ROUTE_POLL,     /* take the next batch: the one the helper polled ahead, or poll now */
    SQLQ_ROUTE_IDLE,     /* nothing new: release what is pending, advance, probe the queue, wait */
    SQLQ_ROUTE_PUBLISH,  /* one round of puts for the changes of the batch not yet done */
    SQLQ_ROUTE_BACKOFF,  /* some not done: wait (outage back-off), or give them back */
    SQLQ_ROUTE_SETTLED,  /* every change of the batch done: advance, log progress, pause */
    SQLQ_ROUTE_STOPPING, /* give back what was polled ahead, release what is pending */
    SQLQ_ROUTE_DONE,
    SQLQ_ROUTE_NSTATES
} sqlq_route_state;

/* What a state's work found out: the only input of a transition. */
typedef struct sqlq_route_facts {
    bool end;        /* a stop request, a permanent failure, or --once gave up */
    bool got_batch;  /* POLL: a batch came (false: the poll failed, recovery was tried) */
    bool empty;      /* POLL: the batch holds no change */
    bool drained;    /* IDLE with --once: nothing left and the queue service answers */
    bool batch_done; /* PUBLISH, BACKOFF: every change accepted, poisoned, refused or given back */
} sqlq_route_facts;

/* START → POLL | DONE; POLL → PUBLISH | IDLE | POLL | STOPPING; IDLE → POLL | STOPPING;
 * PUBLISH → SETTLED | BACKOFF; BACKOFF → PUBLISH | SETTLED; SETTLED → POLL | STOPPING;
 * STOPPING → DONE. A batch once polled is always settled (never left mid-way by a stop:
 * what was not delivered is given back in BACKOFF), so STOPPING never holds one. */
sqlq_route_state sqlq_route_transition(sqlq_route_state s, const sqlq_route_facts *f);

/* "start", "poll", ... for logs. */
const char *sqlq_route_state_name(sqlq_route_state s);

#endif
