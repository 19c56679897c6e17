/* change_log: the trigger-maintained change log that gives tables of databases without change
 * tracking of their own (each such source in sql/<database>/) change-tracking semantics (latest version and operation per primary key). */
#ifndef SQLQ_CHANGE_LOG_H
#define SQLQ_CHANGE_LOG_H

#include "catalog.h"
#include "change_log_options.h"
#include "db.h"
#include "result.h"
#include "table.h"

/* Install (idempotently) the log table, version source and triggers for one table, and
 * upgrade a log of an earlier sqlq (since column; PostgreSQL: a version sequence instead of
 * transaction ids, started above every version already stored). PostgreSQL versions come
 * from a sequence taken under the log's ROW EXCLUSIVE lock; readers bound them by the lock
 * holders (docs/capture.md). */
SQLQ_NODISCARD sqlq_result sqlq_change_log_install(sqlq_db *db, const sqlq_table *t, sqlq_error *err);
/* The same, keeping what opts asks for too (change_log_options.h: --track-columns,
 * --before-image); an option an earlier setup gave stays (until --drop). */
SQLQ_NODISCARD sqlq_result sqlq_change_log_install_with(sqlq_db *db, const sqlq_table *t,
                                                        const sqlq_change_log_options *opts,
                                                        sqlq_error *err);
/* Remove the triggers, log table and functions of one table, and its registry row. A log the
 * registry lists against another table too (sqlq_catalog_log_check) stays, with what the other
 * table's triggers use: then only this table's triggers and registry row go, and *out_shared
 * (optional) says so. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_drop(sqlq_db *db, const sqlq_table *t, bool *out_shared,
                                                sqlq_error *err);
/* Whether the triggers and log are present. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_installed(sqlq_db *db, const sqlq_table *t, bool *out,
                                                     sqlq_error *err);
/* `sqlq backfill` (change_source.h backfill_version): the log's version of a row's key, else
 * the database's floor F, as expressions over the table's row; NULL when the log is not
 * installed. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_backfill_version(sqlq_db *db,
                                                            const sqlq_catalog_names *n,
                                                            const sqlq_table *t, char **out_floor,
                                                            char **out_version, bool *out_param,
                                                            sqlq_error *err);

#endif
