/* consumer_internal: the runtime's shared state, split between consumer.c (polling, start and
 * shutdown) and consumer_worker.c (handlers, renewal, delete / release / poison). */
#ifndef SQLQ_CONSUMER_INTERNAL_H
#define SQLQ_CONSUMER_INTERNAL_H

#include "abandoned.h"
#include "buf.h"
#include "consumer.h"
#include "disposition.h"
#include "renewal.h"

#include <pthread.h>

/* A message a worker is running. The renewal thread and the worker share it under `lock`; the
 * renewal thread holds the lock through an Update request so the worker, when it finishes,
 * always reads the latest pop receipt. */
typedef struct consumer_slot {
    pthread_mutex_t lock;
    bool active; /* handler running: renewal applies */
    const sqlq_message *msg;
    char *pop_receipt; /* latest; owned */
    sqlq_renewal renewal;
    uint64_t deadline_ms; /* 0 = none */
    bool timed_out;       /* deadline passed: renewals stopped, cancel set */
    atomic_int cancel;
} consumer_slot;

typedef struct consumer_worker {
    struct sqlq_consumer *c;
    size_t index;
    pthread_t thread;
    bool started;
    void *conn;
    void *hctx;
    bool busy; /* under c->mu: running a message */
    bool exited;
    sqlq_result open_result;
    sqlq_error open_err;
    consumer_slot slot;
    long discounted; /* the running message's dequeues given back earlier (abandoned.h) */
} consumer_worker;

typedef struct consumer_counters {
    atomic_ullong poll_failing;    /* consecutive failed polls, 0 after any answer */
    atomic_ullong service_failing; /* consecutive outage failures of delete/update/put */
    atomic_ullong rejected_replies;
    atomic_ullong held;       /* messages held while the handler's target is unavailable */
    atomic_ullong given_back; /* dequeues given back without an attempt */
    atomic_ullong received, succeeded, failed, released, poisoned, undecodable, renewals,
        renewal_failures, ownership_lost, delete_failures, timeouts, polls, empty_polls, poll_errors, in_flight,
        backoff_ms;
    /* the same, in the metrics registry when one was given (NULL handles do nothing) */
    sqlq_counter *m_consumed, *m_failed, *m_poisoned, *m_renewals;
    sqlq_gauge *m_backoff, *m_unavailable, *m_held;
    sqlq_histogram *m_handler_seconds;
} consumer_counters;

struct sqlq_consumer {
    char queue[64];
    char poison[64];
    sqlq_consumer_options opt;
    sqlq_handler handler;
    sqlq_clock sysclock;
    const sqlq_clock *clock;
    sqlq_consumer_transport transport;
    bool own_transport;
    sqlq_disposition_policy policy;

    size_t nworkers;
    consumer_worker *workers;

    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* workers: pending work or closing */
    pthread_cond_t idle_cv; /* poller: a message finished, a worker became ready */
    sqlq_message *pending;  /* ring of received messages not yet started */
    size_t pending_head, pending_count, pending_cap;
    size_t in_flight; /* pending + running */
    size_t ready;     /* workers that finished opening */
    bool closing;     /* workers exit once the ring is empty */

    pthread_t renew_thread;
    bool renew_started;
    void *renew_conn;
    pthread_mutex_t renew_mu;
    pthread_cond_t renew_cv;
    bool renew_stop, renew_kick;
    uint64_t renew_wake_ms; /* when the renewal thread wakes next (clock time), under renew_mu */

    consumer_counters n;

    /* Bounded shutdown: requests still running at io_deadline_ms (CLOCK_MONOTONIC) are aborted;
     * the polling connection's also once a stop is requested while it polls. */
    _Atomic uint64_t io_deadline_ms;
    atomic_bool polling_over;
    /* Why a drain (exit_when_empty) ended early: a poll that failed. */
    sqlq_result drain_result;
    sqlq_error drain_err;
    /* Outage log, rate-limited */
    pthread_mutex_t outage_mu;
    uint64_t outage_logged_ms;
    char outage_cause[192];
    sqlq_error outage_err; /* the latest outage failure */
    char *sas; /* the account's SAS (NULL: a key), to name its expiry when that is the cause */
    /* The handler's target (consumer_hold.c): down while handlers answer SQLQ_E_UNAVAILABLE. */
    pthread_mutex_t target_mu;
    _Atomic uint64_t target_down_since; /* CLOCK_MONOTONIC ms; 0 = it answers */
    uint64_t target_logged_ms;          /* under target_mu */
    char target_cause[512];             /* under target_mu: the latest reason */
    char target_logged[512];            /* under target_mu: the reason last logged */
    sqlq_error target_err;              /* under target_mu */
    atomic_uint target_epoch;  /* bumped when it answers again: held messages retry at once */
    atomic_bool abandon_held;  /* a drain gave up on the target: held messages go back */
    sqlq_drain_end drain_end;
    sqlq_abandoned *abandoned; /* NULL: dequeues given back are not recorded */
};

/* consumer.c */
bool sqlq_consumer_stop_requested(const struct sqlq_consumer *c);

/* consumer_poll.c: poll until stopped, max_messages is reached or a drain is over. */
void sqlq_consumer_poll_loop(struct sqlq_consumer *c, void *conn);

/* consumer_transport.c: make the Azure transport's clients abort their requests as told. */
void sqlq_consumer_transport_azure_abort(sqlq_consumer_transport *t, bool (*poll_abort)(void *),
                                         bool (*io_abort)(void *), void *ctx);

/* consumer_hold.c: a message whose handler found its target unavailable. */
/* Hold the message (its slot stays active: renewal goes on) and run the handler again with
 * back-off until it answers other than SQLQ_E_UNAVAILABLE; returns that result. When the hold
 * ends without one (a stop, a cancellation, a drain that gave up, ownership lost) it returns
 * SQLQ_E_UNAVAILABLE with *out_give_back true unless ownership was lost. */
sqlq_result sqlq_consumer_hold(consumer_worker *w, const sqlq_message *m, const sqlq_buf *body,
                               sqlq_error *err, bool *out_give_back);
/* A handler answered SQLQ_E_UNAVAILABLE (target_failed) or anything else (target_ok): the
 * outage starts or goes on (logged at once, then at most every 30 s or when the reason
 * changes), or ends (logged, held messages retry at once). */
void sqlq_consumer_target_failed(struct sqlq_consumer *c, const sqlq_error *err);
void sqlq_consumer_target_ok(struct sqlq_consumer *c);
/* How long the target has been unavailable (0 while it answers). */
uint64_t sqlq_consumer_target_down_ms(const struct sqlq_consumer *c);
/* Give a dequeue back without an attempt: record it (abandoned.h), then make the message
 * visible again at once. why: for the log line. */
void sqlq_consumer_give_back(struct sqlq_consumer *c, void *conn, const sqlq_message *m,
                             const char *receipt, const char *why);

/* consumer_worker.c */
/* Run the handler once for m (body decoded), with the slot's deadline and cancel flag. */
sqlq_result sqlq_consumer_run_handler(consumer_worker *w, const sqlq_message *m,
                                      const sqlq_buf *body, sqlq_error *err);
/* Why requests fail in an outage: disposition's cause of the error, or an account SAS past its
 * expiry named as such (as the bridge and config check name it). Into buf; returns buf. */
const char *sqlq_consumer_outage_cause(const struct sqlq_consumer *c, const sqlq_error *err,
                                       char *buf, size_t size);
/* A delete/update/put failed (note_failure) or worked (note_ok): an outage is logged at most
 * every 30 s, makes the poller back off and /readyz report it; it never counts an attempt. */
void sqlq_consumer_note_failure(struct sqlq_consumer *c, const char *op, const sqlq_error *err);
void sqlq_consumer_note_ok(struct sqlq_consumer *c);
void *sqlq_consumer_worker_main(void *arg);
void *sqlq_consumer_renew_main(void *arg);
/* Wake the renewal thread if due_ms is before its next planned wake-up. */
void sqlq_consumer_kick_renewal(struct sqlq_consumer *c, uint64_t due_ms);
/* Wait on cv until ms of real time pass (or a signal). */
void sqlq_consumer_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t ms);
int sqlq_consumer_cond_init(pthread_cond_t *cv);

#endif
