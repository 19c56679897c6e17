/* classify: which failures are transient (retry) and which are permanent (give up). */
#ifndef SQLQ_CLASSIFY_H
#define SQLQ_CLASSIFY_H

#include <stdbool.h>

/* Network failures as the HTTP layer reports them (queue/ maps CURLcode onto these). */
typedef enum {
    SQLQ_NET_OK = 0,
    SQLQ_NET_CONNECT, /* refused, unreachable, DNS */
    SQLQ_NET_TIMEOUT,
    SQLQ_NET_SEND,
    SQLQ_NET_RECV, /* includes a connection closed mid-response */
    SQLQ_NET_TLS,  /* certificate or handshake: permanent */
    SQLQ_NET_OTHER /* anything else: permanent */
} sqlq_net_failure;

/* 408, 429, 500, 502, 503, 504 are transient; every other status >= 400 is permanent. */
bool sqlq_classify_http_transient(int status);
bool sqlq_classify_net_transient(sqlq_net_failure f);
/* ODBC: SQLSTATE 08001 08S01 08003 08007 40001 40P01 HYT00 HYT01; SQL Server native
 * 1204 1205 1222 40613 40501 40197 10928 10929 4060 233 10053 10054 10060 (any SQLSTATE, since
 * FreeTDS reports a deadlock as 42000); SQLite BUSY (5) and LOCKED (6) under SQLSTATE HY000;
 * MariaDB server gone (2006) and connection lost (2013) under HY000 or HY001;
 * PostgreSQL 57P01/57P02/57P03 (server shutting down or restarting) and 55P03 (lock not available). */
bool sqlq_classify_sql_transient(const char *sqlstate, long native_code);

/* A consumer handler's target is unavailable: the fault would fail every message alike (an
 * outage), so no message may be blamed for it.
 * SQL: the connection is lost or refused, or the server will not serve this session now:
 * SQLSTATE class 08 (connection), 28 (authorization refused), 53 (insufficient resources:
 * too many connections, disk full, out of memory), 57P01/57P02/57P03 (shutting down, crashed,
 * cannot connect now), 25006 (read-only: a standby after a failover); SQL Server native 4060,
 * 18456, 40613, 40197, 40501, 10928, 10929, 233, 10053, 10054, 10060, 10061; MariaDB/MySQL
 * native 1040, 1045, 1129, 1203, 1226, 2002, 2003, 2006, 2013; and a driver message that says so
 * whatever its SQLSTATE ("connection has been lost", "server closed the connection", "server has
 * gone away", "Lost connection to", SQLite's "unable to open database file", "database or disk
 * is full", "disk I/O error", "attempt to write a readonly database"). message may be NULL.
 * A deadlock or lock timeout is not an outage: it is retried as one message's failure. */
bool sqlq_classify_sql_unavailable(const char *sqlstate, long native_code, const char *message);

/* A transaction the database rolled back whole to break a conflict with another one: a deadlock
 * or serialization failure (SQLSTATE 40001, 40P01; SQL Server 1205, FreeTDS's 42000 included;
 * MariaDB/MySQL 1213). Trying the same transaction again at once is the cure. */
bool sqlq_classify_sql_conflict(const char *sqlstate, long native_code);
/* HTTP: 429 (throttled), 502, 503, 504 (the endpoint or its gateway is down or overloaded).
 * A 500 may be this message's fault and is not an outage. */
bool sqlq_classify_http_unavailable(int status);
/* Network: the endpoint cannot be reached at all (refused, unreachable, DNS). A timeout or a
 * connection reset mid-request may be this message's doing and is not an outage. */
bool sqlq_classify_net_unavailable(sqlq_net_failure f);

#endif
