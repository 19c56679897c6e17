/* poison: tools for poison queues: move messages back (requeue), export them to JSON lines
 * and import them again. Every move is put-then-delete: a crash can duplicate a message,
 * never lose one. Every run reports what it did, what may have been done (in flight when it
 * stopped) and what remains, so that the caller can tell the operator the truth. */
#ifndef SQLQ_POISON_H
#define SQLQ_POISON_H

#include "codec.h"
#include "queue_client.h"
#include "result.h"
#include "stop.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Called now and then with the count so far (for a progress line on a terminal). */
typedef void (*sqlq_poison_progress_fn)(void *ctx, unsigned long long done);

/* How long a stopped run keeps making the messages it looked at visible again before it
 * leaves the rest to their visibility timeout (and says until when). */
#define SQLQ_POISON_RESTORE_ON_STOP_MS 2000

/* What became of one message a run matched (told through sqlq_poison_outcome_fn). */
typedef enum sqlq_poison_outcome {
    SQLQ_POISON_MOVED = 0,     /* put to the target, then deleted from the source */
    SQLQ_POISON_WOULD_MOVE,    /* dry run: would have been moved (or deleted) */
    SQLQ_POISON_LEFT,          /* the service refused this message (too large): it stays */
    SQLQ_POISON_UNCERTAIN,     /* put but not deleted, or a put that may have landed: it may
                                * be in both queues (a rerun moves it again) */
    SQLQ_POISON_NOT_DONE,      /* the run stopped (outage, stop request) at this message: it
                                * stays in the source */
    SQLQ_POISON_DELETED,       /* sqlq_poison_delete: deleted */
} sqlq_poison_outcome;

/* "moved", "would_move", "left", "uncertain", "not_done", "deleted". */
const char *sqlq_poison_outcome_name(sqlq_poison_outcome o);

/* Told of each matched message as its fate is known; err is the failure (NULL when none). */
typedef void (*sqlq_poison_outcome_fn)(void *ctx, const char *id, sqlq_poison_outcome what,
                                       const sqlq_error *err);

typedef struct sqlq_requeue_options {
    bool all;               /* every message (else ids or where must be given) */
    const char *const *ids; /* move these message ids */
    size_t nids;
    const char *where_field;  /* move messages whose decoded body has this top-level field */
    const char *where_value;  /* equal to this (poison_match.h: numbers by value; a sqlq
                               * envelope is matched by its message, plus "reason") */
    const char *contains;     /* with where_field or alone: messages whose decoded body (or,
                               * when it does not decode, the text as stored) contains this
                               * text, compared byte for byte */
    bool dry_run;             /* count what would move; nothing is put or deleted */
    bool peek;                /* with dry_run: the queue holds at most 32 messages, so peek
                               * (nothing changes) instead of receiving */
    unsigned long long limit; /* move at most this many; 0 = no limit */
    int visibility_s;         /* how long a received message stays hidden (30) */
    int64_t started;          /* epoch s: messages inserted later are left alone, counted as
                               * arrived (0 = now, the run waiting for the next second) */
    sqlq_encoding encoding;   /* to decode bodies for where */
    const sqlq_stop *stop;
    sqlq_poison_progress_fn progress;
    void *progress_ctx;
    sqlq_poison_outcome_fn outcome; /* optional: each matched message's fate */
    void *outcome_ctx;
} sqlq_requeue_options;

typedef struct sqlq_poison_counts {
    unsigned long long seen;      /* distinct messages looked at */
    unsigned long long matched;   /* that matched the selection */
    unsigned long long moved;     /* put to the target and deleted from the source (or, with
                                   * --dry-run, that would have been); export: lines written */
    unsigned long long failed;    /* matched but could not be moved (left in the source) */
    unsigned long long arrived;   /* requeue: inserted after the run started, left alone */
    unsigned long long uncertain; /* may have been done: put but not deleted (a rerun moves
                                   * it again), exported but not deleted, or an import batch
                                   * in flight when the run stopped */
    unsigned long long deleted;   /* export --delete: deleted after their line was synced */
    unsigned long long held;      /* still hidden by this run when it returned */
    int64_t held_until;           /* epoch s when the last of those is visible again */
    long long remaining;          /* approximate messages left in the source; -1 unknown */
    long long at_start;           /* requeue: approximate messages in the source just before
                                   * `started`; -1 unknown */
    bool peeked;                  /* dry run answered by a peek: nothing changed */
    bool interrupted;             /* the stop flag ended the run early */
    unsigned long long next_line; /* import: the first line not known to be imported */
    unsigned long long refused_line; /* import: the first line the service refused (0: none) */
    int64_t started;              /* requeue: the second the run started (epoch s) */
} sqlq_poison_counts;

void sqlq_requeue_options_default(sqlq_requeue_options *o);

/* Move matching messages from `from` (the poison queue) to `to`: put the same MessageText
 * (a sqlq envelope: the exact bytes of its message), never expiring, then delete the
 * original. Only messages inserted up to o->started (whole seconds, as the service keeps
 * them) are moved; later ones are counted as arrived, so a run ends even while a consumer
 * keeps poisoning what it moves. out->at_start is the source's approximate count just before
 * the run started: the run has covered its messages when it looked at that many inserted up
 * to `started` (seen - arrived). Messages that do not match are made visible again before it returns. `to` is
 * created when missing. A failure of the service (every retry of a request failed, or an
 * authorization failure) stops the run with that error; a message the service refuses
 * (too large) counts as failed and the run goes on. Safe to run again. */
SQLQ_NODISCARD sqlq_result sqlq_poison_requeue(sqlq_queue_client *c, const char *from,
                                               const char *to, const sqlq_requeue_options *o,
                                               sqlq_poison_counts *out, sqlq_error *err);

/* Delete the messages of `queue` that o selects (all, ids, where_field, contains; limit,
 * started, dry_run, peek, stop and outcome as for requeue; `to` has no part), each after
 * receiving it, so a message that is not matched is only hidden for o->visibility_s and made
 * visible again before it returns. moved counts what was deleted. Safe to run again. */
SQLQ_NODISCARD sqlq_result sqlq_poison_delete(sqlq_queue_client *c, const char *queue,
                                              const sqlq_requeue_options *o,
                                              sqlq_poison_counts *out, sqlq_error *err);

/* export --delete: a message whose line is in the file but which was not deleted: it is still
 * in the queue (maybe false: the run stopped before deleting it, or the service refused the
 * delete), or may be (maybe true: its delete was in flight when the run stopped, or its answer
 * was lost). */
typedef void (*sqlq_export_kept_fn)(void *ctx, const char *id, bool maybe);

typedef struct sqlq_export_options {
    bool delete_after;        /* delete each message once its line is flushed and fsync'ed */
    sqlq_export_kept_fn kept; /* optional: each exported message not deleted (delete_after) */
    void *kept_ctx;
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
 * dequeue_count is the count before this export's own receive. Lines are written a batch at
 * a time; when a write fails (disk full) the file is cut back to the end of the last whole
 * line, so it never holds a cut line, and nothing of that batch is deleted. Without
 * delete_after the messages are made visible again at the end. */
SQLQ_NODISCARD sqlq_result sqlq_poison_export(sqlq_queue_client *c, const char *queue, FILE *f,
                                              const sqlq_export_options *o, sqlq_poison_counts *out,
                                              sqlq_error *err);

/* Put every line's "text" verbatim into `queue` (created when missing), never expiring; a line
 * with only a "body" string is encoded with the client's encoding. A UTF-8 byte order mark
 * and blank lines are skipped. The whole file is checked first: a line that is not such an
 * object, or whose text the service would refuse (over 64 KiB once encoded, characters XML
 * cannot carry), fails the import with its line number before anything is put (a pipe is kept
 * in a temporary file for that). A line the service refuses all the same is logged
 * (poison.import_refused, with its line number) and stops the import there. */
SQLQ_NODISCARD sqlq_result sqlq_poison_import(sqlq_queue_client *c, FILE *f, const char *queue,
                                              const sqlq_stop *stop,
                                              sqlq_poison_progress_fn progress, void *progress_ctx,
                                              sqlq_poison_counts *out, sqlq_error *err);

/* The body field of an export line / the JSON of a message for `poison show`: the decoded
 * text as a JSON string when it is UTF-8, {"$base64": …} when not, null when undecodable. */
json_t *sqlq_poison_body_json(sqlq_encoding e, const char *text, size_t len);

/* ---- shared by poison.c and poison_file.c ---- */

/* Messages a run holds hidden: id -> latest pop receipt. */
typedef struct sqlq_poison_held sqlq_poison_held;
sqlq_poison_held *sqlq_poison_held_create(void);
/* Remember m (added: *out_added); restore: make it visible again at the end. */
SQLQ_NODISCARD sqlq_result sqlq_poison_held_put(sqlq_poison_held *h, const sqlq_message *m,
                                                bool restore, bool *out_added);
/* Forget m's receipt: it is gone (moved, deleted). */
void sqlq_poison_held_drop(sqlq_poison_held *h, const char *id);
/* Make what is to be restored visible again now; when *stop is set, for at most
 * SQLQ_POISON_RESTORE_ON_STOP_MS; after an outage (failed) not at all: each request would
 * spend the whole retry budget. What stays hidden is counted in out->held / held_until. */
void sqlq_poison_held_restore(sqlq_queue_client *c, const char *queue, sqlq_poison_held *h,
                              const sqlq_stop *stop, bool failed,
                              sqlq_poison_counts *out);
void sqlq_poison_held_destroy(sqlq_poison_held *h);

/* Whether a failure belongs to one message (it stays; the run goes on) rather than to the
 * service or the credential (the run stops: an outage is not the message's fault). */
bool sqlq_poison_message_fault(const sqlq_error *e);

#endif
