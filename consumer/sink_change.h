/* sink_change: a change message as the --sql sink reads it (docs/messages.md), checked against
 * the target table before anything is written. The sink trusts nothing in the message, and
 * tells two kinds of refusal apart (docs/consumer.md):
 *  - a defect of the message itself, which no retry and no change to the table can cure: not
 *    JSON (or not UTF-8, or with \u0000), duplicate JSON fields, not one of the shapes, no
 *    "key", a version that is not an integer or is implausibly far ahead, a row or batch change
 *    without a version, a row whose key columns disagree with its key, a truncated insert or
 *    update. SQLQ_E_REJECTED: the consumer poisons it at once.
 *  - a change that does not fit the table: a column the table lacks, key columns that are not
 *    its primary key, a key value spelled otherwise than its column's type. SQLQ_E_INVALID:
 *    the usual failure path (retried, poisoned after the usual attempts), since the operator
 *    may change the table and requeue. */
#ifndef SQLQ_SINK_CHANGE_H
#define SQLQ_SINK_CHANGE_H

#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { SQLQ_SINK_UPSERT, SQLQ_SINK_DELETE } sqlq_sink_change_kind;

typedef struct sqlq_sink_change {
    sqlq_sink_change_kind kind;
    json_t *key; /* owned reference */
    json_t *row; /* borrowed from the parsed body; NULL for a delete */
    bool has_version; /* row and batch formats carry one; the Functions shape does not */
    bool read;        /* op "read": a backfill's row */
    int64_t version;
} sqlq_sink_change;

typedef struct sqlq_sink_changes {
    sqlq_sink_change *items;
    size_t n;
    json_t *root; /* the parsed body */
} sqlq_sink_changes;

/* Read one message body (msg_parse.h: versions beyond 2^53 are refused there, storing one would
 * make the sink skip every later change of its key) and check it against table t (shown: its
 * name for messages). SQLQ_E_REJECTED: a defect of the message; SQLQ_E_INVALID: it does not
 * fit the table (see the file comment). Nothing here touches the database, so a database that
 * is down can never make a message look defective. */
SQLQ_NODISCARD sqlq_result sqlq_sink_changes_parse(const sqlq_table *t, const char *shown,
                                                   const char *body, size_t len,
                                                   sqlq_sink_changes *out, sqlq_error *err);
void sqlq_sink_changes_free(sqlq_sink_changes *l);

/* A key object as a message carries it, checked against table t and made canonical (the
 * table's column names, integers as numbers): what the sink binds and the version guard hashes.
 * SQLQ_E_INVALID when it is not t's key. */
SQLQ_NODISCARD sqlq_result sqlq_sink_key_canonical(const sqlq_table *t, const char *shown,
                                                   json_t *key, json_t **out, sqlq_error *err);

/* The value the key object holds for column col (NULL when absent). */
json_t *sqlq_sink_key_value(const sqlq_table *t, json_t *key, const sqlq_column *col);

#endif
