/* backoff: capped exponential back-off with jitter and a total time budget. Pure arithmetic. */
#ifndef SQLQ_BACKOFF_H
#define SQLQ_BACKOFF_H

#include "clock.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlq_backoff_policy {
    uint64_t initial_ms;   /* first delay before jitter (default 200) */
    uint64_t max_delay_ms; /* cap on one delay (default 10000) */
    uint64_t max_total_ms; /* give up once this much time has passed since start; 0 = never */
    unsigned max_retries;  /* give up after this many retries; 0 = unlimited */
    double jitter;         /* delay *= U(1 - jitter, 1 + jitter); default 0.2 */
} sqlq_backoff_policy;

/* Defaults for one HTTP or SQL request: 200 ms doubling to 10 s, at most 60 s in all. */
sqlq_backoff_policy sqlq_backoff_policy_default(void);
/* Waiting out an outage (every request fails: credentials, throttling, network): 1 s doubling
 * to 10 s, jitter 0.2, no budget of its own (the caller decides when to give up). */
sqlq_backoff_policy sqlq_backoff_policy_outage(void);

typedef struct sqlq_backoff {
    sqlq_backoff_policy policy;
    const sqlq_clock *clock;
    uint64_t started_ms;
    unsigned retries;
} sqlq_backoff;

void sqlq_backoff_init(sqlq_backoff *b, const sqlq_backoff_policy *policy, const sqlq_clock *clock);
void sqlq_backoff_reset(sqlq_backoff *b);

/* The delay before the next retry. server_hint_ms (from Retry-After / x-ms-retry-after-ms,
 * 0 = none) is honoured as a lower bound, still capped by what is left of the budget.
 * Returns false when the budget (retries or total time) is spent: stop retrying. */
bool sqlq_backoff_next(sqlq_backoff *b, uint64_t server_hint_ms, uint64_t *out_delay_ms);

/* Parse a server's retry hint. ms_header is x-ms-retry-after-ms (milliseconds);
 * retry_after is Retry-After: delta-seconds or an HTTP date (compared with now_epoch_s).
 * Either may be NULL. Returns 0 when neither holds a usable value. */
uint64_t sqlq_backoff_server_hint(const char *retry_after, const char *ms_header, int64_t now_epoch_s);

#endif
