/* route: one watched table published to one queue: poll → publish → release → advance. */
#ifndef SQLQ_ROUTE_H
#define SQLQ_ROUTE_H

#include "bridge.h"
#include "stop.h"

typedef struct sqlq_route sqlq_route;

/* What every route of one process shares. */
typedef struct sqlq_route_env {
    const char *db_connection;
    const sqlq_account *account;
    sqlq_encoding encoding;
    const char *instance_id;
    int renew_interval_ms; /* 0: min(15 s, lease / 3) */
    bool once;
    int once_outage_s; /* with once: give up after the database or queue was down this long */
    const sqlq_stop *stop; /* stop polling, finish what is in flight, return */
    sqlq_metrics *metrics;             /* optional */
    sqlq_bridge_health *health;        /* optional: started is counted up when the route starts */
} sqlq_route_env;

SQLQ_NODISCARD sqlq_result sqlq_route_create(const sqlq_route_env *env, const sqlq_route_config *cfg,
                                             sqlq_route **out, sqlq_error *err);
/* The loop; returns when *env->stop is set, when drained (once), on a permanent failure at
 * start (table not set up), or with once when the database or the queue service stayed
 * unavailable for once_outage_s (SQLQ_E_TIMEOUT). Call from the route's own thread. */
SQLQ_NODISCARD sqlq_result sqlq_route_run(sqlq_route *r, sqlq_error *err);
void sqlq_route_stats_add(const sqlq_route *r, sqlq_bridge_stats *sum);
void sqlq_route_destroy(sqlq_route *r);

#endif
