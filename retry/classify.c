#include "classify.h"

#include <string.h>

bool sqlq_classify_http_transient(int status)
{
    switch (status) {
    case 408: case 429: case 500: case 502: case 503: case 504: return true;
    default: return false;
    }
}

bool sqlq_classify_net_transient(sqlq_net_failure f)
{
    switch (f) {
    case SQLQ_NET_CONNECT: case SQLQ_NET_TIMEOUT: case SQLQ_NET_SEND: case SQLQ_NET_RECV: return true;
    case SQLQ_NET_OK: case SQLQ_NET_TLS: case SQLQ_NET_OTHER: return false;
    }
    return false;
}

static const char *const transient_states[] = {"08001", "08S01", "08003", "08007", "40001",
                                                "40P01", "HYT00", "HYT01", "57P01", "57P02",
                                                "57P03", "55P03"};
/* SQL Server's native errors (deadlock victim, lock timeout, Azure SQL throttling and
 * failover, connection resets): transient whatever the SQLSTATE. */
static const long native_transient[] = {1204, 1205, 1222, 40613, 40501, 40197, 10928,
                                       10929, 4060, 233, 10053, 10054, 10060};

bool sqlq_classify_sql_transient(const char *sqlstate, long native_code)
{
    if (sqlstate) {
        for (size_t i = 0; i < sizeof(transient_states) / sizeof(transient_states[0]); i++)
            if (strcmp(sqlstate, transient_states[i]) == 0)
                return true;
        /* sqliteodbc: engine errors are HY000 with the SQLite code as native error. */
        if (strcmp(sqlstate, "HY000") == 0 && (native_code == 5 || native_code == 6))
            return true;
        /* MariaDB Connector/ODBC: the connection gone (2006) or lost (2013) is HY000, or HY001
         * when a connection attribute was being set (autocommit off). */
        if ((strcmp(sqlstate, "HY000") == 0 || strcmp(sqlstate, "HY001") == 0) &&
            (native_code == 2006 || native_code == 2013))
            return true;
    }
    for (size_t i = 0; i < sizeof(native_transient) / sizeof(native_transient[0]); i++)
        if (native_code == native_transient[i])
            return true;
    return false;
}

static const long unavailable_native[] = {
    4060, 18456, 40613, 40197, 40501, 10928, 10929, 233, 10053, 10054, 10060, 10061, /* SQL Server */
    1040, 1045, 1129, 1203, 1226, 2002, 2003, 2006, 2013 /* MariaDB / MySQL */};
static const char *const unavailable_words[] = {
    "connection has been lost", "server closed the connection", "server has gone away",
    "Lost connection to", "unable to open database file", "database or disk is full",
    "disk I/O error", "attempt to write a readonly database"};

bool sqlq_classify_sql_unavailable(const char *sqlstate, long native_code, const char *message)
{
    if (sqlstate && (strncmp(sqlstate, "08", 2) == 0 || strncmp(sqlstate, "28", 2) == 0 ||
                     strncmp(sqlstate, "53", 2) == 0 || strcmp(sqlstate, "57P01") == 0 ||
                     strcmp(sqlstate, "57P02") == 0 || strcmp(sqlstate, "57P03") == 0 ||
                     strcmp(sqlstate, "25006") == 0))
        return true;
    for (size_t i = 0; i < sizeof(unavailable_native) / sizeof(unavailable_native[0]); i++)
        if (native_code == unavailable_native[i])
            return true;
    for (size_t i = 0; message && i < sizeof(unavailable_words) / sizeof(unavailable_words[0]); i++)
        if (strstr(message, unavailable_words[i]))
            return true;
    return false;
}

bool sqlq_classify_http_unavailable(int status)
{
    return status == 429 || status == 502 || status == 503 || status == 504;
}

bool sqlq_classify_net_unavailable(sqlq_net_failure f)
{
    return f == SQLQ_NET_CONNECT;
}

bool sqlq_classify_sql_conflict(const char *sqlstate, long native_code)
{
    if (native_code == 1205 || native_code == 1213)
        return true;
    return sqlstate && (strcmp(sqlstate, "40001") == 0 || strcmp(sqlstate, "40P01") == 0);
}
