/* mssql_internal: what SQL Server's folder shares within sql/ (its dialect lists its sources). */
#ifndef SQLQ_MSSQL_INTERNAL_H
#define SQLQ_MSSQL_INTERNAL_H

#include "capture_sql.h"
#include "change_source.h"

/* mssql_capture_sql.c: change tracking's SQL. */
extern const sqlq_capture_log_sql sqlq_mssql_tracking_sql;
/* mssql_source.c: change tracking as a change source. */
extern const sqlq_change_source_ops sqlq_mssql_tracking_source;

#endif
