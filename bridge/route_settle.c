/* route_settle: releasing what a queue accepted and giving back the rest, for one route. */
#include "route_internal.h"

#include "log.h"

#include <assert.h>
#include <stdlib.h>

/* Release (or abandon) until the database takes it. Giving up is safe: the leases expire and
 * the changes are delivered again. */
void sqlq_route_settle_list(sqlq_route *r, const sqlq_change *list, size_t k, bool abandon,
                            bool count_attempt)
{
    for (int permanent_failures = 0; k > 0;) {
        sqlq_error e;
        sqlq_error_clear(&e);
        size_t lost = 0;
        sqlq_result rc = !r->cap   ? sqlq_error_set(&e, SQLQ_E_SQL, true, "capture not open")
                         : abandon ? sqlq_capture_abandon(r->cap, list, k, count_attempt, &e)
                                   : sqlq_capture_release(r->cap, list, k, &lost, &e);
        if (rc == SQLQ_E_LEASE_LOST) { /* fenced off: the new owner reads these changes again */
            r->lost += k;
            sqlq_counter_add(r->m_lease_lost, k);
            SQLQ_WARN("lease_lost",
                      "table=%s n=%zu note=\"another instance took over and delivers them again\"",
                      r->cfg.table, k);
            return;
        }
        if (rc == SQLQ_OK) {
            sqlq_backoff_reset(&r->db_backoff);
            r->db_failures = 0;
            if (!abandon)
                r->released += k - lost;
            if (lost > 0) {
                r->lost += lost;
                sqlq_counter_add(r->m_lease_lost, lost);
                SQLQ_WARN("lease_lost",
                          "table=%s n=%zu note=\"another instance owns these changes now "
                          "and delivers them again\"",
                          r->cfg.table, lost);
            }
            return;
        }
        if ((!e.transient && ++permanent_failures >= 3) ||
            !sqlq_route_recover_db(r, abandon ? "abandon_failed" : "release_failed", &e)) {
            SQLQ_WARN("changes_left_leased",
                      "table=%s n=%zu note=\"delivered again once the leases expire\"",
                      r->cfg.table, k);
            return;
        }
    }
}

/* Keep `list` (deep copies) in r->pend, released later by release_pending. */
static bool defer_release(sqlq_route *r, const sqlq_change *list, size_t k)
{
    assert(r->pend.count == 0); /* the previous batch's was released while this one published */
    sqlq_change *copy = malloc((k ? k : 1) * sizeof(*copy));
    if (!copy || r->pend.count > 0) {
        free(copy);
        return false;
    }
    for (size_t i = 0; i < k; i++) {
        copy[i] = list[i];
        json_incref(copy[i].key);
        json_incref(copy[i].row);
        json_incref(copy[i].changed);
        json_incref(copy[i].before);
    }
    r->pend.items = copy;
    r->pend.count = k;
    return true;
}

void sqlq_route_release_pending(sqlq_route *r)
{
    if (r->pend.count > 0)
        sqlq_route_settle_list(r, r->pend.items, r->pend.count, false, false);
    sqlq_change_batch_free(&r->pend);
}

/* Release what a queue accepted, abandon (attempt counted) what was refused for good; mark them
 * done. `defer`: when every change is accepted or poisoned, keep the release for later. */
void sqlq_route_settle(sqlq_route *r, const sqlq_change_batch *b, const sqlq_outcome *outcomes,
                       bool *done, bool defer)
{
    assert(!r->helper_owns_conn);
    sqlq_change *rel = malloc(b->count * sizeof(*rel));
    sqlq_change *fail = malloc(b->count * sizeof(*fail));
    size_t nr = 0, nf = 0;
    for (size_t i = 0; rel && fail && i < b->count; i++) {
        if (done[i])
            continue;
        if (outcomes[i] == SQLQ_OUTCOME_ACCEPTED)
            sqlq_counter_inc(r->m_published);
        if (outcomes[i] == SQLQ_OUTCOME_POISONED)
            sqlq_counter_inc(r->m_poisoned);
        if (outcomes[i] == SQLQ_OUTCOME_FILTERED)
            sqlq_counter_inc(r->m_filtered);
        if (outcomes[i] == SQLQ_OUTCOME_ACCEPTED || outcomes[i] == SQLQ_OUTCOME_POISONED ||
            outcomes[i] == SQLQ_OUTCOME_FILTERED) {
            rel[nr++] = b->items[i];
            done[i] = true;
        } else if (outcomes[i] == SQLQ_OUTCOME_FAILED) {
            fail[nf++] = b->items[i];
            done[i] = true;
        }
    }
    bool all = rel && fail && nf == 0;
    for (size_t i = 0; all && i < b->count; i++)
        all = done[i];
    if (!(defer && all && defer_release(r, rel, nr)))
        sqlq_route_settle_list(r, rel, nr, false, false);
    sqlq_route_settle_list(r, fail, nf, true, true);
    free(rel);
    free(fail);
}

/* Give back what is still undelivered without counting the attempt (stop request). */
void sqlq_route_abandon_rest(sqlq_route *r, const sqlq_change_batch *b, bool *done)
{
    assert(!r->helper_owns_conn);
    sqlq_change *rest = malloc(b->count * sizeof(*rest));
    size_t k = 0;
    for (size_t i = 0; rest && i < b->count; i++)
        if (!done[i]) {
            rest[k++] = b->items[i];
            done[i] = true;
        }
    sqlq_route_settle_list(r, rest, k, true, false);
    free(rest);
}
