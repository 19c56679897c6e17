/* change_log: the trigger-maintained change log that gives SQLite and PostgreSQL tables
 * change-tracking semantics (latest version and operation per primary key). */
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
/* The bare name of a PostgreSQL log's version sequence: ver_<base> (qualify with
 * sqlq_catalog_object). Dropped with the log (OWNED BY its version column). */
void sqlq_change_log_sequence(const sqlq_catalog_names *n, char *out, size_t size);
/* The notification channel of a PostgreSQL log: sqlq.log_<base> (at most 49 bytes, within
 * PostgreSQL's 63). The trigger signals it with pg_notify, folded to one notification per
 * transaction, while a bridge is armed (below; not on servers that allow prepared transactions,
 * unless sqlq.notify = on); a bridge LISTENs on it to poll at once (a hint: polling stays the
 * truth). */
void sqlq_change_log_channel(const sqlq_catalog_names *n, char *out, size_t size);
/* The first half of a PostgreSQL log's wake-up lock key, pg_advisory_lock(SQLQ_PG_WAKE_CLASS,
 * hashtext(<channel>)): 'sqlq' in ASCII. The trigger tries it shared and notifies only when that
 * fails, that is while a bridge holds or waits for it (docs/capture.md, Wake-ups). */
#define SQLQ_PG_WAKE_CLASS 1936813169
/* The last version a PostgreSQL log's sequence handed out, as a select-list expression over the
 * sequence (what the poll's horizon observation and a listener's arm read). */
#define SQLQ_PG_SEQUENCE_LAST "CASE WHEN is_called THEN last_value ELSE last_value - 1 END"
/* The statement string a listener arms with (pg_arm.h): `SELECT pg_advisory_lock(<key>);
 * SELECT <last version> FROM <sequence>`, two results; without lock, the second alone (a peek
 * at the sequence, a hint that takes no lock). */
SQLQ_NODISCARD sqlq_result sqlq_change_log_pg_arm_sql(const sqlq_dialect *d,
                                                      const sqlq_catalog_names *n, bool lock,
                                                      char **out, sqlq_error *err);
/* Remove the triggers, log table and functions of one table, and its registry row. A log the
 * registry lists against another table too (sqlq_catalog_log_check) stays, with what the other
 * table's triggers use: then only this table's triggers and registry row go, and *out_shared
 * (optional) says so. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_drop(sqlq_db *db, const sqlq_table *t, bool *out_shared,
                                                sqlq_error *err);
/* Whether the triggers and log are present. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_installed(sqlq_db *db, const sqlq_table *t, bool *out,
                                                     sqlq_error *err);
/* `sqlq backfill`: the log's version of a row's key as an expression over the table's row (0
 * when no logged change touched it); *out NULL when the log is not installed. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_version_sql(sqlq_db *db, const sqlq_table *t,
                                                       const sqlq_catalog_names *n, char **out,
                                                       sqlq_error *err);

#endif
