/* capture_presence: which bridge instances work on a table now. Each running instance keeps a
 * row in sqlq's `instances` table (bridge, table, instance id, seen until), written when its
 * route starts and renewed with its leases (every min(15 s, lease_s / 3)) to now + lease_s;
 * a clean stop removes it, a killed instance's row runs out after its lease. `sqlq setup
 * --drop` refuses while one is current (drop_guard.h). Beside it, `instance_rates`: what each
 * instance published lately, per queue, for `sqlq status` (every source, the route writing it
 * as it samples its /metrics rates). */
#ifndef SQLQ_CAPTURE_PRESENCE_H
#define SQLQ_CAPTURE_PRESENCE_H

#include "db.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>

/* Seen until now + lease_s (the row made when missing). */
SQLQ_NODISCARD sqlq_result sqlq_presence_touch(sqlq_db *db, const char *bridge,
                                               const char *table_key, const char *instance,
                                               int lease_s, sqlq_error *err);
/* The instance stopped: its row goes. */
SQLQ_NODISCARD sqlq_result sqlq_presence_leave(sqlq_db *db, const char *bridge,
                                               const char *table_key, const char *instance,
                                               sqlq_error *err);
/* Every row of the table (of one bridge when bridge is not NULL): setup --drop. */
SQLQ_NODISCARD sqlq_result sqlq_presence_forget(sqlq_db *db, const char *table_key,
                                                const char *bridge, sqlq_error *err);
/* What the instance published lately, seen until now + ttl_s: per_s changes a second over its
 * queues, queues the JSON object {"queue": per_s, …} (each queue of a shard set; the one queue
 * without). A new instance's first report removes rows of instances gone for an hour. */
SQLQ_NODISCARD sqlq_result sqlq_presence_rate(sqlq_db *db, const char *bridge,
                                              const char *table_key, const char *instance,
                                              double per_s, const char *queues, int ttl_s,
                                              sqlq_error *err);
/* The current rates of a table's instances (of one bridge when bridge is not NULL), as
 * [{"bridge", "instance", "per_s", "queues": {"queue": per_s, …}}]; an empty array without
 * sqlq's table for them. */
SQLQ_NODISCARD sqlq_result sqlq_presence_rates(sqlq_db *db, const char *table_key,
                                               const char *bridge, json_t **out, sqlq_error *err);
/* The instances seen until a time still to come, as [{"bridge", "instance", "left_s"}]
 * (left_s: seconds the row still counts); an empty array without sqlq's catalog. */
SQLQ_NODISCARD sqlq_result sqlq_presence_list(sqlq_db *db, const char *table_key,
                                              const char *bridge, json_t **out, sqlq_error *err);

#endif
