/* logical_txn: one committed transaction's changes of a table, collapsed to one per key (the
 * latest state), as the logical source hands them to the route. */
#ifndef SQLQ_LOGICAL_TXN_H
#define SQLQ_LOGICAL_TXN_H

#include "msg_change.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlq_logical_change {
    sqlq_op op;
    json_t *key;     /* owned */
    json_t *row;     /* owned; NULL for a delete */
    json_t *before;  /* owned; NULL when not asked for or unknown */
    json_t *changed; /* owned; NULL when not asked for or unknown */
    bool fetch_row;  /* a value came as 'u' with nothing to fill it: read the row by key */
} sqlq_logical_change;

typedef struct sqlq_logical_txn {
    uint64_t commit_lsn;     /* the version of every change of it */
    int64_t commit_time_us;  /* since 2000-01-01, as pgoutput sends it */
    sqlq_logical_change *items;
    size_t count, cap;
    json_t *index;           /* canonical key text → position in items */
    size_t bytes;            /* what its pgoutput messages took (the caller counts) */
} sqlq_logical_txn;

void sqlq_logical_txn_init(sqlq_logical_txn *t, uint64_t commit_lsn, int64_t commit_time_us);
void sqlq_logical_txn_clear(sqlq_logical_txn *t); /* frees what it holds; ready for init */

/* Add a change (its references are taken, also on failure). A key seen before in the
 * transaction replaces that change in place: delete if this one is a delete, insert if either
 * is an insert or the earlier one a delete (the row was created in the transaction), update
 * otherwise; before and row are the latest; changed is the union. */
SQLQ_NODISCARD sqlq_result sqlq_logical_txn_add(sqlq_logical_txn *t, sqlq_logical_change c);

void sqlq_logical_change_free(sqlq_logical_change *c);

#endif
