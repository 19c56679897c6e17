/* sink_pool: the --sql sink's database connections: opened when a message needs one, shared by
 * the workers one message at a time, as many as the server allows, and dropped when the server
 * goes away, so that a database outage is told apart from a message's own failure. */
#ifndef SQLQ_SINK_POOL_H
#define SQLQ_SINK_POOL_H

#include "consumer.h"
#include "db.h"
#include "result.h"

#include <stdbool.h>

typedef struct sqlq_sink_pool sqlq_sink_pool;

/* conn: the ODBC connection string (copied). */
SQLQ_NODISCARD sqlq_result sqlq_sink_pool_create(const char *conn, sqlq_sink_pool **out,
                                                 sqlq_error *err);
/* Closes the idle connections; every taken one must have been given back. */
void sqlq_sink_pool_destroy(sqlq_sink_pool *p);

/* Which database the pool reaches, for messages ("Server=…;Port=…;Database=…", no secret). */
const char *sqlq_sink_pool_target(const sqlq_sink_pool *p);

/* A connection for one message: an idle one, else a new one. When the server refuses a new one
 * as too many while this pool has others open, the pool remembers that number as its limit
 * (for a minute, then tries one more) and waits for one of them instead (until d is cancelled
 * or its deadline passes: SQLQ_E_TIMEOUT). Any other failure to connect is SQLQ_E_UNAVAILABLE,
 * the message naming the target and the driver's words (an outage: no message's fault). */
SQLQ_NODISCARD sqlq_result sqlq_sink_pool_take(sqlq_sink_pool *p, const sqlq_received *d,
                                               sqlq_db **out, sqlq_error *err);
/* Give a connection back. broken: it failed as the server went away: it is closed, and so is
 * every idle one (they are most likely dead too: a restart ends every session). */
void sqlq_sink_pool_give(sqlq_sink_pool *p, sqlq_db *db, bool broken);

/* Record in err (first error wins) that the target is unavailable because of cause:
 * SQLQ_E_UNAVAILABLE, "--sql target database (TARGET) is unavailable: CAUSE", with cause's
 * SQLSTATE and native code. Returns SQLQ_E_UNAVAILABLE. */
sqlq_result sqlq_sink_pool_unavailable(const sqlq_sink_pool *p, const sqlq_error *cause,
                                       sqlq_error *err);

/* A connection refused because the server (or the role) has too many already: PostgreSQL
 * 53300 "too many clients" / "too many connections for role", MariaDB/MySQL 1040 / 1203, SQL
 * Server's "maximum number of user connections". */
bool sqlq_sink_pool_too_many(const sqlq_error *e);

#endif
