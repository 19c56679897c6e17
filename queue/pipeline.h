/* pipeline: many Put Message calls in flight at once over kept-alive connections (one curl
 * multi handle); each item is encoded, sent and retried on its own. */
#ifndef SQLQ_PIPELINE_H
#define SQLQ_PIPELINE_H

#include "backoff.h"
#include "clock.h"
#include "codec.h"
#include "endpoint.h"
#include "http.h"
#include "queue_client.h"
#include "result.h"

typedef struct sqlq_pipeline sqlq_pipeline;

typedef struct sqlq_pipeline_job {
    const char *queue;
    const sqlq_put_options *opt; /* already checked */
    sqlq_encoding encoding;      /* SQLQ_ENCODING_PLAIN for verbatim text */
    const sqlq_backoff_policy *retry;
    const sqlq_clock *clock;     /* its sleep doubles as the shutdown check */
    void (*on_retry)(void *ctx, const sqlq_error *err); /* optional: sqlq_queue_options' */
    void *retry_ctx;
} sqlq_pipeline_job;

/* http and ep must outlive the pipeline. */
SQLQ_NODISCARD sqlq_result sqlq_pipeline_create(sqlq_http *http, sqlq_endpoint *ep,
                                                sqlq_pipeline **out, sqlq_error *err);
void sqlq_pipeline_destroy(sqlq_pipeline *p);

/* Puts every item with up to max_in_flight requests at once (1..SQLQ_HTTP_MAX_PARALLEL).
 * Every item gets a result; returns SQLQ_OK, or SQLQ_E_CANCELLED when the clock's sleep
 * reported shutdown (unfinished items then hold SQLQ_E_CANCELLED). */
SQLQ_NODISCARD sqlq_result sqlq_pipeline_put(sqlq_pipeline *p, const sqlq_pipeline_job *job,
                                             sqlq_put_item *items, size_t count,
                                             size_t max_in_flight);

/* Sets method and query of a Put Message call (vis and ttl hold the numbers as text). */
void sqlq_pipeline_put_call(sqlq_call *call, const sqlq_put_options *opt, char vis[24],
                            char ttl[24]);

#endif
