#include "renewal.h"

void sqlq_renewal_start(sqlq_renewal *r, uint64_t lease_ms, uint64_t now_ms)
{
    r->lease_ms = lease_ms;
    r->held_until_ms = now_ms + lease_ms;
    r->next_ms = now_ms + lease_ms / 2;
    r->failures = 0;
    r->lost = false;
}

bool sqlq_renewal_due(const sqlq_renewal *r, uint64_t now_ms)
{
    return !r->lost && now_ms >= r->next_ms;
}

bool sqlq_renewal_ownership_lost(sqlq_result result)
{
    return result == SQLQ_E_POP_RECEIPT || result == SQLQ_E_NOT_FOUND || result == SQLQ_E_CONFLICT;
}

sqlq_renewal_outcome sqlq_renewal_record(sqlq_renewal *r, uint64_t now_ms, sqlq_result result)
{
    if (result == SQLQ_OK) {
        r->held_until_ms = now_ms + r->lease_ms;
        r->next_ms = now_ms + r->lease_ms / 2;
        r->failures = 0;
        return SQLQ_RENEWAL_RENEWED;
    }
    if (sqlq_renewal_ownership_lost(result)) {
        r->lost = true;
        return SQLQ_RENEWAL_LOST;
    }
    r->failures++;
    uint64_t left = r->held_until_ms > now_ms ? r->held_until_ms - now_ms : 0;
    uint64_t delay = left / 4;
    if (delay > r->lease_ms / 4)
        delay = r->lease_ms / 4;
    if (delay < SQLQ_RENEWAL_MIN_RETRY_MS)
        delay = SQLQ_RENEWAL_MIN_RETRY_MS;
    r->next_ms = now_ms + delay;
    return SQLQ_RENEWAL_RETRY;
}
