/* mariadb_internal: what MariaDB/MySQL's folder shares within sql/ (its dialect lists its
 * sources). */
#ifndef SQLQ_MARIADB_INTERNAL_H
#define SQLQ_MARIADB_INTERNAL_H

#include "capture_sql.h"
#include "change_source.h"

/* mariadb_capture_sql.c: the stamped log's SQL. */
extern const sqlq_capture_log_sql sqlq_mariadb_log_sql;
/* mariadb_source.c: the stamped log as a change source. */
extern const sqlq_change_source_ops sqlq_mariadb_log_source;

#endif
