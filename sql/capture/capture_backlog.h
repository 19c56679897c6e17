/* capture_backlog: what a bridge has not delivered of a table's change log, read from the log
 * alone, without opening a capture: for a route whose capture stopped (its key changed, its
 * triggers are gone) and for `sqlq status` then, so the backlog stays measured while nothing
 * is delivered. Change logs only (SQLite, PostgreSQL, MariaDB/MySQL). Also the first-seen marks
 * that give the age of the oldest change not delivered, shared with capture_status. */
#ifndef SQLQ_CAPTURE_BACKLOG_H
#define SQLQ_CAPTURE_BACKLOG_H

#include "db.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* (newest version, when first seen) at each read: the age of the oldest change after the
 * sync version, short by at most the time between two reads. */
typedef struct sqlq_pending_marks {
    struct {
        int64_t version;
        uint64_t seen_ms;
    } at[32];
    size_t n;
} sqlq_pending_marks;

/* Record this read's newest version (marks the sync version passed are done) and return the
 * seconds since the oldest change after `sync` was first seen; 0 when none waits. */
double sqlq_pending_marks_age(sqlq_pending_marks *m, int64_t newest, int64_t sync,
                              uint64_t now_ms);

typedef struct sqlq_backlog sqlq_backlog;

typedef struct sqlq_backlog_counts {
    bool have_state;      /* the bridge's state row exists */
    int64_t sync_version; /* 0 without a state row */
    long long pending;    /* changes in the log after the sync version, not released (leased ones
                           * included; MariaDB/MySQL: with those not stamped yet) */
    long long leased;     /* leases held now */
    double oldest_pending_age_s;
} sqlq_backlog_counts;

/* The table (as the user names it) and bridge: SQLQ_E_UNSUPPORTED without a change log
 * (SQL Server), SQLQ_E_NOT_FOUND when the table or its log does not exist. */
SQLQ_NODISCARD sqlq_result sqlq_backlog_open(sqlq_db *db, const char *table, const char *bridge,
                                             sqlq_backlog **out, sqlq_error *err);
/* One read (one statement); the age comes from the marks of earlier reads of this handle. */
SQLQ_NODISCARD sqlq_result sqlq_backlog_read(sqlq_backlog *b, uint64_t now_ms,
                                             sqlq_backlog_counts *out, sqlq_error *err);
void sqlq_backlog_close(sqlq_backlog *b);

#endif
