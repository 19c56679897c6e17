/* fake_clock: a sqlq_clock for unit tests: time moves only when the code sleeps, and the
 * random source replays a script, so back-off sequences are exact and nothing waits. */
#ifndef SQLQ_FAKE_CLOCK_H
#define SQLQ_FAKE_CLOCK_H

#include "clock.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fake_clock {
    _Atomic uint64_t now_ms; /* read by other threads (the consumer's renewer) while one sleeps */
    uint64_t slept[256]; /* every sleep, in order */
    size_t nslept;
    const double *randoms; /* replayed cyclically; NULL = always 0.5 */
    size_t nrandoms;
    size_t next_random;
    uint64_t interrupt_after_ms; /* a sleep crossing this time is interrupted; 0 = never */
} fake_clock;

static inline uint64_t fake_clock_now(void *ctx) { return ((fake_clock *)ctx)->now_ms; }

static inline bool fake_clock_sleep(void *ctx, uint64_t ms)
{
    fake_clock *f = ctx;
    if (f->nslept < sizeof(f->slept) / sizeof(f->slept[0]))
        f->slept[f->nslept++] = ms;
    if (f->interrupt_after_ms && f->now_ms + ms >= f->interrupt_after_ms) {
        f->now_ms = f->interrupt_after_ms;
        return false;
    }
    f->now_ms += ms;
    return true;
}

static inline double fake_clock_random(void *ctx)
{
    fake_clock *f = ctx;
    if (!f->randoms || f->nrandoms == 0)
        return 0.5;
    return f->randoms[f->next_random++ % f->nrandoms];
}

static inline sqlq_clock fake_clock_make(fake_clock *f)
{
    sqlq_clock c = {fake_clock_now, fake_clock_sleep, fake_clock_random, f};
    return c;
}

#endif
