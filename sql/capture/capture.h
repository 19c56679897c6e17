/* capture: one watched table's changes, leased for delivery (the CHANGETABLE algorithm). */
#ifndef SQLQ_CAPTURE_H
#define SQLQ_CAPTURE_H

#include "db.h"
#include "msg_change.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    SQLQ_SOURCE_AUTO = 0,       /* change tracking on SQL Server, change log elsewhere */
    SQLQ_SOURCE_CHANGE_TRACKING, /* SQL Server CHANGETABLE(CHANGES …) */
    SQLQ_SOURCE_CHANGE_LOG,      /* trigger-maintained log installed by sqlq setup */
    SQLQ_SOURCE_CURSOR,          /* read-only polling on a monotonic column (sql/cursor_source.h) */
    SQLQ_SOURCE_LOGICAL          /* PostgreSQL logical decoding: a replication slot streamed with
                                  * pgoutput (sql/postgres/logical_source.h) */
} sqlq_source_kind;

typedef enum { SQLQ_START_BEGINNING = 0, SQLQ_START_NOW = 1 } sqlq_start_from;

typedef struct sqlq_capture_config {
    const char *bridge_name;   /* namespace of state and leases ("default") */
    const char *table;         /* as the user wrote it */
    const char *instance_id;   /* owner written into leases: host:pid:random */
    sqlq_source_kind source;
    int max_batch_size;        /* 100 */
    int lease_s;               /* 60 */
    int max_attempts;          /* 5: after that a change is handed back as poison */
    sqlq_start_from start_from;
    bool allow_retention_gap;  /* SQL Server: continue (and say so) when retention overran */
    bool quiet;                /* no capture_opened line: a second handle of the same route */
    bool require_state;        /* the bridge's state row and leases table must exist (a route
                                * reopening): when they are gone (sqlq setup --drop) open fails
                                * with reason state_gone instead of starting afresh */
    const char *key_columns;   /* NULL: the primary key (or the change log's key); else the
                                * columns of a unique index ("a,b"): table_key.h */
    const char *where;         /* NULL, or a predicate on the current row (alias r) that the poll
                                * evaluates: sqlq_change.unmatched (change log, change tracking) */
    bool changed;              /* sqlq_change.changed on updates: the log must keep them (sqlq
                                * setup --track-columns), else SQLQ_E_UNSUPPORTED at open */
    bool before_image;         /* sqlq_change.before on updates and deletes: sqlq setup
                                * --before-image, else SQLQ_E_UNSUPPORTED at open */
    bool skip_truncate;        /* SQLQ_SOURCE_LOGICAL: a TRUNCATE of the table is skipped with a
                                * warning; false: it stops the route before it (table_truncated) */
    /* SQLQ_SOURCE_CURSOR only: */
    const char *cursor_column;      /* monotonic integer, timestamp or version column, NOT NULL */
    const char *soft_delete_column; /* rows with it set (non-NULL, non-false) publish as deletes */
    int safety_lag_ms;              /* read only rows with cursor < now - lag; -1: default */
} sqlq_capture_config;

void sqlq_capture_config_default(sqlq_capture_config *c);

/* sqlq_op (insert, update, delete; read is backfill's) is the message's: msg_change.h. */

typedef struct sqlq_change {
    sqlq_op op;
    int64_t version;  /* change version (CT version, or change-log version) */
    int attempts;     /* attempts including this one (1 on first delivery) */
    json_t *key;      /* object: primary-key column → value */
    json_t *row;      /* object: current row, or NULL for a delete (or a row gone since) */
    bool unmatched;   /* with where: the current row exists but does not satisfy it */
    json_t *changed;  /* with changed, on an update: array of the names of the columns changed
                       * since what this bridge delivered of the key; NULL when unknown */
    json_t *before;   /* with before_image, on an update or delete: the row before the key's
                       * latest change (as row is encoded); NULL when unknown */
    int64_t lease_token; /* fencing token of this delivery's lease (change log and change
                          * tracking): release, renew and abandon match on it together with
                          * instance_id, so copy it along with the change */
} sqlq_change;

typedef struct sqlq_change_batch {
    sqlq_change *items;
    size_t count;
    bool full; /* count == max_batch_size: poll again at once */
    uint64_t held_back_ms; /* cursor source: rows its safety lag holds back become readable in
                            * this many ms (0: none known); --once waits for them */
} sqlq_change_batch;

void sqlq_change_batch_free(sqlq_change_batch *b);

typedef struct sqlq_capture sqlq_capture;

/* Describe the table, check the source is set up (change log installed, or change tracking
 * enabled), create the state and leases tables if missing, and initialise sync state per
 * start_from. The db must stay open for the capture's life; use one capture per connection. */
SQLQ_NODISCARD sqlq_result sqlq_capture_open(sqlq_db *db, const sqlq_capture_config *cfg,
                                             sqlq_capture **out, sqlq_error *err);
void sqlq_capture_close(sqlq_capture *cap);
/* Everything sqlq_capture_open verifies (the table and its key, the change log or change
 * tracking, the cursor column) without creating or changing anything: for `sqlq config check`. */
SQLQ_NODISCARD sqlq_result sqlq_capture_check(sqlq_db *db, const sqlq_capture_config *cfg,
                                              sqlq_error *err);
const sqlq_table *sqlq_capture_table(const sqlq_capture *cap);

/* One transaction under a lock for this (bridge, table) only: up to max_batch_size changes
 * after the sync version whose lease is free (never leased, released at an older version, or
 * expired), in (version, key) order; leases them for lease_s to this instance with a new
 * lease_token. attempts = 1 for a new version, previous + 1 for a redelivery, capped at
 * max_attempts + 1: attempts > max_attempts means "route to poison" (never dropped). */
SQLQ_NODISCARD sqlq_result sqlq_capture_poll(sqlq_capture *cap, sqlq_change_batch *out,
                                             sqlq_error *err);
/* PostgreSQL change logs: after a poll that succeeded and was not full, its read horizon: every
 * version at or below it that will ever commit was visible to that poll, which took each one
 * whose lease was free (a wake-up's arm compares the version sequence with it, pg_arm.h).
 * INT64_MIN after a full or failed poll, before the first, for other sources, and for NULL. */
int64_t sqlq_capture_covered_version(const sqlq_capture *cap);
/* false when the source's leases never expire (change_source.h: leases_never_expire): a
 * route need not renew them. true for NULL. */
bool sqlq_capture_leases_expire(const sqlq_capture *cap);
/* Extend the leases of changes still in flight (only rows this instance still owns). */
SQLQ_NODISCARD sqlq_result sqlq_capture_renew(sqlq_capture *cap, const sqlq_change *changes,
                                              size_t n, sqlq_error *err);
/* renew, and *out_lost (optional) counts changes whose lease this instance no longer holds
 * (another instance re-leased them after ours expired): stop working on those. */
SQLQ_NODISCARD sqlq_result sqlq_capture_renew_owned(sqlq_capture *cap, const sqlq_change *changes,
                                                    size_t n, size_t *out_lost, sqlq_error *err);
/* Mark changes delivered (the queue accepted them, or they went to poison). Only leases this
 * instance still holds (owner and lease_token match) are released: *out_lost (optional)
 * counts the others (re-leased by another instance after ours expired). One round trip. */
SQLQ_NODISCARD sqlq_result sqlq_capture_release(sqlq_capture *cap, const sqlq_change *changes,
                                                size_t n, size_t *out_lost, sqlq_error *err);
/* Give changes back without delivery so they can be retried at once (lease expired now);
 * when count_attempt is false (a transient failure: queue down) the attempt is not counted:
 * the next delivery carries the same attempts. */
SQLQ_NODISCARD sqlq_result sqlq_capture_abandon(sqlq_capture *cap, const sqlq_change *changes,
                                                size_t n, bool count_attempt, sqlq_error *err);
/* Advance the sync version by the safe rule (no change at or below it still unprocessed)
 * and delete lease rows at or below it. out_version (optional) receives the sync version. */
SQLQ_NODISCARD sqlq_result sqlq_capture_advance(sqlq_capture *cap, int64_t *out_version,
                                                sqlq_error *err);

/* This instance works on the table (capture_presence.h): seen until now + lease_s, or with
 * `leaving` (a clean stop) no longer. Nothing for the cursor source. */
SQLQ_NODISCARD sqlq_result sqlq_capture_presence(sqlq_capture *cap, bool leaving,
                                                 sqlq_error *err);

/* What this instance published lately (capture_presence.h): per_s changes a second, queues
 * {"queue": per_s, …}, shown by `sqlq status` until now + ttl_s. Every source. */
SQLQ_NODISCARD sqlq_result sqlq_capture_rate(sqlq_capture *cap, double per_s, const char *queues,
                                             int ttl_s, sqlq_error *err);

/* Forget the capture state of one table: drop the leases tables and delete the state and
 * presence rows of one bridge (bridge_name) or of every bridge (NULL). The change log itself
 * stays (see sqlq_change_log_drop). *out_bridges (optional) counts the bridges forgotten. */
SQLQ_NODISCARD sqlq_result sqlq_capture_forget(sqlq_db *db, const char *table,
                                               const char *bridge_name, size_t *out_bridges,
                                               sqlq_error *err);

/* `sqlq setup` of one table (change_source.h: sqlq_source_setup says what, and receives the
 * lines to print): install what the configured source needs (cfg->source), or remove it with
 * every bridge's sync state and leases (with cfg->bridge_name: only that bridge's). */
struct sqlq_source_setup;
SQLQ_NODISCARD sqlq_result sqlq_capture_install(sqlq_db *db, struct sqlq_source_setup *s,
                                                sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_capture_uninstall(sqlq_db *db, struct sqlq_source_setup *s,
                                                  sqlq_error *err);
/* Why the database's source of `kind` refuses --before-image (NULL: it does not), for setup's
 * check before it connects to each table. */
const char *sqlq_capture_no_before_image(sqlq_db *db, sqlq_source_kind kind);

typedef struct sqlq_capture_status {
    int64_t sync_version;
    long long pending;      /* changes not yet delivered, leased ones included; with held_back
                             * what an autoscaler reads (`sqlq status`, sqlq_pending_changes) */
    long long leased;       /* leases currently held */
    json_t *owners;         /* object: instance id → leases held */
    /* Change log: */
    int64_t horizon;        /* PostgreSQL: every version up to this is final (readable) now;
                             * elsewhere the sync version */
    long long held_back;    /* PostgreSQL: changes committed above the horizon, waiting for the
                             * open transactions in `writers` to end */
    json_t *writers;        /* PostgreSQL: array of open transactions that wrote the change log
                             * and hold delivery back, oldest first: {xid, pid (0: prepared),
                             * application_name, database, state, age_s, gid}; NULL elsewhere */
    double oldest_pending_age_s; /* age of the oldest change the sync version has not passed,
                                  * measured from when this process first saw it (0: none) */
    /* Logical source (sync_version is the confirmed LSN): */
    bool logical;
    char slot[64];               /* the replication slot */
    bool slot_active;            /* a session (this or another instance) streams from it */
    bool slot_holder;            /* this instance does */
    char wal_status[16];         /* the slot's wal_status: lost means a retention overrun */
    int64_t retained_wal_bytes;  /* WAL the slot keeps on the server */
    int64_t lag_bytes;           /* WAL written since what the slot confirmed */
    double lag_s;                /* age of the oldest transaction received, not yet confirmed */
} sqlq_capture_status;
SQLQ_NODISCARD sqlq_result sqlq_capture_status_get(sqlq_capture *cap, sqlq_capture_status *out,
                                                   sqlq_error *err);
void sqlq_capture_status_free(sqlq_capture_status *s);

#endif
