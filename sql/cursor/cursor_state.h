/* cursor_state: the checkpoint and fenced lease of one cursor poller or backfill, kept in one
 * row (bridge_name, table_name) of sqlq's table cursor_state (sqlq.cursor_state where the
 * database has schemas, sqlq_cursor_state where it has none; see catalog.h for the layout). */
#ifndef SQLQ_CURSOR_STATE_H
#define SQLQ_CURSOR_STATE_H

#include "db.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQLQ_CURSOR_STATE_OBJECT "cursor_state" /* bare name for sqlq_catalog_object */

/* Where a reader has got to: the last (cursor, key) tuple of the last committed batch. */
typedef struct sqlq_checkpoint {
    char *cursor_value; /* checkpoint form (integer or ISO 8601 text); NULL: none. Backfill:
                         * the floor of the last committed page (backfill.h), in decimal */
    json_t *key;        /* JSON array of the key values in checkpoint form; NULL: nothing yet */
    int64_t batch_id;   /* batches committed so far */
    int64_t rows_done;  /* rows committed so far */
    int64_t run_id;     /* backfill: epoch ms when this run started (message versions) */
    bool finished;      /* backfill: every row was published */
} sqlq_checkpoint;

void sqlq_checkpoint_clear(sqlq_checkpoint *cp); /* frees the fields and zeroes them */
SQLQ_NODISCARD sqlq_result sqlq_checkpoint_copy(sqlq_checkpoint *dst, const sqlq_checkpoint *src);

typedef struct sqlq_lease_info {
    char owner[256];    /* "" when nobody holds it */
    int64_t token;      /* fencing token: + 1 at every take-over */
    int64_t expires_ms; /* database clock, ms since the epoch */
    int64_t now_ms;     /* the database clock when read */
} sqlq_lease_info;

typedef struct sqlq_cursor_state sqlq_cursor_state;

/* Create the state table if missing and the (bridge, table) row if missing. owner identifies
 * this instance (host:pid:random; NULL makes one). Lease times use the database clock, so
 * instances on different hosts agree. db must outlive the handle. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_open(sqlq_db *db, const char *bridge,
                                                  const char *table, const char *owner,
                                                  int lease_ms, sqlq_cursor_state **out,
                                                  sqlq_error *err);
void sqlq_cursor_state_close(sqlq_cursor_state *st);
const char *sqlq_cursor_state_owner(const sqlq_cursor_state *st);

/* Leader: renew the lease. Otherwise take it when it is free or expired (token + 1) and load
 * the checkpoint into out_cp (optional); *out_leader false while another owner's lease lives. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_acquire(sqlq_cursor_state *st, bool *out_leader,
                                                     sqlq_checkpoint *out_cp, sqlq_error *err);
/* Extend the lease; SQLQ_E_LEASE_LOST (and no longer leader) when owner or token changed. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_renew(sqlq_cursor_state *st, sqlq_error *err);
/* Extend the lease held by this owner id, without knowing the token: for a second handle of
 * the same instance (the bridge renews leases from its own thread and connection). Safe because
 * it never moves the checkpoint and an owner id is unique to one process; SQLQ_E_LEASE_LOST
 * when the owner no longer holds it. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_renew_owner(sqlq_cursor_state *st, sqlq_error *err);
/* Store cp and extend the lease, as one compare-and-set the database executes:
 *   UPDATE … WHERE lease_owner = me AND lease_token = my token AND batch_id <= cp->batch_id
 * 0 rows: SQLQ_E_LEASE_LOST, nothing written, no longer leader. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_commit(sqlq_cursor_state *st,
                                                    const sqlq_checkpoint *cp, sqlq_error *err);
/* Forget the checkpoint (backfill --restart); needs the lease. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_reset(sqlq_cursor_state *st, int64_t run_id,
                                                   sqlq_error *err);
/* Let the lease expire now so a standby takes over at once (graceful stop). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_resign(sqlq_cursor_state *st, sqlq_error *err);
bool sqlq_cursor_state_leader(const sqlq_cursor_state *st);
int64_t sqlq_cursor_state_token(const sqlq_cursor_state *st);

/* The stored row as it is now (either output optional). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_read(sqlq_cursor_state *st, sqlq_checkpoint *out_cp,
                                                  sqlq_lease_info *out_lease, sqlq_error *err);

/* Forget the checkpoints of table_key (of one bridge, or of all when bridge is NULL): for
 * `sqlq setup --drop --source cursor`. *out_removed counts them (0 when there is no state
 * table at all). */
SQLQ_NODISCARD sqlq_result sqlq_cursor_state_forget(sqlq_db *db, const char *table_key,
                                                    const char *bridge, long long *out_removed,
                                                    sqlq_error *err);

/* host:pid:random, for owners and instance ids. */
void sqlq_cursor_state_default_owner(char *out, size_t size);

#endif
