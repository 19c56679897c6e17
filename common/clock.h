/* clock: the time, sleep and randomness seam every loop uses, so tests never wait. */
#ifndef SQLQ_CLOCK_H
#define SQLQ_CLOCK_H

#include "stop.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef struct sqlq_clock {
    uint64_t (*now_ms)(void *ctx);            /* monotonic milliseconds */
    bool (*sleep_ms)(void *ctx, uint64_t ms); /* false when interrupted by shutdown */
    double (*random)(void *ctx);              /* uniform in [0, 1) */
    void *ctx;
} sqlq_clock;

/* The real clock. Sleeps wake within ~10 ms once *stop_flag becomes non-zero (the flag a
 * signal handler sets); stop_flag may be NULL for sleeps nothing interrupts. */
sqlq_clock sqlq_clock_system(const sqlq_stop *stop_flag);

uint64_t sqlq_clock_now_ms(const sqlq_clock *c);
bool sqlq_clock_sleep_ms(const sqlq_clock *c, uint64_t ms);
double sqlq_clock_random(const sqlq_clock *c);

/* CLOCK_MONOTONIC now + ms, as pthread_cond_timedwait wants it (for condition variables
 * created with pthread_condattr_setclock(CLOCK_MONOTONIC)). */
struct timespec sqlq_clock_monotonic_after(uint64_t ms);

/* CLOCK_MONOTONIC in milliseconds: the real time between two moments, for code that measures
 * real waits (I/O deadlines, shutdown bounds, log throttles) rather than the injected clock. */
uint64_t sqlq_clock_mono_ms(void);

/* Wall-clock time in milliseconds since the epoch (for logs and message metadata). */
int64_t sqlq_clock_wall_ms(void);

#endif
