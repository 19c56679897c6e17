/* consumer: the queue-trigger runtime (Azure Functions / WebJobs compatible): poll in batches,
 * run a handler per message on a worker pool, renew visibility while it runs, then delete,
 * release for a retry, or move the message to {queue}-poison. */
#ifndef SQLQ_CONSUMER_H
#define SQLQ_CONSUMER_H

#include "account.h"
#include "clock.h"
#include "codec.h"
#include "message.h"
#include "metrics.h"
#include "queue_client.h"
#include "result.h"
#include "stop.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One message handed to a handler. Everything it points to lives until the handler returns. */
typedef struct sqlq_received {
    const char *queue;
    const char *message_id;
    const char *body; /* decoded bytes, NUL-terminated (use body_len: binary bodies may hold NUL) */
    size_t body_len;
    const char *text; /* MessageText as stored (base64 when the encoding is base64) */
    size_t text_len;
    long dequeue_count;      /* the service's DequeueCount: 1 on the first delivery */
    long attempt; /* what counts toward poison: dequeue_count less the dequeues this consumer
                   * gave back without an attempt (a shutdown, a drain in an outage: abandoned.h) */
    int64_t insertion_time;  /* seconds since the epoch, UTC */
    int64_t expiration_time; /* seconds since the epoch, UTC */
    uint64_t deadline_ms;    /* per-message timeout on `clock`; 0 = none */
    const sqlq_clock *clock;
    const atomic_int *cancel; /* non-zero once the deadline passed or shutdown ran out of time */
} sqlq_received;

/* The handler should give up soon (and report a failure) when this turns true. */
bool sqlq_received_cancelled(const sqlq_received *d);
/* Milliseconds until the deadline: UINT64_MAX without one, 0 once it passed. */
uint64_t sqlq_received_remaining_ms(const sqlq_received *d);
/* insertion_time as ISO 8601 UTC ("2024-05-01T12:00:00Z"). */
void sqlq_received_insertion_iso(const sqlq_received *d, char *out, size_t out_size);

/* Process one message: SQLQ_OK = success (the message is deleted); anything else is a failure
 * whose reason (err->message) is logged and, on the last attempt, logged with the poisoning.
 * SQLQ_E_REJECTED: no retry can succeed (poison now). SQLQ_E_UNAVAILABLE: the handler's target
 * is down (an outage, no fault of this message): the message is held (kept invisible), the
 * handler is called again for it with back-off until it answers otherwise, and nothing of this
 * counts toward poison; meanwhile no further messages are taken. */
typedef sqlq_result (*sqlq_handler_fn)(void *worker_ctx, const sqlq_received *d, sqlq_error *err);

typedef struct sqlq_handler {
    sqlq_handler_fn handle;
    /* Optional per-worker state (a database connection, an HTTP handle): open runs once in each
     * worker thread before its first message and its result is what handle and close get.
     * Without open, handle gets ctx (and must then be thread-safe). */
    sqlq_result (*open)(void *ctx, void **out_worker_ctx, sqlq_error *err);
    void (*close)(void *worker_ctx);
    void *ctx;
} sqlq_handler;

/* What the runtime did on one poll (for metrics, debug logs and tests). */
typedef struct sqlq_poll_event {
    uint64_t at_ms;         /* clock time the Get Messages request was sent */
    int received;           /* messages returned */
    sqlq_result result;     /* of the request */
    uint64_t next_delay_ms; /* sleep before the next poll: 0 after messages */
} sqlq_poll_event;

/* Test seam: the queue operations the runtime performs, one connection per thread. NULL in the
 * options means the real REST client (sqlq_queue_client) on the given account. */
typedef enum { SQLQ_CONN_POLL = 0, SQLQ_CONN_WORKER, SQLQ_CONN_RENEW } sqlq_conn_role;
typedef struct sqlq_consumer_transport {
    sqlq_result (*open)(void *ctx, sqlq_conn_role role, void **out_conn, sqlq_error *err);
    void (*close)(void *conn);
    sqlq_result (*get)(void *conn, const char *queue, int count, int visibility_s,
                       sqlq_message_list *out, sqlq_error *err);
    sqlq_result (*update)(void *conn, const char *queue, const char *id, const char *pop_receipt,
                          int visibility_s, char **out_pop_receipt, sqlq_error *err);
    sqlq_result (*remove)(void *conn, const char *queue, const char *id, const char *pop_receipt,
                          sqlq_error *err);
    /* Put text verbatim (no encoding); SQLQ_E_NOT_FOUND when the queue does not exist. */
    sqlq_result (*put)(void *conn, const char *queue, const char *text, size_t len,
                       sqlq_error *err);
    sqlq_result (*create)(void *conn, const char *queue, sqlq_error *err);
    void *ctx;
} sqlq_consumer_transport;

typedef struct sqlq_consumer_options {
    int batch_size;                    /* messages per Get (16; 1..32) */
    int new_batch_threshold;           /* get the next batch when fewer are in flight (8) */
    uint64_t min_polling_ms;           /* 100 */
    uint64_t max_polling_ms;           /* maxPollingInterval: 60000 */
    int lease_s;                       /* visibility on Get, renewed at half while running (600) */
    int visibility_timeout_s;          /* visibility after a failure (0 = visible again at once) */
    bool visibility_backoff;           /* visibility_timeout_s * 2^(dequeue_count - 1) */
    int visibility_max_s;              /* cap on that growth (3600) */
    long max_dequeue_count;            /* attempts before poison (5) */
    uint64_t message_timeout_ms;       /* per-message timeout, 0 = none */
    uint64_t shutdown_timeout_ms;      /* how long running handlers may finish after stop (30000) */
    sqlq_encoding encoding;            /* how MessageText is decoded for the handler (base64) */
    bool poison_envelope; /* put a JSON body into {queue}-poison inside the sqlq_poison envelope
                           * with the reason (poison_envelope.h); false: the same MessageText */
    unsigned long long max_messages;   /* stop after this many finished messages; 0 = never */
    bool exit_when_empty; /* stop at the first poll the service answers with no message while
                           * nothing is in flight; a poll that fails (after its retries) ends
                           * the run with that error instead */
    const sqlq_stop *stop; /* graceful stop when it becomes non-zero */
    const sqlq_clock *clock;           /* NULL = system clock (its sleeps wake on *stop) */
    void (*on_poll)(void *ctx, const sqlq_poll_event *ev); /* optional, on the polling thread */
    void *on_poll_ctx;
    const sqlq_consumer_transport *transport; /* NULL = Azure (the usual case) */
    sqlq_metrics *metrics; /* optional: sqlq_messages_*_total, sqlq_visibility_renewals_total,
                            * sqlq_poll_backoff_ms, sqlq_handler_duration_seconds,
                            * sqlq_handler_unavailable, sqlq_messages_held {queue} */
    /* The file recording dequeues given back without an attempt (abandoned.h), so that they do
     * not count toward poison; NULL = no record: they count, as in Azure Functions. */
    const char *abandoned_path;
} sqlq_consumer_options;

void sqlq_consumer_options_default(sqlq_consumer_options *o);

/* Counters, readable from any thread while the consumer runs (metrics endpoint). */
typedef struct sqlq_consumer_stats {
    unsigned long long received;    /* messages taken from the queue */
    unsigned long long succeeded;   /* handler succeeded and the message was deleted */
    unsigned long long failed;      /* handler failures (each attempt) */
    unsigned long long released;    /* failures made visible again for a retry */
    unsigned long long poisoned;    /* moved to {queue}-poison */
    unsigned long long undecodable; /* text that the encoding could not decode (also poisoned) */
    unsigned long long renewals;    /* successful visibility renewals */
    unsigned long long renewal_failures;
    unsigned long long ownership_lost; /* pop receipt no longer valid: not deleted by us */
    unsigned long long delete_failures; /* handled, but the delete failed: delivered again */
    unsigned long long timeouts;       /* messages that ran past message_timeout */
    unsigned long long polls, empty_polls, poll_errors;
    unsigned long long poll_failing; /* consecutive failed polls (0 once the queue answers) */
    unsigned long long service_failing;  /* consecutive delete/update/put failures that are an
                                          * outage (credential, throttling, network); 0 after
                                          * one works */
    unsigned long long rejected_replies; /* Get replies refused as a service error (more
                                          * messages than asked for, malformed fields) */
    unsigned long long held; /* messages held while the handler's target is unavailable */
    unsigned long long target_down_ms; /* how long the handler's target has been unavailable
                                        * (0 while it answers) */
    unsigned long long given_back; /* dequeues given back without an attempt (stop, drain) */
    unsigned long long in_flight;  /* taken and not finished */
    unsigned long long backoff_ms; /* current polling delay (0 right after messages) */
} sqlq_consumer_stats;

typedef struct sqlq_consumer sqlq_consumer;

/* Why sqlq_consumer_run returned an error in a drain (exit_when_empty), for the operator. */
typedef enum {
    SQLQ_DRAIN_FINISHED = 0,     /* no drain error */
    SQLQ_DRAIN_QUEUE_UNREADABLE, /* a poll failed after its retries: not known to be empty */
    SQLQ_DRAIN_NOT_SETTLED,      /* the last deletes or releases failed with an outage */
    SQLQ_DRAIN_TARGET_DOWN       /* the handler's target stayed unavailable
                                  * SQLQ_CONSUMER_DRAIN_TARGET_MS: its messages went back */
} sqlq_drain_end;
#define SQLQ_CONSUMER_DRAIN_TARGET_MS 10000u

/* queue must be a valid queue name. account and queue_options may be NULL with a transport.
 * queue_options supplies timeouts and retry policy of the REST clients the runtime creates. */
SQLQ_NODISCARD sqlq_result sqlq_consumer_create(const sqlq_account *account,
                                                const sqlq_queue_options *queue_options,
                                                const char *queue,
                                                const sqlq_consumer_options *options,
                                                const sqlq_handler *handler, sqlq_consumer **out,
                                                sqlq_error *err);
/* Run until *options.stop is set (or max_messages / exit_when_empty), then stop taking messages,
 * release the ones not started and the ones held in an outage of the handler's target (at
 * once: visible again, their dequeue recorded as given back), and wait up to shutdown_timeout
 * for running handlers (then cancel them, release theirs the same way, and wait
 * SQLQ_CONSUMER_CANCEL_GRACE_MS more). Requests to the queue service do
 * not hold this up: the poll in flight is aborted at the stop, any other request still running
 * at shutdown_timeout + SQLQ_CONSUMER_CANCEL_GRACE_MS - 1 s. Transient faults never end the run;
 * SQLQ_OK after a clean stop, SQLQ_E_TIMEOUT when a handler ignored cancellation (its thread is
 * left running: exit the process, do not destroy the consumer), in a drain (exit_when_empty)
 * the error that ended it (sqlq_consumer_drain_end says which kind: the failed poll's, the
 * outage's when its last deletes failed, the handler's SQLQ_E_UNAVAILABLE), or the error that
 * made start-up impossible (a handler's open failed, no connection could be created). */
#define SQLQ_CONSUMER_CANCEL_GRACE_MS 5000u
SQLQ_NODISCARD sqlq_result sqlq_consumer_run(sqlq_consumer *c, sqlq_error *err);
void sqlq_consumer_get_stats(const sqlq_consumer *c, sqlq_consumer_stats *out);
/* True while the handler's target is unavailable, with the latest reason (for /readyz). */
bool sqlq_consumer_target_down(const sqlq_consumer *c, char *cause, size_t cause_size);
/* After sqlq_consumer_run: why a drain ended with an error. */
sqlq_drain_end sqlq_consumer_drain_end(const sqlq_consumer *c);
void sqlq_consumer_destroy(sqlq_consumer *c);

/* The transport over real REST clients (what the consumer uses when options.transport is NULL):
 * polling connections retry on `interruptible` (so a stop ends their waits), workers and renewals
 * on a clock nothing interrupts, with short retry budgets (renewal has its own schedule).
 * Free with sqlq_consumer_transport_free. */
SQLQ_NODISCARD sqlq_result sqlq_consumer_transport_azure(const sqlq_account *account,
                                                         const sqlq_queue_options *queue_options,
                                                         const sqlq_clock *interruptible,
                                                         int lease_s, sqlq_consumer_transport *out,
                                                         sqlq_error *err);
void sqlq_consumer_transport_free(sqlq_consumer_transport *t);

#endif
