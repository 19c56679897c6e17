/* preflight: `sqlq config check`: connect to both ends of every route and report each problem,
 * without creating or changing anything. */
#ifndef SQLQ_PREFLIGHT_H
#define SQLQ_PREFLIGHT_H

#include "account.h"
#include "bridge.h"

#include <stdio.h>

/* Prints one line per check ("ok  …" / "FAIL …" / "note …") to out; returns the number of
 * problems found (0 = the bridge can start with this configuration), of which
 * *out_config_problems (may be NULL) are configuration errors: a route setting the database
 * cannot serve, such as changed / before_image without the setup option. */
int sqlq_preflight_run(const char *db_connection, const sqlq_account *account,
                       sqlq_encoding encoding, const sqlq_route_config *routes, size_t nroutes,
                       FILE *out, int *out_config_problems);

#endif
