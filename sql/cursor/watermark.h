/* watermark: the safety lag of integer cursors, which have no time to compare with: the highest
 * value seen at least lag ms ago bounds what may be read, so a row whose number was taken
 * before that moment but committed within the lag is still read (pure; the clock is passed in). */
#ifndef SQLQ_WATERMARK_H
#define SQLQ_WATERMARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQLQ_WATERMARK_SAMPLES 256

typedef struct sqlq_watermark {
    struct {
        uint64_t at_ms;
        int64_t max;
    } samples[SQLQ_WATERMARK_SAMPLES]; /* oldest first */
    size_t count;
    uint64_t lag_ms;
} sqlq_watermark;

void sqlq_watermark_init(sqlq_watermark *w, uint64_t lag_ms);
/* Record the column's maximum observed at now_ms (monotonic). */
void sqlq_watermark_observe(sqlq_watermark *w, uint64_t now_ms, int64_t max);
/* The bound at now_ms: the newest sample at least lag old; false when none is old enough yet.
 * Older samples are forgotten. */
bool sqlq_watermark_bound(sqlq_watermark *w, uint64_t now_ms, int64_t *out);

/* With no bound yet (sqlq_watermark_bound false): ms until the first sample is lag old, when
 * what it saw may be read; 0 when nothing was seen. */
uint64_t sqlq_watermark_wait_ms(const sqlq_watermark *w, uint64_t now_ms);

#endif
