/* watermark: the safety lag of integer cursors. */
#include "watermark.h"

#include <string.h>

void sqlq_watermark_init(sqlq_watermark *w, uint64_t lag_ms)
{
    memset(w, 0, sizeof(*w));
    w->lag_ms = lag_ms;
}

void sqlq_watermark_observe(sqlq_watermark *w, uint64_t now_ms, int64_t max)
{
    if (w->count == SQLQ_WATERMARK_SAMPLES) {
        memmove(w->samples, w->samples + 1, (SQLQ_WATERMARK_SAMPLES - 1) * sizeof(w->samples[0]));
        w->count--;
    }
    /* A maximum never goes down for a monotonic column; if it does (rows deleted), keep the
     * higher value: what was seen stays eligible. */
    if (w->count > 0 && max < w->samples[w->count - 1].max)
        max = w->samples[w->count - 1].max;
    w->samples[w->count].at_ms = now_ms;
    w->samples[w->count].max = max;
    w->count++;
}

bool sqlq_watermark_bound(sqlq_watermark *w, uint64_t now_ms, int64_t *out)
{
    size_t k = w->count;
    while (k > 0 && w->samples[k - 1].at_ms + w->lag_ms > now_ms)
        k--;
    if (k == 0)
        return false;
    *out = w->samples[k - 1].max;
    memmove(w->samples, w->samples + (k - 1), (w->count - (k - 1)) * sizeof(w->samples[0]));
    w->count -= k - 1;
    return true;
}

uint64_t sqlq_watermark_wait_ms(const sqlq_watermark *w, uint64_t now_ms)
{
    if (w->count == 0)
        return 0;
    uint64_t ready = w->samples[0].at_ms + w->lag_ms;
    return ready > now_ms ? ready - now_ms : 1;
}
