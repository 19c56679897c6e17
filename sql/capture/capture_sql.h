/* capture_sql: the statements of change capture (poll, release, renew, abandon, advance,
 * status, state and leases tables) for each dialect and source, as pure text builders.
 *
 * Sources: a change log (sqlq's log table, latest version and op per key, kept by triggers)
 * or the database's own change tracking; each describes its SQL in a sqlq_capture_log_sql
 * (sql/<database>/). All expose per key the latest version and operation, so one algorithm
 * serves all. Parameters are `?` markers;
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
    SQLQ_P_TOKEN_BASE, /* reserve_tokens: first lease token of this poll minus one (int64) */
    SQLQ_P_TOKENS,     /* JSON array of lease tokens (text) */
    SQLQ_P_LOCK,       /* lock key of this (bridge, table): text the source's lock statement takes */
    SQLQ_P_NOW,        /* now_param: the current time in ms (int64), one value per poll */
    SQLQ_P_SYNC,       /* sync_param: the stored sync version, read by `bounds` (int64) */
    SQLQ_P_HORIZON,    /* horizon: the highest final version (int64) */
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

typedef struct sqlq_capture_builder sqlq_capture_builder; /* capture_sql_builder.h */

/* The SQL of one leased source (change_source.h): how its changes read, as traits the shared
 * builder follows, and the statements it writes its own way. Each database's folder provides
 * its own; the shared builder (capture_sql*.c) never asks which database it writes for. */
typedef struct sqlq_capture_log_sql {
    /* ---- the changes relation, aliased c */
    const char *version_col; /* "c.sqlq_version" */
    const char *op_col;      /* "c.sqlq_op" */
    /* The FROM item of the changes (as c); NULL: sqlq's change log of the table. */
    void (*changes_from)(sqlq_capture_builder *b);
    /* Written first in a statement that reads changes (what changes_from needs); NULL: none. */
    void (*prelude)(sqlq_capture_builder *b);
    /* The source keeps changes itself, not in a log of sqlq's: its changes relation holds only
     * changes after the sync version, with the operation relative to it; there is no log row
     * to trim, resume in, describe, or read an image from. */
    bool tracked;
    bool sync_param;  /* reads bind the stored sync version (SQLQ_P_SYNC), read under the lock
                       * by the source's own statement, not a subquery (a planner that knows
                       * the range) */
    bool horizon;     /* reads stop at the read horizon (SQLQ_P_HORIZON: pg_horizon.h) */
    bool typed_keys;  /* key parameters are cast to the key's declared types (unknown types:
                       * no resumed reads) */
    bool resume_max;  /* a resumed read bounds the version by one max() of the resume position
                       * and the sync version (a planner that ranges an index by the first of
                       * two lower bounds only) */
    bool now_param;   /* the current time is a parameter (SQLQ_P_NOW) from the caller's clock,
                       * not the database's */
    bool reserve_tokens;  /* lease tokens come from the counter table, reserved per poll */
    bool tokens_outside;  /* lease tokens are numbered outside the limited batch (a server that
                           * computes a window over every row before LIMIT) */
    bool on_duplicate_key; /* upserts are INSERT … ON DUPLICATE KEY UPDATE, not ON CONFLICT */
    bool unstamped;        /* log rows are written with version 0 and versioned later (stamped
                            * by the poll): those count as pending too */
    const char *direct;    /* prefix of a statement returning one row so that it is sent as it
                            * is ("" when nothing is needed) */
    const char *count_all; /* "count(*)" or the server's 64-bit count */
    int source_objects;    /* sqlq_capture_sql_source_objects */

    /* ---- statements and parts the source writes (NULL: the shared form, or none) */
    /* The whole poll as one statement (lease NULL); NULL: a select and a lease statement. */
    sqlq_result (*poll)(sqlq_capture_builder *b, sqlq_error *err);
    /* The lock of this (bridge, table); NULL: none (a serial writer's BEGIN serialises). */
    sqlq_result (*lock)(sqlq_capture_builder *b, sqlq_error *err);
    /* The advance scan's row (sqlq_capture_sql_advance_scan); NULL: the shared one. */
    sqlq_result (*advance_scan)(sqlq_capture_builder *b, sqlq_error *err);
    /* Delete log rows every bridge of the table has passed; NULL: nothing to trim. */
    sqlq_result (*trim_log)(sqlq_capture_builder *b, sqlq_error *err);
    /* After " WHERE owner = ? AND sqlq_token ": the token is one of the JSON array
     * SQLQ_P_TOKENS ("IN (SELECT … FROM json_each(?))"). */
    void (*tokens_in)(sqlq_capture_builder *b);
    /* The leases table's DDL (table and index); NULL: the shared CREATE … IF NOT EXISTS. */
    sqlq_result (*leases_ddl)(sqlq_capture_builder *table, sqlq_capture_builder *index,
                              char *const *types, sqlq_error *err);
    /* The state row's insert when missing; NULL: the shared one. */
    sqlq_result (*state_init)(sqlq_capture_builder *b, sqlq_error *err);
    /* The start version for SQLQ_START_NOW, and for SQLQ_START_BEGINNING (NULL: 0). */
    void (*start_now)(sqlq_capture_builder *b);
    void (*start_beginning)(sqlq_capture_builder *b);
    /* Scalar subqueries: the table's primary key now, the unique index's key now (table_key.h;
     * NULL: no such keys), and how many objects feed the source (sqlq_capture_sql_key_stmt). */
    void (*key_expr)(sqlq_capture_builder *b);
    void (*unique_key_expr)(sqlq_capture_builder *b);
    void (*source_objects_expr)(sqlq_capture_builder *b);
    /* The status's m_held (changes committed above the horizon); NULL: 0. */
    void (*held)(sqlq_capture_builder *b);
    /* With changed on a tracked source: its changed-column columns (m_call, m_c<i>). */
    void (*changed_columns)(sqlq_capture_builder *b);
} sqlq_capture_log_sql;

typedef struct sqlq_capture_sql {
    const sqlq_dialect *dialect;
    const sqlq_capture_log_sql *log_sql; /* the source's SQL */
    const sqlq_table *table; /* canonical name, columns, key */
    const sqlq_catalog_names *names;
    int max_batch_size;
    int lease_s;
    int max_attempts;
    char *const *key_types; /* declared type of each key part (typed_keys), or NULL */
    const char *where;      /* NULL, or the route's predicate on the current row r: m_row 2 */
    bool changed;            /* change log: m_chg (the log's changed-column map), m_dv; tracked
                              * source: its changed_columns */
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
 * table's primary key now, as sqlq_capture_sql_key_stmt reads it), then r.*: every column of
 * the current row as the table has them when the statement runs (NULL when there is none). */
#define SQLQ_CAPTURE_KEY_NOW "m_key"
/* Prefix of the poll's exact-value columns after r.* (m_fix<i>: column i of the description). */
#define SQLQ_CAPTURE_FIXUP "m_fix"

/* CREATE the leases table (+ token index) if missing. `types`: key column declarations. */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_leases_ddl(const sqlq_capture_sql *c,
                                                       char *const *types,
                                                       sqlq_capture_stmt *out_table,
                                                       sqlq_capture_stmt *out_index,
                                                       sqlq_error *err);
/* The lock of this (bridge, table), as the source's `lock` writes it (a transaction-scoped
 * advisory or application lock, a locked state row); sql NULL when the source has none (a
 * serial writer's BEGIN already serialises). */
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_lock(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                                 sqlq_error *err);
/* Poll. A source with a `poll` of its own: one statement that selects, leases and returns the
 * batch (lease NULL). Otherwise `select` returns the batch, `lease` upserts the same rows (same
 * WHERE, same order, same lock); with reserve_tokens, tokens come from `reserve` (run first,
 * returns the base). */
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
/* The key statement. One row: m_key, the table's primary key now as the source's key_expr
 * writes it (names and types in key order, or the catalog's column numbers and operator
 * classes), NULL when it has none; m_src, how many of the objects feeding the change source
 * are there and enabled (source_objects_expr: sqlq's triggers on the table, or the database's
 * change tracking on it), which must be sqlq_capture_sql_source_objects. Read when the capture opens and on polls that return
 * nothing; m_key is also compared with the m_key of every poll. */
#define SQLQ_CAPTURE_SOURCE_OBJECTS "m_src"
int sqlq_capture_sql_source_objects(const sqlq_capture_sql *c);
SQLQ_NODISCARD sqlq_result sqlq_capture_sql_key_stmt(const sqlq_capture_sql *c,
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
