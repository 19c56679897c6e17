/* pg_internal: what PostgreSQL's folder shares within sql/ (its dialect lists its sources). */
#ifndef SQLQ_PG_INTERNAL_H
#define SQLQ_PG_INTERNAL_H

#include "pg_horizon.h"
#include "capture_sql.h"
#include "change_source.h"

/* pg_capture_sql.c: the trigger log's SQL. */
extern const sqlq_capture_log_sql sqlq_pg_log_sql;
/* Step 2 of a horizon observation (pg_horizon.h), and the stored sync version, under the
 * lock just before the poll, which takes the sync version as a parameter: the planner then
 * knows how many log rows lie in the range and walks the version index in order up to the
 * batch limit, where subqueries in the range left it guessing 0.5% of the log and sorting all
 * of it (a poll cost grew with the backlog). Rows: m_sync, m_pid, m_xid, one per holder of the
 * log's ROW EXCLUSIVE lock but this session (m_pid NULL: a prepared transaction; m_xid NULL:
 * no transaction id, hence no version), or one row with both NULL. Without with_writers:
 * m_sync only (an observation that needs no lock holders). */
SQLQ_NODISCARD sqlq_result sqlq_pg_capture_sql_bounds(const sqlq_capture_sql *c,
                                                      bool with_writers,
                                                      sqlq_capture_stmt *out, sqlq_error *err);
/* Step 1 of a horizon observation, m_seq (the last version handed out), with the poll's lock
 * first (m_lock) when with_lock: one round trip. */
SQLQ_NODISCARD sqlq_result sqlq_pg_capture_sql_sequence(const sqlq_capture_sql *c, bool with_lock,
                                                        sqlq_capture_stmt *out, sqlq_error *err);
/* pg_change_log.c: the triggers (change_log_internal.h), and what the capture side and the
 * listener need to know of them. */
/* The bare name of the log's version sequence: ver_<base> (qualify with
 * sqlq_catalog_object). Dropped with the log (OWNED BY its version column). */
void sqlq_pg_change_log_sequence(const sqlq_catalog_names *n, char *out, size_t size);
/* The notification channel of the log: sqlq.log_<base> (at most 49 bytes, within
 * PostgreSQL's 63). The trigger signals it with pg_notify, folded to one notification per
 * transaction, while a bridge is armed (below; not on servers that allow prepared transactions,
 * unless sqlq.notify = on); a bridge LISTENs on it to poll at once (a hint: polling stays the
 * truth). */
void sqlq_pg_change_log_channel(const sqlq_catalog_names *n, char *out, size_t size);
/* The first half of the log's wake-up lock key, pg_advisory_lock(SQLQ_PG_WAKE_CLASS,
 * hashtext(<channel>)): 'sqlq' in ASCII. The trigger tries it shared and notifies only when that
 * fails, that is while a bridge holds or waits for it (docs/capture.md, Wake-ups). */
#define SQLQ_PG_WAKE_CLASS 1936813169
/* The last version the log's sequence handed out, as a select-list expression over the
 * sequence (what the poll's horizon observation and a listener's arm read). */
#define SQLQ_PG_SEQUENCE_LAST "CASE WHEN is_called THEN last_value ELSE last_value - 1 END"
/* The statement string a listener arms with (pg_arm.h): `SELECT pg_advisory_lock(<key>);
 * SELECT <last version> FROM <sequence>`, two results; without lock, the second alone (a peek
 * at the sequence, a hint that takes no lock). */
SQLQ_NODISCARD sqlq_result sqlq_pg_change_log_arm_sql(const sqlq_dialect *d,
                                                      const sqlq_catalog_names *n, bool lock,
                                                      char **out, sqlq_error *err);
struct sqlq_log_ctx;
sqlq_result sqlq_pg_change_log_lock_table(const struct sqlq_log_ctx *c, sqlq_error *err);
sqlq_result sqlq_pg_change_log_install(const struct sqlq_log_ctx *c, sqlq_error *err);
sqlq_result sqlq_pg_change_log_trigger(const struct sqlq_log_ctx *c, bool create, sqlq_error *err);
/* The triggers and both functions (the log table stays). */
sqlq_result sqlq_pg_change_log_drop(const struct sqlq_log_ctx *c, sqlq_error *err);
/* The bare name of the row trigger's function: <log function>_row (at most 59 bytes). */
void sqlq_pg_change_log_row_function(const sqlq_catalog_names *n, char *out, size_t size);

/* The trigger log's state behind a capture (change_source.h): the safe read horizon and the
 * writers holding the log (pg_horizon.h), and the statements that observe them. */
typedef struct sqlq_pg_log_state {
    sqlq_horizon horizon;
    uint64_t held_logged_ms; /* last capture_held_back line (rate limit) */
    sqlq_capture_stmt seq_lock, seq, bounds, bounds_sync;
} sqlq_pg_log_state;

/* pg_writers.c. One horizon observation (pg_horizon.h): the sequence (with the poll's
 * lock first when with_lock), then the writers; sets v->sync and v->horizon. */
struct sqlq_capture_values;
sqlq_result sqlq_pg_writers_observe(sqlq_capture *cap, bool with_lock,
                                    struct sqlq_capture_values *v, sqlq_error *err);
/* After a poll: a rate-limited warning naming the transaction that holds delivery back. */
void sqlq_pg_writers_report(sqlq_capture *cap, uint64_t now_ms);
/* The writers holding delivery back as JSON objects (pid, xid, application_name, database,
 * state, age_s, gid for a prepared transaction), oldest first. */
sqlq_result sqlq_pg_writers_describe(sqlq_capture *cap, json_t **out, sqlq_error *err);

/* pg_backfill.c: a backfill's floor over the trigger log (the change log's backfill_floor_sql
 * and the source's backfill_floor). */
void sqlq_pg_backfill_floor_sql(sqlq_sql_text *q, const sqlq_catalog_names *n, bool *param);
sqlq_result sqlq_pg_backfill_floor(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out,
                                   bool *out_txn, sqlq_error *err);

/* pg_setup.c: the dialect's setup_warn (a role named like sqlq's schema). */
void sqlq_pg_setup_warn(sqlq_db *db);

/* pg_log_source.c: the trigger log as a change source. */
extern const sqlq_change_source_ops sqlq_pg_log_source;

#endif
