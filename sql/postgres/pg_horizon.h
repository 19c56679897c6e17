/* pg_horizon: the trigger log's safe read horizon, from the transactions that
 * hold the log's ROW EXCLUSIVE lock, remembered across polls (pure: no I/O).
 *
 * The trigger takes its version (a sequence) only once its transaction holds that lock, which
 * it keeps to its end. A poll (1) reads the sequence's last value s, then (2) the writers W
 * holding the lock, identified by their top transaction id (stable through PREPARE
 * TRANSACTION; a holder without one has no version). A writer with a version <= s locked the
 * log before (1): if it is not in W it has ended, and its commit was visible before its lock
 * was released (CommitTransaction: ProcArrayEndTransaction, then the locks). Every version of
 * a writer first seen in W is above the s of the previous observation (it took the lock
 * after that one's step 2) and above the sync version (every advance waited for it). So:
 *   horizon = min(s, bound(w) for w in W), bound(w) = max(s of the last observation before w
 *   appeared, sync version at that time); in a new process the "previous s" is the sync
 *   version. A statement whose snapshot is taken after step 2 sees every version <= horizon
 *   that will ever commit. */
#ifndef SQLQ_PG_HORIZON_H
#define SQLQ_PG_HORIZON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQLQ_HORIZON_XID_MAX 24

/* A lock holder seen by one observation. */
typedef struct sqlq_horizon_writer {
    char xid[SQLQ_HORIZON_XID_MAX]; /* top transaction id, as text */
    int pid;                        /* 0: a prepared transaction */
    int64_t bound;                  /* every version it holds is above this */
    uint64_t first_seen_ms;         /* when this process first saw it */
} sqlq_horizon_writer;

typedef struct sqlq_horizon {
    bool observed;                /* at least one observation */
    int64_t last_s;               /* s of the last observation */
    int64_t value;                /* the horizon of the last observation */
    sqlq_horizon_writer *writers; /* W of the last observation */
    size_t count, capacity;
} sqlq_horizon;

void sqlq_horizon_init(sqlq_horizon *h);
void sqlq_horizon_free(sqlq_horizon *h);

/* One observation: s (step 1), sync (the stored sync version), the writers of step 2 (xid
 * text and pid; entries without an xid are skipped). Returns the new horizon, or INT64_MIN
 * when out of memory (the caller then reads nothing: sync is always safe). */
int64_t sqlq_horizon_observe(sqlq_horizon *h, int64_t s, int64_t sync,
                             const sqlq_horizon_writer *seen, size_t n, uint64_t now_ms);

/* The writer holding the horizon back (the smallest bound below the last s), or NULL. */
const sqlq_horizon_writer *sqlq_horizon_blocker(const sqlq_horizon *h);

#endif
