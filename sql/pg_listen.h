/* pg_listen: a small libpq connection that only LISTENs on one channel and waits for its
 * notifications (psqlODBC reads notifications while it runs a query and drops them: it has no
 * API to wait for one). A notification is only a hint that the change log moved; the caller
 * polls on its own connection. The connection reconnects by itself with back-off (logged). */
#ifndef SQLQ_PG_LISTEN_H
#define SQLQ_PG_LISTEN_H

#include "result.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct sqlq_pg_listen sqlq_pg_listen;

typedef enum {
    SQLQ_PG_LISTEN_TIMEOUT = 0, /* nothing arrived within the wait */
    SQLQ_PG_LISTEN_NOTIFIED,    /* a notification arrived, or LISTEN began (again): changes of the
                                   time without a listener were not signalled */
    SQLQ_PG_LISTEN_DOWN,        /* no connection (reconnecting with back-off): poll as before */
} sqlq_pg_listen_event;

/* From the ODBC connection string of psqlODBC (Server, Port, Database, UID, PWD, SSLMode and
 * their aliases; with DSN=, what the string leaves out is read from the DSN's odbc.ini section;
 * pqopt's libpq options are passed on). When no server can be determined it logs wakeup_off
 * and never connects (each wait just sleeps): libpq's defaults could reach another server.
 * At the first LISTEN it warns (wakeup_off) when the trigger does not notify in that database.
 * Connects on the first wait; fails only when out of memory. */
SQLQ_NODISCARD sqlq_result sqlq_pg_listen_create(const char *odbc_conn, const char *channel,
                                                 sqlq_pg_listen **out, sqlq_error *err);
void sqlq_pg_listen_destroy(sqlq_pg_listen *l);
/* Wait up to timeout_ms for a notification on the channel, (re)connecting first when due.
 * Every notification that has arrived is consumed: a burst is one wake-up. */
sqlq_pg_listen_event sqlq_pg_listen_wait(sqlq_pg_listen *l, uint64_t timeout_ms);
/* The server process id of the listening session (0 when down), for tests and logs. */
int sqlq_pg_listen_backend_pid(const sqlq_pg_listen *l);

#endif
