/* consumer_outage: the queue service's outages as the consumer meets them on deletes, updates
 * and poison puts: never counted toward poison, logged at most every 30 s, and what makes the
 * poller back off and /readyz say so (the handler's target: consumer_hold.c). */
#include "consumer_internal.h"

#include "clock.h"
#include "fault.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define OUTAGE_LOG_EVERY_MS 30000u

const char *sqlq_consumer_outage_cause(const struct sqlq_consumer *c, const sqlq_error *err,
                                       char *buf, size_t size)
{
    int64_t now = (int64_t)time(NULL);
    if ((err->http_status == 401 || err->http_status == 403) && sqlq_fault_sas_expired(c->sas, now)) {
        sqlq_fault_context ctx = {NULL, c->queue, err->http_status, err->azure_code, c->sas, now,
                                  err->message};
        char cause[160];
        sqlq_fault_describe(SQLQ_FAULT_AUTHENTICATION, &ctx, cause, sizeof(cause));
        snprintf(buf, size, "credential rejected: %s", cause);
    } else {
        snprintf(buf, size, "%s", sqlq_disposition_outage_cause(err));
    }
    return buf;
}

void sqlq_consumer_note_failure(struct sqlq_consumer *c, const char *op, const sqlq_error *err)
{
    if (!sqlq_disposition_is_outage(err))
        return;
    unsigned long long failing = atomic_fetch_add(&c->n.service_failing, 1) + 1;
    char why[sizeof(c->outage_cause)];
    const char *cause = sqlq_consumer_outage_cause(c, err, why, sizeof(why));
    uint64_t now = sqlq_clock_mono_ms();
    pthread_mutex_lock(&c->outage_mu);
    c->outage_err = *err;
    bool log_it = failing == 1 || strcmp(c->outage_cause, cause) != 0 ||
                  now - c->outage_logged_ms >= OUTAGE_LOG_EVERY_MS;
    if (log_it) {
        c->outage_logged_ms = now;
        snprintf(c->outage_cause, sizeof(c->outage_cause), "%s", cause);
    }
    pthread_mutex_unlock(&c->outage_mu);
    if (!log_it)
        return;
    SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "consumer.outage", err,
               "queue=%s op=%s failing=%llu cause=\"%s\" note=\"a fault of the queue "
               "service or the credential, not of the message: never counted toward poison; "
               "polling backs off until a request works again\"",
               c->queue, op, failing, cause);
}

void sqlq_consumer_note_ok(struct sqlq_consumer *c)
{
    if (atomic_exchange(&c->n.service_failing, 0) > 0)
        SQLQ_INFO("consumer.outage_over", "queue=%s note=\"the queue service works again\"",
                  c->queue);
}

