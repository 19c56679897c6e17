/* status_report: what `sqlq status` reports of one database as one JSON document: per table
 * sqlq set up, its source and change log and, per bridge, the sync version, pending changes,
 * leases by owner and (PostgreSQL) the open transactions that hold delivery back; the cursor
 * sources beside. `sqlq status` prints it, `sqlq console` serves it. */
#ifndef SQLQ_STATUS_REPORT_H
#define SQLQ_STATUS_REPORT_H

#include "db.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Told of each part that could not be read (what: "registry", "cursor sources", a table, or
 * "TABLE, bridge NAME"); the document then holds what could be. */
typedef void (*sqlq_status_error_fn)(void *ctx, const char *what, const sqlq_error *err);

typedef struct sqlq_status_options {
    const char *table_key; /* only this table (its canonical key: sqlq_status_table_key) */
    const char *bridge;    /* only this bridge */
    sqlq_status_error_fn on_error;
    void *error_ctx;
} sqlq_status_options;

/* Reads of one database connection (which must outlive it). keep_open: each bridge's capture
 * stays open from one read to the next, so that "oldest_pending_age_s" (the age of the oldest
 * change the sync version has not passed, counted from the first read that saw it) is
 * reported; a one-off read (`sqlq status`) leaves it out. Not thread-safe. */
typedef struct sqlq_status_report sqlq_status_report;
SQLQ_NODISCARD sqlq_result sqlq_status_report_create(sqlq_db *db, bool keep_open,
                                                     sqlq_status_report **out, sqlq_error *err);
void sqlq_status_report_destroy(sqlq_status_report *s);

/* The document:
 *   {"tables": [{"table", "source": "change_log" | "change_tracking" | "logical", "log" (its
 *                change log, when registered), "bridges": [
 *        {"bridge", "sync_version", "pending" (leased and held back included, as
 *         sqlq_pending_changes counts them), "leased", "owners": {instance: leases},
 *         "oldest_pending_age_s" (keep_open) (a logical source: "pending" and "leased" null,
 *         not counted, the changes waiting in its slot and the bridge's memory; no
 *         "oldest_pending_age_s"; its slot's lag_bytes the measure), where open writers of a source with a horizon
 *         hold changes back: "horizon", "held_back", "blocking_transactions": [{xid, pid,
 *         application_name, database, state, age_s, gid}], a logical source's "slot": {name,
 *         active, wal_status, retained_wal_bytes, lag_bytes}, and "instances": [{bridge,
 *         instance, per_s, queues: {queue: per_s}}] (what each running instance published
 *         lately)}
 *      | {"bridge", "error", "stopped" (a permanent failure's reason: capture_stop.h), and
 *         for a change log's source "counted", with the log's "sync_version", "pending",
 *         "leased", or "count_error"} ]}],
 *    "cursor_sources": [{bridge, table, rule, owner, lease_expires_in_ms, rows_done,
 *                        cursor_value}]}
 * Tables in registry order. *out_failed: some part could not be read (on_error was told).
 * Fails only when out of memory. */
SQLQ_NODISCARD sqlq_result sqlq_status_report_read(sqlq_status_report *s,
                                                   const sqlq_status_options *o, json_t **out,
                                                   bool *out_failed, sqlq_error *err);

/* The canonical key of a table as the user named it (as state and registry rows spell it). */
SQLQ_NODISCARD sqlq_result sqlq_status_table_key(sqlq_db *db, const char *table, char *out,
                                                 size_t size, sqlq_error *err);

#endif
