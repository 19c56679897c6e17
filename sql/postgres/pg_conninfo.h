/* pg_conninfo: libpq connection parameters for the server a psqlODBC connection string names. */
#ifndef SQLQ_PG_CONNINFO_H
#define SQLQ_PG_CONNINFO_H

#include "result.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_pg_conninfo sqlq_pg_conninfo;

/* From the ODBC connection string of psqlODBC (Server, Port, Database, UID, PWD, SSLMode and
 * their aliases; with DSN=, what the string leaves out is read from the DSN's odbc.ini section;
 * pqopt's libpq options are passed on, and win, as in psqlODBC). Fails only when out of memory. */
SQLQ_NODISCARD sqlq_result sqlq_pg_conninfo_create(const char *odbc_conn, sqlq_pg_conninfo **out,
                                                   sqlq_error *err);
void sqlq_pg_conninfo_destroy(sqlq_pg_conninfo *ci);
/* Whether a server is named (connection string, DSN, pqopt, PGHOST or PGSERVICE): never
 * libpq's defaults in silence, a local socket could be another PostgreSQL than ODBC reaches. */
bool sqlq_pg_conninfo_known(const sqlq_pg_conninfo *ci);
/* The DSN= of the connection string, or NULL. */
const char *sqlq_pg_conninfo_dsn(const sqlq_pg_conninfo *ci);
/* Fill keys/vals (room for max entries, the NULL terminator included) with the mapped
 * parameters, then pqopt's, then extra's (nextra pairs: keyword, value), for
 * PQconnectdbParams. Entries that do not fit are left out; returns the count written. */
size_t sqlq_pg_conninfo_params(const sqlq_pg_conninfo *ci, const char *const (*extra)[2],
                               size_t nextra, const char **keys, const char **vals, size_t max);

#define SQLQ_PG_CONNINFO_MAX 40 /* keys/vals large enough for every mapped and pqopt parameter */

#endif
