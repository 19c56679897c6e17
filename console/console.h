/* console: `sqlq console`, the operator web application served over HTTP by libmicrohttpd:
 * the routes as the status report reads them, the routed queues' counts, and poison triage
 * with the poison tools of queue/poison.h. docs/console.md describes the pages and the API. */
#ifndef SQLQ_CONSOLE_H
#define SQLQ_CONSOLE_H

#include "account.h"
#include "codec.h"
#include "result.h"
#include "stop.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One route of the settings: a table's changes go to a queue, under a bridge name. */
typedef struct sqlq_console_route {
    const char *table;
    const char *queue;
    const char *bridge; /* the bridge name ("default") */
} sqlq_console_route;

typedef struct sqlq_console_config {
    const char *listen;     /* HOST:PORT (PORT 0: a free port, sqlq_console_port) */
    const char *token;      /* access token; NULL or "": none (then only a loopback listen
                             * address is allowed) */
    bool read_only;         /* every action hidden and refused */
    const char *db;         /* ODBC connection string; NULL: no route status */
    const sqlq_account *account; /* the queue service; must outlive the console */
    sqlq_encoding encoding;
    const sqlq_console_route *routes; /* copied */
    size_t nroutes;
    const sqlq_stop *stop;  /* interrupts retries of requests to the queue service */
} sqlq_console_config;

typedef struct sqlq_console sqlq_console;

/* Whether the listen address is a loopback one (127.0.0.0/8, ::1, localhost), where a console
 * without a token may serve. False with err set when it cannot be read. */
bool sqlq_console_listen_is_loopback(const char *listen, bool *out, sqlq_error *err);

/* Start serving. SQLQ_E_INVALID when the address is not loopback and there is no token (the
 * message says how to give one), or the address cannot be read; SQLQ_E_IO when it cannot be
 * bound. */
SQLQ_NODISCARD sqlq_result sqlq_console_start(const sqlq_console_config *cfg, sqlq_console **out,
                                              sqlq_error *err);
uint16_t sqlq_console_port(const sqlq_console *c);
/* Stop accepting, finish the requests being served, free. NULL is fine. */
void sqlq_console_stop(sqlq_console *c);

#endif
