/* sink_change: a change message as the --sql sink reads it (docs/messages.md), checked against
 * the target table before anything is written. The sink trusts nothing in the message: a body
 * with duplicate JSON fields, a row whose key columns disagree with its key, a version that is
 * not an integer or is implausibly far ahead, a key that is not the table's primary key, a
 * column the table lacks and a truncated insert or update are all refused with a reason
 * (the message then takes the consumer's failure path and is poisoned after the usual
 * attempts). */
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
    int64_t version;
} sqlq_sink_change;

typedef struct sqlq_sink_changes {
    sqlq_sink_change *items;
    size_t n;
    json_t *root; /* the parsed body */
} sqlq_sink_changes;

/* Read one message body (msg_parse.h: versions beyond 2^53 are refused there, storing one would
 * make the sink skip every later change of its key) and check it against table t (shown: its
 * name for messages). SQLQ_E_PARSE: not JSON, duplicate fields, not a change message;
 * SQLQ_E_INVALID: does not fit the table or is not trustworthy (see the file comment). */
SQLQ_NODISCARD sqlq_result sqlq_sink_changes_parse(const sqlq_table *t, const char *shown,
                                                   const char *body, size_t len,
                                                   sqlq_sink_changes *out, sqlq_error *err);
void sqlq_sink_changes_free(sqlq_sink_changes *l);

/* The value the key object holds for column col (NULL when absent). */
json_t *sqlq_sink_key_value(const sqlq_table *t, json_t *key, const sqlq_column *col);

#endif
