/* msg_change: one change as a message carries it (docs/messages.md): what happened to which
 * key, the row, and its version. The writer (envelope.h) takes these; the reader
 * (msg_parse.h) gives them back. */
#ifndef SQLQ_MSG_CHANGE_H
#define SQLQ_MSG_CHANGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* What happened to the row. 0..2 are also the Azure Functions SQL trigger's "Operation";
 * read is a row as `sqlq backfill` read it (a snapshot). */
typedef enum {
    SQLQ_OP_INSERT = 0,
    SQLQ_OP_UPDATE = 1,
    SQLQ_OP_DELETE = 2,
    SQLQ_OP_READ = 3
} sqlq_op;

const char *sqlq_op_name(sqlq_op op); /* "insert" | "update" | "delete" | "read" */
bool sqlq_op_parse(const char *name, sqlq_op *out);

/* Versions beyond ±2^53 are refused by the reader: no JSON reader holds them exactly, no
 * producer comes near them (docs/messages.md, Versions). */
#define SQLQ_MSG_VERSION_MAX 9007199254740992LL

typedef struct sqlq_msg_change {
    sqlq_op op;
    int64_t version;
    bool has_version; /* read: the row and batch shapes carry one, the functions shape none */
    bool truncated;   /* read: the message says the row did not fit (key only) */
    json_t *key;      /* primary-key column -> value (read, functions shape: NULL, the key
                       * fields are in row) */
    json_t *row;      /* every column; NULL for a delete (or a row gone since), or when
                       * truncated */
    json_t *changed;  /* update, when the route asks: names of the columns changed (array);
                       * NULL: not sent */
    json_t *before;   /* update or delete, when the route asks: the row before the change;
                       * NULL: not sent */
} sqlq_msg_change;

#endif
