/* change_log: the trigger-maintained change log that gives SQLite and PostgreSQL tables
 * change-tracking semantics (latest version and operation per primary key). */
#ifndef SQLQ_CHANGE_LOG_H
#define SQLQ_CHANGE_LOG_H

#include "db.h"
#include "result.h"
#include "table.h"

/* Install (idempotently) the log table, version source and triggers for one table.
 * PostgreSQL versions are transaction ids (xid8) read only below the oldest running
 * transaction, so a change committed late is never skipped (REFERENCE.md §6). */
SQLQ_NODISCARD sqlq_result sqlq_change_log_install(sqlq_db *db, const sqlq_table *t, sqlq_error *err);
/* Remove the triggers and the log table of one table. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_drop(sqlq_db *db, const sqlq_table *t, sqlq_error *err);
/* Whether the triggers and log are present. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_installed(sqlq_db *db, const sqlq_table *t, bool *out,
                                                     sqlq_error *err);

#endif
