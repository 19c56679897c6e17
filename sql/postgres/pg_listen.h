/* pg_listen: a small libpq connection that only LISTENs on one channel and waits for its
 * notifications (psqlODBC reads notifications while it runs a query and drops them: it has no
 * API to wait for one), and arms the capture trigger's notifications: the trigger notifies only
 * while a bridge holds the change log's wake-up lock or waits for it (pg_arm.h). A hint only:
 * the caller polls on its own connection. Never blocks on the database (the arm and the unlock
 * are sent and their answers read as they arrive); reconnects by itself with back-off (logged). */
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
    SQLQ_PG_LISTEN_UNSIGNALLED, /* an arm found versions that the last poll did not cover and no
                                   notification signalled (committed while not armed): poll */
    SQLQ_PG_LISTEN_DOWN,        /* no connection (reconnecting with back-off): poll as before */
} sqlq_pg_listen_event;

/* The statements of the wake-up lock (sqlq_pg_change_log_arm_sql): arm takes the lock and
 * reads the version sequence's last value (two results); peek reads that value alone. NULL:
 * listen only. */
typedef struct sqlq_pg_listen_sql {
    const char *arm;
    const char *peek;
} sqlq_pg_listen_sql;

/* From the ODBC connection string of psqlODBC (Server, Port, Database, UID, PWD, SSLMode and
 * their aliases; with DSN=, what the string leaves out is read from the DSN's odbc.ini section;
 * pqopt's libpq options are passed on). When no server can be determined it logs wakeup_off
 * and never connects (each wait just sleeps): libpq's defaults could reach another server.
 * At the first LISTEN it warns (wakeup_off) when the trigger does not notify in that database.
 * sql: the wake-up lock's statements (NULL: listen only, never arms). Connects on the first
 * wait; fails only when out of memory. */
SQLQ_NODISCARD sqlq_result sqlq_pg_listen_create(const char *odbc_conn, const char *channel,
                                                 const sqlq_pg_listen_sql *sql,
                                                 sqlq_pg_listen **out, sqlq_error *err);
void sqlq_pg_listen_destroy(sqlq_pg_listen *l);
/* Wait up to timeout_ms for a hint, (re)connecting first when due, and arming when not armed.
 * covered: sqlq_capture_covered_version of the route's last poll. Every notification that has
 * arrived is consumed: a burst is one hint. A hint lets the wake-up lock go (at once, or as soon
 * as a pending arm is granted): the route is about to poll, and writers need not notify. */
sqlq_pg_listen_event sqlq_pg_listen_wait(sqlq_pg_listen *l, uint64_t timeout_ms, int64_t covered);
/* The same without waiting, connecting or arming: what has arrived (a hint, an arm's answer, or
 * a peek's: UNSIGNALLED when the sequence's last value it read is above covered). */
sqlq_pg_listen_event sqlq_pg_listen_check(sqlq_pg_listen *l, int64_t covered);
/* Without waiting: when not armed and nothing is in flight, send the peek (its answer is read by
 * a later check or wait). What arrives meanwhile is kept for them. */
void sqlq_pg_listen_peek(sqlq_pg_listen *l, int64_t covered);
/* The server process id of the listening session (0 when down), for tests and logs. */
int sqlq_pg_listen_backend_pid(const sqlq_pg_listen *l);
/* Whether the listener holds the wake-up lock now (as far as it knows), for tests and logs. */
bool sqlq_pg_listen_armed(const sqlq_pg_listen *l);

#endif
