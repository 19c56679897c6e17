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
 * PostgreSQL 57P01/57P02/57P03 (server shutting down or restarting) and 55P03 (lock not available). */
bool sqlq_classify_sql_transient(const char *sqlstate, long native_code);

#endif
