/* outage: one route's record of a fault that stops all of its publishing: since when, the
 * probable cause and rate-limited log lines. */
#include "outage.h"

#include "log.h"

#include <stdio.h>
#include <string.h>

void sqlq_outage_init(sqlq_outage *o, const char *table, const char *queue)
{
    memset(o, 0, sizeof(*o));
    o->table = table;
    o->queue = queue;
}

bool sqlq_outage_failed(sqlq_outage *o, uint64_t now_ms, const char *cause, const char *detail)
{
    bool first = !o->down, changed = strcmp(o->cause, cause) != 0;
    if (first) {
        o->down = true;
        o->since_ms = now_ms;
        o->failures = 0;
    }
    o->failures++;
    snprintf(o->cause, sizeof(o->cause), "%s", cause);
    if (!first && !changed && now_ms - o->last_log_ms < SQLQ_OUTAGE_LOG_MS)
        return false;
    o->last_log_ms = now_ms;
    SQLQ_ERROR("queue_outage",
               "table=%s queue=%s for_s=%llu failed_attempts=%llu cause=\"%s\" err=\"%s\" "
               "note=\"not counted against any change; retrying with back-off\"",
               o->table, o->queue, (unsigned long long)((now_ms - o->since_ms) / 1000), o->failures,
               cause, detail ? detail : "");
    return true;
}

void sqlq_outage_recovered(sqlq_outage *o, uint64_t now_ms)
{
    if (!o->down)
        return;
    SQLQ_INFO("queue_recovered", "table=%s queue=%s after_s=%llu failed_attempts=%llu cause=\"%s\"",
              o->table, o->queue, (unsigned long long)((now_ms - o->since_ms) / 1000), o->failures,
              o->cause);
    o->down = false;
    o->cause[0] = '\0';
}

uint64_t sqlq_outage_ms(const sqlq_outage *o, uint64_t now_ms)
{
    return o->down ? now_ms - o->since_ms : 0;
}
