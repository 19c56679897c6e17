/* logical_txn: one transaction's changes of a table as they arrive, collapsed to one per key
 * (the latest state), kept as the pgoutput messages themselves (in memory up to a bound, then
 * in an unlinked temporary file), so a transaction of any size costs little memory. */
#ifndef SQLQ_LOGICAL_TXN_H
#define SQLQ_LOGICAL_TXN_H

#include "buf.h"
#include "msg_change.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A change handed to the route: the message's key, row, before and changed (owned). */
typedef struct sqlq_logical_change {
    sqlq_op op;
    json_t *key;
    json_t *row;     /* NULL for a delete */
    json_t *before;  /* NULL when not asked for or unknown */
    json_t *changed; /* NULL when not asked for or unknown */
    bool fetch_row;  /* a value came as 'u' with nothing to fill it: read the row by key */
} sqlq_logical_change;

void sqlq_logical_change_free(sqlq_logical_change *c);

/* Which change of its message an entry is: an update that changes the key is a delete of the
 * old key and an insert of the new one. */
typedef enum {
    SQLQ_LOGICAL_WHOLE = 0,
    SQLQ_LOGICAL_OLD_KEY_DELETE,
    SQLQ_LOGICAL_NEW_KEY_INSERT
} sqlq_logical_part;

typedef struct sqlq_logical_entry {
    sqlq_op op;              /* merged over the transaction's changes of the key */
    sqlq_logical_part part;
    uint64_t off;            /* the message's bytes in the store */
    size_t len;
    const void *rel;         /* the relation description it was sent under (caller's) */
    json_t *changed;         /* merged changed columns (owned); NULL: not asked for or unknown */
} sqlq_logical_entry;

/* In memory up to this many bytes of messages, then in a temporary file. */
#define SQLQ_LOGICAL_TXN_MEM_MAX ((size_t)4 * 1024 * 1024)

typedef struct sqlq_logical_txn {
    uint64_t commit_lsn;    /* the version of every change of it */
    int64_t commit_time_us; /* since 2000-01-01, as pgoutput sends it */
    sqlq_logical_entry *items;
    size_t count, cap;
    json_t *index;          /* canonical key text → position in items */
    char *mem;              /* the first SQLQ_LOGICAL_TXN_MEM_MAX bytes of messages */
    size_t mem_len, mem_cap;
    FILE *spill;            /* the rest (tmpfile: gone when closed) */
    uint64_t spill_len;
} sqlq_logical_txn;

void sqlq_logical_txn_init(sqlq_logical_txn *t, uint64_t commit_lsn, int64_t commit_time_us);
void sqlq_logical_txn_clear(sqlq_logical_txn *t); /* frees what it holds; ready for init */

/* Add one change of the transaction: the message (len bytes, copied), which part of it, its
 * key as canonical text, its op, and the columns it changed (taken; NULL: not asked for or
 * unknown). A key seen before in the transaction replaces that entry in place: delete if this
 * one is a delete, insert if either is an insert or the earlier one a delete (the row was
 * created in the transaction), update otherwise; changed is the union (unknown if either is).
 * SQLQ_E_NOMEM / SQLQ_E_IO (the temporary file) on failure. */
SQLQ_NODISCARD sqlq_result sqlq_logical_txn_add(sqlq_logical_txn *t, const char *msg, size_t len,
                                                const char *canon_key, sqlq_op op,
                                                sqlq_logical_part part, const void *rel,
                                                json_t *changed);
/* The message of entry i, into out (replacing its content). */
SQLQ_NODISCARD sqlq_result sqlq_logical_txn_read(const sqlq_logical_txn *t, size_t i,
                                                 sqlq_buf *out);

#endif
