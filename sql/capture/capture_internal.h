/* capture_internal: what capture.c (the running algorithm), capture_setup.c (open, close,
 * forget), capture_status.c and the leased sources (change_source.h) share. Not part of the
 * public API. */
#ifndef SQLQ_CAPTURE_INTERNAL_H
#define SQLQ_CAPTURE_INTERNAL_H

#include "capture.h"
#include "capture_backlog.h"
#include "capture_sql.h"
#include "catalog.h"
#include "change_source.h"
#include "json_int.h"

/* A position in poll order, (version, key), remembered between calls. */
typedef struct sqlq_capture_position {
    bool active;
    int64_t version;
    json_t *key; /* array of the key parts */
    uint64_t since_ms;
} sqlq_capture_position;

typedef struct sqlq_capture_values sqlq_capture_values;

/* A leased source (change_source.h): the shared lease machinery of capture.c over its SQL and
 * these hooks around it. A hook left NULL does nothing (or what its line says). */
struct sqlq_change_log_ops;

typedef struct sqlq_capture_leased {
    const sqlq_capture_log_sql *sql;
    /* The change log of sqlq's that the source reads (change_log_internal.h); NULL: none (the
     * database keeps the changes). */
    const struct sqlq_change_log_ops *change_log;
    /* SQLQ_P_LOCK binds the hashed resource name (names.lock_hash), not the text key. */
    bool lock_by_hash;
    /* A poll's SELECT and its INSERT … SELECT of leases are two statements that a writer's
     * commit between them can make differ (versions stamped after commit): the poll reads its
     * leases back by token (capture_confirm.c, cap->held) and keeps only what it leased. */
    bool confirm_leases;
    /* At open, once the statements are built: the source is set up for the table (else
     * SQLQ_E_NOT_FOUND saying what to run); its own state (cap->src) and statements. */
    sqlq_result (*check_source)(sqlq_capture *cap, const char *user_table, sqlq_error *err);
    sqlq_result (*open)(sqlq_capture *cap, sqlq_error *err);
    void (*close)(sqlq_capture *cap);
    /* With changed or before_image: the route's image, set up at open and read per change;
     * NULL: the log's (capture_image.c). */
    sqlq_result (*image_open)(sqlq_capture *cap, const sqlq_capture_config *cfg, sqlq_error *err);
    sqlq_result (*image_read)(const sqlq_capture *cap, const json_t *row, sqlq_change *c,
                              sqlq_error *err);
    /* What is missing when the objects that feed the source are gone (capture_source_gone). */
    const char *objects_gone;
    /* Before a poll's transaction (in a transaction of its own). */
    sqlq_result (*before_poll)(sqlq_capture *cap, sqlq_error *err);
    /* Before start_from now reads its start version (no transaction open): every change
     * committed so far must be at or below it (a stamped log stamps them all); NULL: nothing. */
    sqlq_result (*before_start_now)(sqlq_capture *cap, sqlq_error *err);
    /* First in a poll's transaction; NULL: the lock statement. */
    sqlq_result (*poll_lock)(sqlq_capture *cap, sqlq_capture_values *v, sqlq_error *err);
    /* After a poll that succeeded (full: it filled the batch). */
    void (*polled)(sqlq_capture *cap, const sqlq_capture_values *v, bool full);
    /* The horizon an advance reads up to (SQLQ_P_HORIZON); NULL: none. */
    int64_t (*horizon)(const sqlq_capture *cap);
    /* Status: before the shared reads, and after them (out->horizon is the sync version
     * then; the source may say more: the horizon, the writers holding changes back). */
    sqlq_result (*status_begin)(sqlq_capture *cap, sqlq_capture_values *v, sqlq_error *err);
    sqlq_result (*status_end)(sqlq_capture *cap, sqlq_capture_values *v, sqlq_capture_status *out,
                              sqlq_error *err);
} sqlq_capture_leased;

struct sqlq_capture {
    sqlq_db *db;
    const sqlq_change_source_ops *ops; /* the source */
    void *src;                         /* its state (own leases: everything; leased: its part) */
    const sqlq_capture_leased *leased; /* ops->leased */
    char *bridge;
    char *instance;
    bool allow_gap;
    sqlq_table *table;
    char *quoted_table; /* as SQL text: [dbo].[t] */
    sqlq_catalog_names names;
    sqlq_capture_sql spec;
    sqlq_capture_stmt lock, poll, lease, bump, base, pending, scan, set_sync, trim_leases,
        trim_log, release, renew, abandon_count, abandon_free, read_sync, owners, poll_resume,
        lease_resume, scan_resume, newest,
        held; /* confirm_leases: what a poll's INSERT … SELECT really leased */
    char **key_types; /* declared type of each key part */
    unsigned moves;
    /* Where the next poll resumes (sqlq_capture_sql_poll_resume): after the last change of a
     * full poll, for one sweep; a short poll, an abandon, a failure or the sweep's age (expired
     * leases of other instances lie behind it) start the next poll from the sync version. */
    sqlq_capture_position resume;
    /* Where the next advance scan starts (sqlq_capture_sql_advance_scan_resume): the first
     * unprocessed change the last scan found. */
    sqlq_capture_position scan_from;
    /* The table's shape (capture_table_shape.c): the statement reading its key, the key read at
     * open, and the columns of the row part of the last poll ([{name, type}, …]; NULL before it). */
    sqlq_capture_stmt key_stmt;
    /* The log as described at open, when the route asks for its before image (capture_image.c). */
    sqlq_table *log;
    char *key_seen;
    json_t *row_shape;
    /* The description changed since the poll statements were built (their exact-value
     * columns follow the description): rebuild them and poll again. */
    bool shape_moved;
    /* What the last poll covered (sqlq_capture_covered_version): set by the source's polled
     * hook (its horizon when the poll was short and succeeded), else INT64_MIN. */
    int64_t covered;
    /* The newest log version seen by status, with when it was first seen: the age of the
     * oldest change the sync version has not passed (a metric), to within the status period. */
    sqlq_pending_marks marks;
    uint64_t key_checked_ms; /* the last check of the key and triggers after an empty poll */
};

struct sqlq_capture_values {
    int64_t version;
    int64_t token_base;
    const char *tokens;
    int64_t now;
    int64_t sync, horizon; /* sync_param and horizon sources: read under the poll's lock */
    int64_t resume_version;   /* resumed poll */
    const json_t *resume_key; /* resumed poll: array of key parts */
};

/* capture_image.c: a route's changed columns and before image. open: the log keeps what the
 * route asks for (SQLQ_E_UNSUPPORTED naming the setup option when not), sets spec.changed,
 * spec.before and spec.log; read: c->changed and c->before from one poll row. */
sqlq_result sqlq_capture_image_open(sqlq_capture *cap, const sqlq_capture_config *cfg,
                                    sqlq_error *err);
void sqlq_capture_image_close(sqlq_capture *cap);
sqlq_result sqlq_capture_image_read(const sqlq_capture *cap, const json_t *row, sqlq_change *c,
                                    sqlq_error *err);

sqlq_result sqlq_capture_run(sqlq_capture *cap, const sqlq_capture_stmt *st,
                             const sqlq_capture_values *v, long long *out_rows, sqlq_error *err);
sqlq_result sqlq_capture_query(sqlq_capture *cap, const sqlq_capture_stmt *st,
                               const sqlq_capture_values *v, json_t **out, sqlq_error *err);
sqlq_result sqlq_capture_query_int(sqlq_capture *cap, const sqlq_capture_stmt *st,
                                   const sqlq_capture_values *v, int64_t *out, sqlq_error *err);
/* The lease tokens of changes as a JSON array (the TOKENS parameter). */
sqlq_result sqlq_capture_tokens_json(const sqlq_change *changes, size_t n, char **out, sqlq_error *err);
/* capture_confirm.c, a source with confirm_leases (cap->held): keep only the rows of `rows`
 * this poll really leased (its SELECT and its INSERT … SELECT can differ when a writer commits
 * between them);
 * leases it took for rows not returned go into *stray (malloc'd, *nstray of them), to be
 * handed back after the poll commits. Inside the poll's transaction. */
sqlq_result sqlq_capture_confirm_leases(sqlq_capture *cap, sqlq_capture_values *v, json_t *rows,
                                        sqlq_change **stray, size_t *nstray, sqlq_error *err);
/* sqlq_capture_query for a result read by position (sqlq_db_query_values). */
sqlq_result sqlq_capture_query_values(sqlq_capture *cap, const sqlq_capture_stmt *st,
                                      const sqlq_capture_values *v, json_t **out_columns,
                                      json_t **out_rows, sqlq_error *err);

/* capture_table_shape.c. The member of a poll row (as sqlq_capture_table_shape_poll gives it) holding the
 * current row: an object of the table's columns as they are now. */
#define SQLQ_CAPTURE_ROW "m_cols"
/* At open: the change log's key is the table's key (else SQLQ_E_INVALID saying to run setup
 * again), and the key as the poll's m_key reads it. */
sqlq_result sqlq_capture_table_shape_open(sqlq_capture *cap, sqlq_error *err);
void sqlq_capture_table_shape_close(sqlq_capture *cap);
/* Run a poll statement; rows as objects: the poll's own columns by name, the row's columns
 * under SQLQ_CAPTURE_ROW. A key other than at open: SQLQ_E_INVALID (not transient) naming the
 * table and what to do. Other column changes: the table is described again and followed. */
sqlq_result sqlq_capture_table_shape_poll(sqlq_capture *cap, const sqlq_capture_stmt *st,
                                    const sqlq_capture_values *v, json_t **out_rows,
                                    sqlq_error *err);
/* For polls that read nothing (one catalog statement): the key now against the one at open,
 * and the change source's objects (triggers, change tracking) still there; else SQLQ_E_INVALID
 * (not transient) saying to run setup again. */
sqlq_result sqlq_capture_table_shape_check_key(sqlq_capture *cap, sqlq_error *err);
/* The capture's change log table as the catalog describes it (sqlq_table_free). */
sqlq_result sqlq_capture_table_shape_describe_log(sqlq_capture *cap, sqlq_table **out, sqlq_error *err);
/* After a poll failed with `failed` (and was rolled back): the table described again; when
 * its key changed (a key column renamed fails the poll's join), that error replaces the SQL
 * error in err. */
sqlq_result sqlq_capture_table_shape_failed(sqlq_capture *cap, sqlq_result failed, sqlq_error *err);

/* capture_setup.c: build the poll statements again from cap->table (after it changed). */
sqlq_result sqlq_capture_rebuild_polls(sqlq_capture *cap, sqlq_error *err);
/* capture_setup.c: a leased source's check_source for sqlq's change log: installed, and not a
 * log another table writes to as well. */
sqlq_result sqlq_capture_check_log(sqlq_capture *cap, const char *user_table, sqlq_error *err);

/* capture_setup.c, for the sources' setup: the table and its key (key_columns NULL: the
 * primary key or the log's; s->usage on a failure that is the operator's; s->name its key;
 * the line "keyed by unique index" when it is one). */
sqlq_result sqlq_capture_setup_lookup(sqlq_db *db, sqlq_source_setup *s, const char *key_columns,
                                      sqlq_table **out, sqlq_catalog_names *n, sqlq_error *err);
/* A leased source's drop, first part: the table (any key), every bridge's (or
 * s->cfg->bridge_name's) sync state and leases forgotten, and the line saying so. */
sqlq_result sqlq_capture_drop_leases(sqlq_db *db, sqlq_source_setup *s, sqlq_table **out,
                                     sqlq_catalog_names *n, sqlq_error *err);

#endif
