/* preflight: `sqlq config check`: connect to both ends of every route and report each problem,
 * without creating or changing anything. */
#ifndef SQLQ_PREFLIGHT_H
#define SQLQ_PREFLIGHT_H

#include "account.h"
#include "bridge.h"

#include <stdio.h>

/* Prints one line per check ("ok  …" / "FAIL …" / "note …") to out; returns the number of
 * problems found (0 = the bridge can start with this configuration). */
int sqlq_preflight_run(const char *db_connection, const sqlq_account *account,
                       sqlq_encoding encoding, const sqlq_route_config *routes, size_t nroutes,
                       FILE *out);

#endif
