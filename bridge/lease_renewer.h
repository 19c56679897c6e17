/* lease_renewer: a thread with its own connection and capture handle that extends the leases
 * of the changes a route still has in flight (ODBC handles belong to one thread). */
#ifndef SQLQ_LEASE_RENEWER_H
#define SQLQ_LEASE_RENEWER_H

#include "capture.h"
#include "result.h"

#include <stddef.h>

typedef struct sqlq_lease_renewer sqlq_lease_renewer;

/* Connect, open a capture for the same (bridge, table) and start renewing every interval_ms.
 * cfg and conn are copied. */
SQLQ_NODISCARD sqlq_result sqlq_lease_renewer_start(const char *conn, const sqlq_capture_config *cfg,
                                                    int interval_ms, sqlq_lease_renewer **out,
                                                    sqlq_error *err);
/* Replace the set of changes in flight (keys and versions are copied); n = 0 clears it. */
SQLQ_NODISCARD sqlq_result sqlq_lease_renewer_set(sqlq_lease_renewer *r, const sqlq_change *changes,
                                                  size_t n);
/* Same, for the changes whose flag in keep[] is true. */
SQLQ_NODISCARD sqlq_result sqlq_lease_renewer_set_subset(sqlq_lease_renewer *r,
                                                         const sqlq_change *changes,
                                                         const bool *keep, size_t n);
/* Renewals done so far (for tests and logs). */
unsigned long long sqlq_lease_renewer_count(sqlq_lease_renewer *r);
/* Stop the thread, close its connection, free. NULL is fine. */
void sqlq_lease_renewer_stop(sqlq_lease_renewer *r);

#endif
