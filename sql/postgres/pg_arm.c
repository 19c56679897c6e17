#include "pg_arm.h"

void sqlq_pg_arm_init(sqlq_pg_arm *a)
{
    /* a failing arm keeps backing off on a new connection: its cause is likely still there */
    uint64_t retry = a->retry_ms, not_before = a->not_before_ms;
    *a = (sqlq_pg_arm){.state = SQLQ_PG_ARM_OFF, .last_l = INT64_MIN};
    a->retry_ms = retry;
    a->not_before_ms = not_before;
}

bool sqlq_pg_arm_due(const sqlq_pg_arm *a, uint64_t now_ms)
{
    return a->state == SQLQ_PG_ARM_OFF && now_ms >= a->not_before_ms;
}

void sqlq_pg_arm_sent(sqlq_pg_arm *a, uint64_t now_ms)
{
    a->state = SQLQ_PG_ARM_PENDING;
    a->release_on_grant = false;
    if (a->waiting_since_ms == 0)
        a->waiting_since_ms = now_ms ? now_ms : 1;
}

/* Why max(covered, last_l): a writer that will not notify took K shared before its first
 * version. If it took K before this arm was requested, the grant waited for it: it ended
 * before l was read, with its versions <= l. Otherwise it took K after the previous arm let K go,
 * so after the previous l was read: its versions are above that l. So the versions that may
 * have committed unsignalled since the previous arm are in (last_l, l], and those at or below
 * covered were seen by the last poll. Without last_l a poll held back below l by an open
 * writer (covered stays below l) would make every arm a hint until that writer ends. */
bool sqlq_pg_arm_granted(sqlq_pg_arm *a, int64_t l, int64_t covered, bool *release)
{
    int64_t seen = covered > a->last_l ? covered : a->last_l;
    bool hint = l > seen;
    *release = hint || a->release_on_grant;
    a->state = *release ? SQLQ_PG_ARM_RELEASING : SQLQ_PG_ARM_ON;
    a->release_on_grant = false;
    a->last_l = l;
    a->waiting_since_ms = 0;
    a->wait_logged = false;
    a->retry_ms = 0;
    return hint;
}

bool sqlq_pg_arm_hint(sqlq_pg_arm *a)
{
    if (a->state == SQLQ_PG_ARM_PENDING)
        a->release_on_grant = true;
    if (a->state != SQLQ_PG_ARM_ON)
        return false;
    a->state = SQLQ_PG_ARM_RELEASING;
    return true;
}

void sqlq_pg_arm_released(sqlq_pg_arm *a)
{
    a->state = SQLQ_PG_ARM_OFF;
}

bool sqlq_pg_arm_failed(sqlq_pg_arm *a, bool lock_timeout, uint64_t now_ms, uint64_t *out_retry_ms)
{
    a->release_on_grant = false;
    if (lock_timeout) {
        a->state = SQLQ_PG_ARM_OFF;
        *out_retry_ms = 0;
        return false;
    }
    uint64_t step = a->retry_ms ? a->retry_ms : SQLQ_PG_ARM_RETRY_FIRST_MS;
    a->retry_ms = step * 2 > SQLQ_PG_ARM_RETRY_MAX_MS ? SQLQ_PG_ARM_RETRY_MAX_MS : step * 2;
    a->not_before_ms = now_ms + step;
    a->waiting_since_ms = 0;
    a->wait_logged = false;
    a->state = SQLQ_PG_ARM_RELEASING;
    *out_retry_ms = step;
    return true;
}

uint64_t sqlq_pg_arm_waited_ms(const sqlq_pg_arm *a, uint64_t now_ms)
{
    if (a->state != SQLQ_PG_ARM_PENDING || a->waiting_since_ms == 0 || now_ms < a->waiting_since_ms)
        return 0;
    return now_ms - a->waiting_since_ms;
}
