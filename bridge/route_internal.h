/* route_internal: what the files of one route share (route.c: start, recovery and the state
 * loop; route_state.c: the transition function; route_publish.c: the states of one batch;
 * route_settle.c: releasing and giving back changes; route_prefetch.c: the helper thread that
 * polls ahead; route_queue.c: the queue service's health as the route sees it). Not for other
 * modules. */
#ifndef SQLQ_ROUTE_INTERNAL_H
#define SQLQ_ROUTE_INTERNAL_H

#include "route.h"

#include "backoff.h"
#include "capture_backlog.h"
#include "delivery.h"
#include "lease_renewer.h"
#include "outage.h"
#include "route_state.h"
#include "wakeup.h"

#include <pthread.h>

/* The route's one helper thread, alive from start to stop: while a batch is on the wire it
 * releases what the previous batch had accepted (r->pend) and polls the next batch on the
 * route's connection, so the database and the queue service work at the same time. The
 * connection has one user at a time: between sqlq_route_helper_post and
 * sqlq_route_helper_wait the helper owns it (r->helper_owns_conn) and the route thread only
 * publishes. */
typedef struct sqlq_route_helper {
    struct sqlq_route *r;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running;                     /* else jobs run inline and nothing is polled ahead */
    bool job, quit;                   /* under mu */
    bool poll;                        /* the job: poll the next batch after releasing pend */
    const sqlq_change_batch *current; /* on the wire meanwhile */
    sqlq_result rc;
    sqlq_error err;
    sqlq_change_batch batch;
} sqlq_route_helper;

struct sqlq_route {
    sqlq_route_env env;
    sqlq_route_config cfg;
    sqlq_capture_config ccfg;
    sqlq_clock clock;       /* every sleep ends at once on a stop request */
    sqlq_clock queue_clock; /* the queue client's: a stop request ends retry waits only */
    sqlq_clock lane_clock;  /* the same for the clients of a shard set's other lanes */
    sqlq_backoff db_backoff;
    sqlq_db *db;
    sqlq_capture *cap;
    sqlq_queue_client *client; /* the route thread's; lane 0's in a shard set */
    sqlq_delivery *delivery;
    /* A shard set (route_shards.c): one lane per queue; lane 0 puts with client, the others
     * with lane_clients[i] on threads of their own (delivery.h). */
    sqlq_delivery_lane *lanes;
    sqlq_queue_client **lane_clients; /* nlanes entries, [0] NULL (it is client) */
    size_t nlanes;                    /* 0 without a shard set */
    size_t probe_lane;                /* an idle route probes one queue of the set at a time */
    sqlq_counter **m_shard_published; /* per lane: sqlq_shard_changes_published_total */
    sqlq_gauge **m_shard_rate;        /* per lane: sqlq_shard_publish_rate */
    unsigned long long *shard_seen;   /* per lane: accepted changes already counted */
    sqlq_gauge *m_rate;               /* sqlq_publish_rate{table,queue,instance} */
    unsigned long long rate_seen;     /* changes published at the last rate sample */
    uint64_t rate_ms;                 /* when that sample was taken */
    sqlq_route_filter filter; /* cfg's ops and columns, parsed */
    sqlq_lease_renewer *renewer;
    sqlq_wakeup *wakeup; /* NULL: the interval alone ends an idle wait */
    sqlq_route_state state;
    /* Accepted by the queue, not yet released: released by the helper while the next batch is
     * on the wire, or at once when there is none (IDLE, STOPPING). */
    sqlq_change_batch pend;
    /* Polled ahead by the helper (have_next: a poll answered, maybe with no change): the
     * next batch, taken by POLL only once the current one is settled. */
    sqlq_change_batch next;
    bool have_next;
    /* The batch of PUBLISH and BACKOFF: per change its outcome and whether it is done
     * (accepted, poisoned, refused or given back). */
    sqlq_change_batch batch;
    sqlq_outcome *outcomes;
    bool *done;
    unsigned round;
    bool probe;                /* this round sends one message: the queue service is down */
    sqlq_backoff publish_backoff;
    uint64_t batch_t0_ms;
    uint64_t last_poll_ms;     /* when the last poll began: the coalescing window counts from it */
    bool hinted;               /* a wake-up hint came while the last short batch was on the wire */
    uint64_t waited_ms, poll_took_ms, put_ms; /* of the batch, for the debug log: the wait before
                                               * its poll, the poll (0: polled ahead), the puts */
    bool idle_advanced;        /* advanced since the last batch: not again while idle */
    uint64_t held_back_ms;     /* the last poll's sqlq_change_batch.held_back_ms */
    sqlq_backoff idle_backoff; /* --once, idle while the queue service is down */
    bool fatal;                /* a permanent failure ends the run */
    sqlq_result start_rc;
    sqlq_route_helper helper;
    bool helper_owns_conn; /* route thread only: a job is posted and not yet waited for */
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
    sqlq_counter *m_wakeups;  /* hints of a change that made the route poll early (wakeup.h) */
    sqlq_counter *m_filtered; /* changes released unpublished: --ops (route_filter.h) */
    sqlq_counter *m_retry_queue, *m_retry_db, *m_lease_lost; /* sqlq_retries_total{reason} */
    sqlq_histogram *m_publish_s;
    sqlq_gauge *m_pending;
    sqlq_gauge *m_pending_age; /* sqlq_oldest_pending_change_age_seconds */
    /* route_stopped.c: why the capture cannot go on ("" while it can), the last such error,
     * and the backlog read from the change log meanwhile. */
    char stop_reason[32];
    sqlq_error stop_err;
    sqlq_backlog *backlog;
    sqlq_gauge *m_slot_retained, *m_slot_lag, *m_slot_lag_s; /* source logical: the slot's */
};

/* route.c */
bool sqlq_route_stopping(const sqlq_route *r);
/* A stop request, a permanent failure or --once giving up: the run ends. */
bool sqlq_route_ending(const sqlq_route *r);
/* Sleep the next back-off step (with --once, never past the outage budget of an outage that
 * began at since_ms, 0 = none); false when a stop request cut it short. */
bool sqlq_route_backoff_sleep(sqlq_route *r, sqlq_backoff *b, uint64_t since_ms);
/* The same during a queue outage, the database reachable: the metrics go on being refreshed
 * every 5 s through the sleep (a step is up to 10 s), so the backlog is seen growing. */
bool sqlq_route_outage_sleep(sqlq_route *r, sqlq_backoff *b, uint64_t since_ms);
/* With --once: the queue service's outage outlasted the budget. */
bool sqlq_route_queue_give_up(sqlq_route *r);
void sqlq_route_advance(sqlq_route *r);
/* Pending changes and lease renewals into the metrics, every 5 s (route thread, helper idle). */
void sqlq_route_refresh_metrics(sqlq_route *r, uint64_t now);
void sqlq_route_progress(sqlq_route *r, bool force);
/* Keep the health counters /readyz reads in step with this route's state. */
void sqlq_route_mark_down(sqlq_route *r, bool *flag, bool down, bool is_db);
void sqlq_route_log_error(const char *event, const sqlq_route *r, const sqlq_error *e);
/* route_recover.c. Connect, open the capture, start lease renewal and the wakeup; transient
 * failures are retried until they pass or a stop request comes. */
sqlq_result sqlq_route_start(sqlq_route *r, sqlq_error *err);
/* After a failed database call: wait, reconnect, reopen the capture; false: give up. */
bool sqlq_route_recover_db(sqlq_route *r, const char *what, const sqlq_error *failed);
/* Nothing more to poll now: wait for a hint of a change or the polling interval. */
void sqlq_route_wait_for_change(sqlq_route *r);

/* route_stopped.c. The capture opened at start: from now on its state must stay (a reopen,
 * and the renewer's, that finds it gone stops the route instead of starting afresh), and this
 * instance is present (capture_presence.h). */
void sqlq_route_opened(sqlq_route *r);
/* A permanent failure of the capture (ignored when transient): its reason in
 * sqlq_route_stopped{table,reason} and kept until sqlq_route_stop_clear (a poll succeeded). */
void sqlq_route_stop_note(sqlq_route *r, const sqlq_error *e);
void sqlq_route_stop_clear(sqlq_route *r);
bool sqlq_route_stopped(const sqlq_route *r);
/* The last permanent failure (what a poll without a capture reports). */
void sqlq_route_stop_error(const sqlq_route *r, sqlq_error *out);
/* While stopped: the backlog read from the change log; false when not stopped or unreadable. */
bool sqlq_route_stop_backlog(sqlq_route *r, double *pending, double *age_s);

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

/* route_publish.c: the states of one batch */
void sqlq_route_publish_begin(sqlq_route *r, sqlq_route_facts *f);  /* POLL got a batch */
void sqlq_route_publish_round(sqlq_route *r, sqlq_route_facts *f);  /* PUBLISH */
void sqlq_route_publish_wait(sqlq_route *r, sqlq_route_facts *f);   /* BACKOFF */
void sqlq_route_publish_settled(sqlq_route *r, sqlq_route_facts *f); /* SETTLED */

/* route_prefetch.c: the helper */
void sqlq_route_helper_start(sqlq_route *r);
/* Give the helper a job: release r->pend, then (poll) poll the next batch, while `current` is
 * on the wire. Without a helper thread the release runs now and nothing is polled. */
void sqlq_route_helper_post(sqlq_route *r, const sqlq_change_batch *current, bool poll);
/* Wait for the job; true when r->helper.batch holds a polled batch. */
bool sqlq_route_helper_wait(sqlq_route *r);
void sqlq_route_helper_stop(sqlq_route *r);
/* Lease renewal covers what is still undelivered of `b` and all of `next` (already leased). */
void sqlq_route_set_in_flight(sqlq_route *r, const sqlq_change_batch *b, const bool *done,
                              const sqlq_change_batch *next);

/* route_shards.c */
/* The shard set's lanes and clients (nothing without one); dc->lanes points at them. */
SQLQ_NODISCARD sqlq_result sqlq_route_shards_create(sqlq_route *r, const sqlq_queue_options *lane_opts,
                                                    sqlq_delivery_config *dc, sqlq_error *err);
void sqlq_route_shards_destroy(sqlq_route *r);
/* The account a route's lane i reaches (the bridge's unless the shard names its own). */
const sqlq_account *sqlq_route_shard_account(const sqlq_route *r, size_t i);
/* Per-shard counters and the rates of this instance (route-wide and per shard), refreshed
 * with the other metrics. */
void sqlq_route_shards_metrics(sqlq_route *r, uint64_t now);

/* route_queue.c */
/* An idle route probes the queue service (creating a missing queue) so /readyz tells the truth. */
void sqlq_route_probe_queue(sqlq_route *r);
/* After a publish round: start, prolong or end the outage record. */
void sqlq_route_note_round(sqlq_route *r);

#endif
