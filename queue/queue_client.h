/* queue_client: the Azure Storage Queue REST API over kept-alive libcurl connections. */
#ifndef SQLQ_QUEUE_CLIENT_H
#define SQLQ_QUEUE_CLIENT_H

#include "account.h"
#include "answer_watch.h"
#include "backoff.h"
#include "clock.h"
#include "codec.h"
#include "message.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>

/* The x-ms-version sent with every request: accepted by Azure and by Azurite 3.x. */
#define SQLQ_QUEUE_API_VERSION "2019-12-12"

/* /readyz of the bridge and the consumer turns 503 once requests to the queue service have
 * waited this long with none answered (a service that accepts connections but hangs), long
 * before a request's own timeout. */
#define SQLQ_QUEUE_SILENT_MS 3000u

/* false, with the reason /readyz gives, once w's requests have waited SQLQ_QUEUE_SILENT_MS
 * with none answered. */
bool sqlq_queue_answering(sqlq_answer_watch *w, char *reason, size_t reason_size);

typedef struct sqlq_queue_options {
    sqlq_encoding encoding;    /* how put encodes bodies; default base64 */
    long timeout_ms;           /* per HTTP request; default 30000 */
    sqlq_backoff_policy retry; /* transient failures (408/429/5xx, network) */
    const sqlq_clock *clock;   /* NULL = system clock that nothing interrupts */
    /* Optional: a request in flight is aborted once this returns true (sqlq_http_set_abort);
     * the call then fails at once with a permanent network error. */
    bool (*abort_now)(void *ctx);
    void *abort_ctx;
    bool abort_on_stop;        /* a stop (the clock's sleep refusing) also aborts a request on
                                * the wire, within ~100 ms (operator tools; daemons finish it) */
    /* Optional: told of every failed attempt about to be retried (before the wait), so a
     * caller can report an outage at its first failure, not when the retries are spent. */
    void (*on_retry)(void *ctx, const sqlq_error *err);
    void *retry_ctx;
    /* The retry budget is the client's, not each call's: once a transient failure has
     * outlasted it (an outage), every later call fails at once with that failure and sends
     * nothing (operator tools: one budget per command, docs/consumer.md "Outages"). */
    bool one_budget;
    /* Optional: told of every request's start and finish, so another thread can see a queue
     * service that accepts connections but leaves requests unanswered (/readyz). */
    sqlq_answer_watch *watch;
} sqlq_queue_options;

void sqlq_queue_options_default(sqlq_queue_options *o);

/* One client per thread (not thread-safe); the account must outlive it. */
typedef struct sqlq_queue_client sqlq_queue_client;

SQLQ_NODISCARD sqlq_result sqlq_queue_client_create(const sqlq_account *account,
                                                    const sqlq_queue_options *options,
                                                    sqlq_queue_client **out, sqlq_error *err);
void sqlq_queue_client_destroy(sqlq_queue_client *c);
sqlq_encoding sqlq_queue_client_encoding(const sqlq_queue_client *c);

/* Names: 3-63 chars, lowercase letters, digits and '-', no leading, trailing or double dash. */
bool sqlq_queue_name_valid(const char *name, sqlq_error *err);
/* "{queue}-poison"; false (no poison queue) when the name ends in -poison or would exceed 63. */
bool sqlq_queue_poison_name(const char *queue, char *out, size_t out_size);

/* Results: SQLQ_E_NOT_FOUND (QueueNotFound, MessageNotFound), SQLQ_E_POP_RECEIPT,
 * SQLQ_E_CONFLICT (409), SQLQ_E_TOO_LARGE, SQLQ_E_HTTP (other statuses), SQLQ_E_NETWORK,
 * SQLQ_E_CANCELLED (clock sleep interrupted). Transient failures are retried per options.retry
 * before they are returned; err->transient says whether a later retry may still succeed. */

SQLQ_NODISCARD sqlq_result sqlq_queue_create(sqlq_queue_client *c, const char *queue,
                                             bool *out_created, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_queue_delete(sqlq_queue_client *c, const char *queue, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_queue_exists(sqlq_queue_client *c, const char *queue,
                                             bool *out_exists, sqlq_error *err);

typedef struct sqlq_queue_props {
    long long approximate_count;
} sqlq_queue_props;
SQLQ_NODISCARD sqlq_result sqlq_queue_properties(sqlq_queue_client *c, const char *queue,
                                                 sqlq_queue_props *out, sqlq_error *err);
/* Names of the account's queues (optionally with a prefix); free with sqlq_queue_names_free. */
SQLQ_NODISCARD sqlq_result sqlq_queue_list(sqlq_queue_client *c, const char *prefix,
                                           char ***out_names, size_t *out_count, sqlq_error *err);
void sqlq_queue_names_free(char **names, size_t count);

typedef struct sqlq_put_options {
    int visibility_s;   /* delay before the message becomes visible; 0 = at once */
    long long ttl_s;    /* 0 = service default (7 days); -1 = never expires */
    bool verbatim;      /* body is already final MessageText: do not encode (moves, requeues) */
} sqlq_put_options;

/* Put one message; body is encoded per the client's encoding unless opt->verbatim.
 * out (optional) receives id, pop receipt, insertion/expiration/next-visible times. */
SQLQ_NODISCARD sqlq_result sqlq_queue_put(sqlq_queue_client *c, const char *queue,
                                          const void *body, size_t len,
                                          const sqlq_put_options *opt, sqlq_message *out,
                                          sqlq_error *err);

/* Put many messages with up to max_in_flight requests on the wire at once (curl multi,
 * connections reused). Each item gets its own result; the call returns SQLQ_OK once every item
 * has one, or SQLQ_E_CANCELLED. Transient failures are retried per item. A bad queue name or
 * options give SQLQ_E_INVALID, copied into every item too. max_in_flight is capped at 64. */
typedef struct sqlq_put_item {
    const void *body;
    size_t len;
    sqlq_result result; /* out */
    sqlq_error error;   /* out */
} sqlq_put_item;
SQLQ_NODISCARD sqlq_result sqlq_queue_put_many(sqlq_queue_client *c, const char *queue,
                                               sqlq_put_item *items, size_t count,
                                               size_t max_in_flight, const sqlq_put_options *opt);

/* Get 1..32 messages, hidden for visibility_s (1 s .. 7 days). */
SQLQ_NODISCARD sqlq_result sqlq_queue_get(sqlq_queue_client *c, const char *queue, int count,
                                          int visibility_s, sqlq_message_list *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_queue_peek(sqlq_queue_client *c, const char *queue, int count,
                                           sqlq_message_list *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_queue_delete_message(sqlq_queue_client *c, const char *queue,
                                                     const char *id, const char *pop_receipt,
                                                     sqlq_error *err);

/* Change visibility and optionally the body (new_body NULL = keep; encoded like put unless
 * verbatim). On success out_pop_receipt (malloc'd) holds the NEW pop receipt that every later
 * update or delete must use, and out_next_visible (optional) the new visibility time. */
SQLQ_NODISCARD sqlq_result sqlq_queue_update_message(sqlq_queue_client *c, const char *queue,
                                                     const char *id, const char *pop_receipt,
                                                     int visibility_s, const void *new_body,
                                                     size_t len, bool verbatim,
                                                     char **out_pop_receipt,
                                                     int64_t *out_next_visible, sqlq_error *err);
/* Delete every message; repeated while the service reports a timeout on a huge queue. */
SQLQ_NODISCARD sqlq_result sqlq_queue_clear(sqlq_queue_client *c, const char *queue, sqlq_error *err);

#endif
