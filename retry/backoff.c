#include "backoff.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

sqlq_backoff_policy sqlq_backoff_policy_default(void)
{
    sqlq_backoff_policy p = {
        .initial_ms = 200, .max_delay_ms = 10000, .max_total_ms = 60000, .max_retries = 0, .jitter = 0.2};
    return p;
}

sqlq_backoff_policy sqlq_backoff_policy_outage(void)
{
    sqlq_backoff_policy p = {
        .initial_ms = 1000, .max_delay_ms = 10000, .max_total_ms = 0, .max_retries = 0, .jitter = 0.2};
    return p;
}

void sqlq_backoff_init(sqlq_backoff *b, const sqlq_backoff_policy *policy, const sqlq_clock *clock)
{
    b->policy = policy ? *policy : sqlq_backoff_policy_default();
    if (b->policy.initial_ms == 0)
        b->policy.initial_ms = 1;
    if (b->policy.max_delay_ms < b->policy.initial_ms)
        b->policy.max_delay_ms = b->policy.initial_ms;
    if (b->policy.jitter < 0)
        b->policy.jitter = 0;
    if (b->policy.jitter > 1)
        b->policy.jitter = 1;
    b->clock = clock;
    b->started_ms = sqlq_clock_now_ms(clock);
    b->retries = 0;
}

void sqlq_backoff_reset(sqlq_backoff *b)
{
    b->started_ms = sqlq_clock_now_ms(b->clock);
    b->retries = 0;
}

bool sqlq_backoff_next(sqlq_backoff *b, uint64_t server_hint_ms, uint64_t *out_delay_ms)
{
    const sqlq_backoff_policy *p = &b->policy;
    if (p->max_retries && b->retries >= p->max_retries)
        return false;
    uint64_t elapsed = sqlq_clock_now_ms(b->clock) - b->started_ms;
    if (p->max_total_ms && elapsed >= p->max_total_ms)
        return false;

    /* initial * 2^retries, saturating at the cap before it can overflow. */
    uint64_t base = p->initial_ms;
    for (unsigned i = 0; i < b->retries && base < p->max_delay_ms; i++)
        base *= 2;
    if (base > p->max_delay_ms)
        base = p->max_delay_ms;
    double factor = 1.0 - p->jitter + 2.0 * p->jitter * sqlq_clock_random(b->clock);
    uint64_t delay = (uint64_t)((double)base * factor);
    if (delay > p->max_delay_ms)
        delay = p->max_delay_ms;
    if (server_hint_ms > delay)
        delay = server_hint_ms; /* the server knows best; may exceed the cap */
    if (p->max_total_ms && delay > p->max_total_ms - elapsed)
        delay = p->max_total_ms - elapsed;
    b->retries++;
    *out_delay_ms = delay;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end != '\0')
        return false;
    *out = v;
    return true;
}

uint64_t sqlq_backoff_server_hint(const char *retry_after, const char *ms_header, int64_t now_epoch_s)
{
    uint64_t v;
    if (ms_header && parse_u64(ms_header, &v))
        return v;
    if (!retry_after)
        return 0;
    if (parse_u64(retry_after, &v))
        return v > UINT64_MAX / 1000 ? UINT64_MAX : v * 1000;
    /* HTTP date: "Sun, 06 Nov 1994 08:49:37 GMT". */
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(retry_after, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end)
        return 0;
    int64_t when = (int64_t)timegm(&tm);
    return when > now_epoch_s ? (uint64_t)(when - now_epoch_s) * 1000u : 0;
}
