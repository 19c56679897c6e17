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
/* pg_change_log.c: the triggers (change_log_internal.h). */
struct sqlq_log_ctx;
sqlq_result sqlq_change_log_pg_lock_table(const struct sqlq_log_ctx *c, sqlq_error *err);
sqlq_result sqlq_change_log_pg_install(const struct sqlq_log_ctx *c, sqlq_error *err);
sqlq_result sqlq_change_log_pg_trigger(const struct sqlq_log_ctx *c, bool create, sqlq_error *err);
/* The triggers and both functions (the log table stays). */
sqlq_result sqlq_change_log_pg_drop(const struct sqlq_log_ctx *c, sqlq_error *err);
/* The bare name of the row trigger's function: <log function>_row (at most 59 bytes). */
void sqlq_change_log_pg_row_function(const sqlq_catalog_names *n, char *out, size_t size);

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

/* pg_setup.c: the dialect's setup_warn (a role named like sqlq's schema). */
void sqlq_pg_setup_warn(sqlq_db *db);

/* pg_log_source.c: the trigger log as a change source. */
extern const sqlq_change_source_ops sqlq_pg_log_source;

#endif
