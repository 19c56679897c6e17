#include "polling.h"

void sqlq_polling_init(sqlq_polling *p, uint64_t min_ms, uint64_t max_ms, const sqlq_clock *clock)
{
    p->min_ms = min_ms ? min_ms : SQLQ_POLLING_MIN_MS;
    p->max_ms = max_ms >= p->min_ms ? max_ms : p->min_ms;
    p->clock = clock;
    sqlq_polling_reset(p);
}

uint64_t sqlq_polling_reset(sqlq_polling *p)
{
    p->current_ms = p->min_ms;
    p->exponent = 1;
    return p->current_ms;
}

uint64_t sqlq_polling_empty(sqlq_polling *p)
{
    /* WebJobs RandomizedExponentialBackoffStrategy: once at the maximum, stay there. */
    if (p->current_ms >= p->max_ms)
        return p->max_ms;
    double factor = 0.8 + 0.4 * sqlq_clock_random(p->clock);
    /* 2^(n-1) * min, uncapped: capping the step at the maximum (as this once did) let
     * 100 + 0.8 * step fall under the maximum again and again, where WebJobs reaches it.
     * The exponent only grows while the delay is under the maximum, so this stays small. */
    double step = (double)p->min_ms;
    for (unsigned i = 1; i < p->exponent; i++)
        step *= 2.0;
    double next = (double)p->min_ms + factor * step;
    if (next < (double)p->max_ms) {
        p->current_ms = (uint64_t)next;
        p->exponent++;
    } else {
        p->current_ms = p->max_ms;
    }
    return p->current_ms;
}
