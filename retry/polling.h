/* polling: the Azure Functions (WebJobs) randomized exponential polling interval. */
#ifndef SQLQ_POLLING_H
#define SQLQ_POLLING_H

#include "clock.h"

#include <stdint.h>

/* delay after the n-th consecutive empty poll = min + U(0.8, 1.2) * 2^(n-1) * min,
 * capped at max (and staying at max); reset to min after any message.
 * With min = 100 ms: about 100 (reset), 200, 300, 500, 900 ms, 1.7, 3.3, 6.5 s ... 60 s. */
typedef struct sqlq_polling {
    uint64_t min_ms; /* 100 */
    uint64_t max_ms; /* 60000 (maxPollingInterval) */
    uint64_t current_ms;
    unsigned exponent;
    const sqlq_clock *clock;
} sqlq_polling;

#define SQLQ_POLLING_MIN_MS 100u
#define SQLQ_POLLING_MAX_MS 60000u

void sqlq_polling_init(sqlq_polling *p, uint64_t min_ms, uint64_t max_ms, const sqlq_clock *clock);
/* A poll found nothing (or failed transiently): the next, longer delay. */
uint64_t sqlq_polling_empty(sqlq_polling *p);
/* A poll found a message: back to the minimum; returns it. */
uint64_t sqlq_polling_reset(sqlq_polling *p);

#endif
