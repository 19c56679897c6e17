/* poison: tools for poison queues: move messages back (requeue), export them to JSON lines
 * and import them again. Every move is put-then-delete: a crash can duplicate a message,
 * never lose one. */
#ifndef SQLQ_POISON_H
#define SQLQ_POISON_H

#include "codec.h"
#include "queue_client.h"
#include "result.h"
#include "stop.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

/* Called now and then with the count so far (for a progress line on a terminal). */
typedef void (*sqlq_poison_progress_fn)(void *ctx, unsigned long long done);

typedef struct sqlq_requeue_options {
    bool all;               /* every message (else ids or where must be given) */
    const char *const *ids; /* move these message ids */
    size_t nids;
    const char *where_field;  /* move messages whose decoded body is a JSON object with */
    const char *where_value;  /* this top-level field equal to this (string, or number /
                               * true / false / null as written) */
    bool dry_run;             /* count what would move; nothing is put or deleted */
    unsigned long long limit; /* move at most this many; 0 = no limit */
    int visibility_s;         /* how long a received message stays hidden (30) */
    sqlq_encoding encoding;   /* to decode bodies for where */
    const sqlq_stop *stop;
    sqlq_poison_progress_fn progress;
    void *progress_ctx;
} sqlq_requeue_options;

typedef struct sqlq_poison_counts {
    unsigned long long seen;    /* distinct messages looked at */
    unsigned long long matched; /* that matched the selection */
    unsigned long long moved;   /* put to the target and deleted from the source (or, with
                                 * --dry-run, that would have been) */
    unsigned long long failed;  /* matched but could not be moved (left in the source) */
} sqlq_poison_counts;

void sqlq_requeue_options_default(sqlq_requeue_options *o);

/* Move matching messages from `from` (the poison queue) to `to`: put the same MessageText,
 * then delete the original. Messages that do not match are hidden only for visibility_s while
 * the run looks past them, and made visible again (visibility 0) before it returns. `to` is
 * created when missing. Safe to run again: what moved is gone from `from`. */
SQLQ_NODISCARD sqlq_result sqlq_poison_requeue(sqlq_queue_client *c, const char *from,
                                               const char *to, const sqlq_requeue_options *o,
                                               sqlq_poison_counts *out, sqlq_error *err);

typedef struct sqlq_export_options {
    bool delete_after;        /* delete each message once its line is flushed and fsync'ed */
    unsigned long long limit; /* 0 = all */
    int visibility_s;         /* 30 */
    sqlq_encoding encoding;   /* to decode the body field */
    const sqlq_stop *stop;
    sqlq_poison_progress_fn progress;
    void *progress_ctx;
} sqlq_export_options;

/* One JSON line per message of `queue`:
 *   {"id":…, "insertion_time":"…Z", "expiration_time":"…Z", "dequeue_count":N,
 *    "text":"MessageText as stored", "body":"decoded text" | {"$base64":"…"} | null}
 * dequeue_count is the count before this export's own receive. Without delete_after the
 * messages are made visible again at the end. fd is the file's descriptor (for fsync). */
SQLQ_NODISCARD sqlq_result sqlq_poison_export(sqlq_queue_client *c, const char *queue, FILE *f,
                                              const sqlq_export_options *o, sqlq_poison_counts *out,
                                              sqlq_error *err);

/* Put every line's "text" verbatim into `queue` (created when missing); a line with only a
 * "body" string is encoded with the client's encoding. Blank lines are skipped; a line that
 * is not such an object fails the import with its line number before anything after it. */
SQLQ_NODISCARD sqlq_result sqlq_poison_import(sqlq_queue_client *c, FILE *f, const char *queue,
                                              const sqlq_stop *stop,
                                              sqlq_poison_progress_fn progress, void *progress_ctx,
                                              sqlq_poison_counts *out, sqlq_error *err);

/* The body field of an export line / the JSON of a message for `poison show`: the decoded
 * text as a JSON string when it is UTF-8, {"$base64": …} when not, null when undecodable. */
json_t *sqlq_poison_body_json(sqlq_encoding e, const char *text, size_t len);

#endif
