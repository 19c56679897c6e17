/* pg_horizon: see pg_horizon.h for the argument. */
#include "pg_horizon.h"

#include <stdlib.h>
#include <string.h>

void sqlq_horizon_init(sqlq_horizon *h)
{
    memset(h, 0, sizeof(*h));
}

void sqlq_horizon_free(sqlq_horizon *h)
{
    if (!h)
        return;
    free(h->writers);
    memset(h, 0, sizeof(*h));
}

static const sqlq_horizon_writer *find_in(const sqlq_horizon_writer *w, size_t n, const char *xid)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(w[i].xid, xid) == 0)
            return &w[i];
    return NULL;
}

int64_t sqlq_horizon_observe(sqlq_horizon *h, int64_t s, int64_t sync,
                             const sqlq_horizon_writer *seen, size_t n, uint64_t now_ms)
{
    sqlq_horizon_writer *next = calloc(n ? n : 1, sizeof(*next));
    if (!next)
        return INT64_MIN;
    /* A writer new to this observation took the lock after the previous one's step 2. */
    int64_t fresh = h->observed ? h->last_s : sync;
    if (sync > fresh)
        fresh = sync;
    int64_t horizon = s;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (!seen[i].xid[0] || find_in(next, count, seen[i].xid))
            continue;
        const sqlq_horizon_writer *known = find_in(h->writers, h->count, seen[i].xid);
        next[count] = seen[i];
        next[count].bound = known ? known->bound : fresh;
        next[count].first_seen_ms = known ? known->first_seen_ms : now_ms;
        if (next[count].bound < horizon)
            horizon = next[count].bound;
        count++;
    }
    free(h->writers);
    h->writers = next;
    h->count = count;
    h->capacity = n ? n : 1;
    h->observed = true;
    h->last_s = s;
    h->value = horizon;
    return horizon;
}

const sqlq_horizon_writer *sqlq_horizon_blocker(const sqlq_horizon *h)
{
    const sqlq_horizon_writer *b = NULL;
    for (size_t i = 0; i < h->count; i++)
        if (h->writers[i].bound < h->last_s && (!b || h->writers[i].bound < b->bound))
            b = &h->writers[i];
    return b;
}
