/* route_state: the states of one route and its transition function. */
#include "route_state.h"

#include <assert.h>

sqlq_route_state sqlq_route_transition(sqlq_route_state s, const sqlq_route_facts *f)
{
    switch (s) {
    case SQLQ_ROUTE_START: return f->end ? SQLQ_ROUTE_DONE : SQLQ_ROUTE_POLL;
    case SQLQ_ROUTE_POLL:
        if (f->end)
            return SQLQ_ROUTE_STOPPING;
        if (!f->got_batch)
            return SQLQ_ROUTE_POLL;
        return f->empty ? SQLQ_ROUTE_IDLE : SQLQ_ROUTE_PUBLISH;
    case SQLQ_ROUTE_IDLE: return f->end || f->drained ? SQLQ_ROUTE_STOPPING : SQLQ_ROUTE_POLL;
    case SQLQ_ROUTE_PUBLISH: return f->batch_done ? SQLQ_ROUTE_SETTLED : SQLQ_ROUTE_BACKOFF;
    case SQLQ_ROUTE_BACKOFF: return f->batch_done ? SQLQ_ROUTE_SETTLED : SQLQ_ROUTE_PUBLISH;
    case SQLQ_ROUTE_SETTLED: return f->end ? SQLQ_ROUTE_STOPPING : SQLQ_ROUTE_POLL;
    case SQLQ_ROUTE_STOPPING:
    case SQLQ_ROUTE_DONE:
    case SQLQ_ROUTE_NSTATES: break;
    }
    assert(s == SQLQ_ROUTE_STOPPING || s == SQLQ_ROUTE_DONE);
    return SQLQ_ROUTE_DONE;
}

const char *sqlq_route_state_name(sqlq_route_state s)
{
    static const char *const names[SQLQ_ROUTE_NSTATES] = {
        "start", "poll", "idle", "publish", "backoff", "settled", "stopping", "done"};
    return (unsigned)s < SQLQ_ROUTE_NSTATES ? names[s] : "?";
}
