#include "clock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

uint64_t sqlq_clock_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t system_now_ms(void *ctx)
{
    (void)ctx;
    return sqlq_clock_mono_ms();
}

static bool system_sleep_ms(void *ctx, uint64_t ms)
{
    const sqlq_stop *stop = ctx;
    uint64_t end = system_now_ms(NULL) + ms;
    for (;;) {
        if (stop && *stop)
            return false;
        uint64_t now = system_now_ms(NULL);
        if (now >= end)
            return true;
        uint64_t slice = end - now;
        if (stop && slice > 10)
            slice = 10;
        struct timespec ts = {(time_t)(slice / 1000u), (long)(slice % 1000u) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            if (stop && *stop)
                return false;
        }
    }
}

static double system_random(void *ctx)
{
    (void)ctx;
    static _Thread_local unsigned short seed[3];
    static _Thread_local bool seeded;
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed[0] = (unsigned short)ts.tv_nsec;
        seed[1] = (unsigned short)getpid();
        seed[2] = (unsigned short)((uintptr_t)&seeded >> 4);
        seeded = true;
    }
    return erand48(seed);
}

sqlq_clock sqlq_clock_system(const sqlq_stop *stop_flag)
{
    sqlq_clock c = {system_now_ms, system_sleep_ms, system_random, (void *)(uintptr_t)stop_flag};
    return c;
}

uint64_t sqlq_clock_now_ms(const sqlq_clock *c) { return c->now_ms(c->ctx); }
bool sqlq_clock_sleep_ms(const sqlq_clock *c, uint64_t ms) { return c->sleep_ms(c->ctx, ms); }
double sqlq_clock_random(const sqlq_clock *c) { return c->random(c->ctx); }

int64_t sqlq_clock_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec sqlq_clock_monotonic_after(uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000u);
    ts.tv_nsec += (long)(ms % 1000u) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}
