/* capture_sql: the statements of change capture (poll, release, renew, abandon, advance,
 * status, state and leases tables) for each dialect and source, as pure text builders.
 *
 * Sources: the change log (SQLite, PostgreSQL: sqlq log table, latest version and op per key)
 * or SQL Server change tracking (CHANGETABLE(CHANGES t, @sync)). Both expose per key the
 * latest version and operation, so one algorithm serves both. Parameters are `?` markers;
 * each statement lists the role of every marker in order, so the caller binds by role. */
#ifndef SQLQ_CAPTURE_SQL_H
#define SQLQ_CAPTURE_SQL_H

#include "capture.h"
#include "catalog.h"
#include "result.h"
#include "table.h"

#include <stdbool.h>

typedef enum {
    SQLQ_P_BRIDGE = 0, /* bridge name (text) */
    SQLQ_P_TABLE,      /* canonical table key (text) */
    SQLQ_P_OWNER,      /* instance id (text) */
    SQLQ_P_VERSION,    /* a version (int64) */
    SQLQ_P_TOKEN_BASE, /* SQLite: first lease token of this poll minus one (int64) */
    SQLQ_P_TOKENS,     /* JSON array of lease tokens (text) */
    SQLQ_P_LOCK,       /* lock key: PostgreSQL advisory-lock text, SQL Server app-lock resource */
    SQLQ_P_NOW,        /* SQLite only: the current time in ms (int64), one value per poll */
    SQLQ_P_SYNC,       /* PostgreSQL poll: the stored sync version, read by `bounds` (int64) */
    SQLQ_P_HORIZON,    /* PostgreSQL: the highest final version (capture_horizon.h) (int64) */
    SQLQ_P_RESUME_VERSION, /* resumed poll: version of the last change of the previous poll */
    SQLQ_P_RESUME_KEY      /* resumed poll: its key part i is role SQLQ_P_RESUME_KEY + i */
} sqlq_capture_param;

/* Key parts a resumed poll binds at most (larger keys always poll from the sync version). */
#define SQLQ_CAPTURE_RESUME_MAX_KEY 6

#define SQLQ_CAPTURE_MAX_PARAMS 16

typedef struct sqlq_capture_stmt {
    char *sql; /* NULL: nothing to run for this dialect */
    sqlq_capture_param params[SQLQ_CAPTURE_MAX_PARAMS];
    size_t nparams;
} sqlq_capture_stmt;

void sqlq_capture_stmt_free(sqlq_capture_stmt *s);

typedef struct sqlq_capture_sql {
    const sqlq_dialect *dialect;
    bool change_tracking; /* CHANGETABLE (SQL Server) instead of a change-log table */
    const sqlq_table *table; /* canonical name, columns, key */
    const sqlq_catalog_names *names;
    int max_batch_size;
    int lease_s;
    int max_attempts;
    char *const *key_types; /* declared type of each key part (PostgreSQL casts), or NULL */
    const char *where;      /* NULL, or the route's predicate on the current row r: m_row 2 */
    bool changed;            /* change log: m_chg (the log's changed-column map), m_dv; change
                              * tracking: m_call, m_c<i> (SYS_CHANGE_COLUMNS) */
    bool before;             /* change log: m_b<i>, m_bf<i> (before image) */
    const sqlq_table *log;   /* with before: the log as described (which columns it mirrors) */
} sqlq_capture_sql;

/* With changed: the log row's changed-column map (change_log_options.h) and the version this
 * bridge delivered of the key (its sync version, or a released lease at a newer version). */
#define SQLQ_CAPTURE_CHANGED "m_chg"
#define SQLQ_CAPTURE_DELIVERED "m_dv"
/* With changed on change tracking: 1 when SYS_CHANGE_COLUMNS is NULL (every column), and per
 * column i whether it is in the mask. */
#define SQLQ_CAPTURE_CT_ALL "m_call"
#define SQLQ_CAPTURE_CT_COLUMN "m_c"
/* With before: column i of the table's before image, and its exact form when it needs one. */
#define SQLQ_CAPTURE_BEFORE "m_b"
#define SQLQ_CAPTURE_BEFORE_FIX "m_bf"

/* Result columns of poll, read by position (sqlq_db_query_values): k0..k<nkey-1> (key, in key
 * order), m_v (version), m_op ('I','U', 'D'), m_att (attempts counting this delivery, capped
 * at max_attempts + 1), m_tok (lease token), m_row (1 when the current row exists, 2 when it exists but fails `where`), m_key (the
 * table's primary key now, as sqlq_capture_sql_key_shape reads it), then r.*: every column of
 * the current row as the table has them when the statement runs (NULL when there is none). */
#define SQLQ_CAPTURE_KEY_SHAPE "m_key"
/* Prefix of the poll's exact-value columns after r.* (m_fix<i>: column i of the description). */
#define SQLQ_CAPTURE_FIXUP "m_fix"

/* CREATE the leases table (+ token index) if missing. `types`: key column declarations. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_leases_ddl(const sqlq_capture_sql *c,
                                                       char *const *types,
                                                       sqlq_capture_stmt *out_table,
                                                       sqlq_capture_stmt *out_index,
                                                       sqlq_error *err);
/* The lock of this (bridge, table): PostgreSQL advisory xact lock, SQL Server app lock;
 * SQLite none (sql NULL: BEGIN IMMEDIATE already serialises writers). */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_lock(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                                 sqlq_error *err);
/* Poll. PostgreSQL and SQL Server: one statement that selects, leases and returns the batch
 * (lease NULL). SQLite: `select` returns the batch, `lease` upserts the same rows (same WHERE,
 * same order, same write lock); tokens come from `reserve` (run first, returns the base). */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_poll(const sqlq_capture_sql *c, sqlq_capture_stmt *select,
                                                 sqlq_capture_stmt *lease, sqlq_error *err);
/* The same poll resumed after the last change the previous one leased: only changes after
 * (version, key) = (SQLQ_P_RESUME_VERSION, SQLQ_P_RESUME_KEY + i...) in poll order. Changes of
 * one version (SQLite: one statement, however large) stay after the sync version
 * until all are processed; a poll from the sync version walks past every one already leased,
 * so draining a bulk load was quadratic. Change log only (sql NULL for change tracking, and
 * for keys of more than SQLQ_CAPTURE_RESUME_MAX_KEY parts or, on PostgreSQL, unknown types). */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_poll_resume(const sqlq_capture_sql *c,
                                                        sqlq_capture_stmt *select,
                                                        sqlq_capture_stmt *lease, sqlq_error *err);
/* One row: m_key, the table's primary key now (SQLite, SQL Server: "name type, …" in key
 * order; PostgreSQL: its column numbers and operator classes), NULL when it has none; m_src, how many of the objects feeding the
 * change source are there and enabled (SQLite: sqlq's 4 triggers on the table; PostgreSQL:
 * its trigger; SQL Server: change tracking on the table), which must be
 * sqlq_capture_sql_source_objects. Read when the capture opens and on polls that return
 * nothing; m_key is also compared with the m_key of every poll. */
#define SQLQ_CAPTURE_SOURCE_OBJECTS "m_src"
int sqlq_capture_sql_source_objects(const sqlq_capture_sql *c);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_key_shape(const sqlq_capture_sql *c,
                                                      sqlq_capture_stmt *out, sqlq_error *err);
/* PostgreSQL: step 2 of a horizon observation (capture_horizon.h), and the stored sync
 * version, under the lock just before the poll, which takes the sync version as a parameter:
 * the planner then knows how many log rows lie in the range and walks the version index in
 * order up to the batch limit, where subqueries in the range left it guessing 0.5% of the log
 * and sorting all of it (a poll cost grew with the backlog). Rows: m_sync, m_pid, m_xid, one
 * per holder of the log's ROW EXCLUSIVE lock but this session (m_pid NULL: a prepared
 * transaction; m_xid NULL: no transaction id, hence no version), or one row with both NULL.
 * Without with_writers: m_sync only (an observation that needs no lock holders, see
 * sqlq_capture_writers_observe). Other dialects: sql NULL. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_bounds(const sqlq_capture_sql *c, bool with_writers,
                                                   sqlq_capture_stmt *out, sqlq_error *err);
/* PostgreSQL: step 1 of a horizon observation, m_seq (the last version handed out), with
 * the poll's lock first (m_lock) when with_lock: one round trip. Other dialects: sql NULL. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_sequence(const sqlq_capture_sql *c, bool with_lock,
                                                     sqlq_capture_stmt *out, sqlq_error *err);
/* Change log: one row, m_newest (the log's largest version, NULL when empty) and m_held
 * (PostgreSQL: changes after the sync version above the SQLQ_P_HORIZON parameter, committed
 * but not yet readable; SQLite: 0). Change tracking: sql NULL. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_newest(const sqlq_capture_sql *c,
                                                   sqlq_capture_stmt *out, sqlq_error *err);
/* SQLite: reserve max_batch_size lease tokens: an UPDATE, then a SELECT of the base. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_reserve(const sqlq_capture_sql *c,
                                                    sqlq_capture_stmt *bump,
                                                    sqlq_capture_stmt *base, sqlq_error *err);
/* COUNT of changes poll would return without a batch limit. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_pending(const sqlq_capture_sql *c,
                                                    sqlq_capture_stmt *out, sqlq_error *err);
/* One row: m_sync (stored sync version), m_unproc (smallest version after it still
 * unprocessed, NULL if none), m_max (largest version after it, NULL if none); change log: also
 * u0..u<nkey-1>, the key of that first unprocessed change in poll order. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_advance_scan(const sqlq_capture_sql *c,
                                                         sqlq_capture_stmt *out, sqlq_error *err);
/* The same scan from a known position on, (version, key) >= (SQLQ_P_RESUME_VERSION,
 * SQLQ_P_RESUME_KEY + i...): the first unprocessed change found by an earlier scan. Every
 * change before it was processed then and stays so (a released change becomes pending again
 * only as a newer version, later in the log), so the scan need not walk past them again: a
 * bulk load of one version made each advance walk every change already delivered. sql NULL
 * where sqlq_capture_sql_poll_resume is. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_advance_scan_resume(const sqlq_capture_sql *c,
                                                                sqlq_capture_stmt *out,
                                                                sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_set_sync(const sqlq_capture_sql *c,
                                                     sqlq_capture_stmt *out, sqlq_error *err);
/* Delete released lease rows at or below a version. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_trim_leases(const sqlq_capture_sql *c,
                                                        sqlq_capture_stmt *out, sqlq_error *err);
/* Change log only: delete log rows every bridge of the table has synced past. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_trim_log(const sqlq_capture_sql *c,
                                                     sqlq_capture_stmt *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_release(const sqlq_capture_sql *c,
                                                    sqlq_capture_stmt *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_renew(const sqlq_capture_sql *c,
                                                  sqlq_capture_stmt *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_abandon(const sqlq_capture_sql *c, bool count_attempt,
                                                    sqlq_capture_stmt *out, sqlq_error *err);
/* Insert the state row when missing (sync version = the VERSION parameter). */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_state_init(const sqlq_capture_sql *c,
                                                       sqlq_capture_stmt *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_read_sync(const sqlq_capture_sql *c,
                                                      sqlq_capture_stmt *out, sqlq_error *err);
/* The version a new state row starts from. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_start_version(const sqlq_capture_sql *c,
                                                          sqlq_start_from from,
                                                          sqlq_capture_stmt *out,
                                                          sqlq_error *err);
/* Rows (owner, n) of unexpired leases. */
/* MariaDB/MySQL: the key and token of each lease this instance holds among the TOKENS
 * parameter: what a poll really leased (its SELECT and its INSERT … SELECT are two statements
 * that a user's commit in between can make differ). */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_held(const sqlq_capture_sql *c,
                                                 sqlq_capture_stmt *out, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_owners(const sqlq_capture_sql *c,
                                                   sqlq_capture_stmt *out, sqlq_error *err);

#endif
