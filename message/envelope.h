/* envelope: writes the messages sqlq publishes for changes (docs/messages.md): the row, batch
 * and functions shapes, the read shape of `sqlq backfill` (op read), and the poison envelope.
 * msg_parse.h reads them back. */
#ifndef SQLQ_ENVELOPE_H
#define SQLQ_ENVELOPE_H

#include "codec.h"
#include "msg_change.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Message shapes: one JSON object per change (row), {"changes": [...]} packed under the size
 * limit (batch), or the Azure Functions SQL trigger payload [{"Operation", "Item"}] (functions). */
typedef enum {
    SQLQ_FORMAT_ROW = 0,
    SQLQ_FORMAT_BATCH = 1,
    SQLQ_FORMAT_FUNCTIONS = 2
} sqlq_envelope_format;

/* What to do with a change whose message would exceed the size limit: send it without its
 * before image ("before_truncated") when that fits, else the key only, marked "truncated"
 * (default), or send it to the poison queue. */
typedef enum { SQLQ_OVERSIZE_TRUNCATE = 0, SQLQ_OVERSIZE_POISON = 1 } sqlq_oversize_policy;

bool sqlq_envelope_format_parse(const char *name, sqlq_envelope_format *out); /* row|batch|functions */
const char *sqlq_envelope_format_name(sqlq_envelope_format f);
bool sqlq_oversize_policy_parse(const char *name, sqlq_oversize_policy *out); /* truncate|poison */
const char *sqlq_oversize_policy_name(sqlq_oversize_policy p);

typedef struct sqlq_envelope_config {
    const char *bridge_name; /* "default" */
    const char *table;       /* the table name as configured */
    sqlq_envelope_format format;
    sqlq_oversize_policy oversize;
    sqlq_encoding encoding;  /* the queue client's: sizes are checked after encoding */
    size_t max_text;         /* limit on the encoded text; SQLQ_MESSAGE_MAX_TEXT */
} sqlq_envelope_config;

void sqlq_envelope_config_default(sqlq_envelope_config *c);

/* The idempotency id: the first 32 hex digits of SHA-256 over
 *   bridge_name NUL table NUL canonical-key-JSON NUL decimal-version
 * where canonical-key-JSON is sqlq_envelope_canonical_key(key). The same change gets the same
 * id on every redelivery, from any instance. out must hold 33 bytes. */
/* The key as the id hashes it: sorted keys, no whitespace, \u escapes in lower-case hex (RFC 8785,
 * Python json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)). malloc'd;
 * NULL when out of memory. */
char *sqlq_envelope_canonical_key(const json_t *key);

SQLQ_NODISCARD sqlq_result sqlq_envelope_id(const char *bridge_name, const char *table,
                                            const json_t *key, int64_t version, char out[33],
                                            sqlq_error *err);

/* ISO 8601 UTC with milliseconds ("2024-05-01T12:00:00.123Z"); out must hold 25 bytes. */
void sqlq_envelope_format_ts(int64_t epoch_ms, char out[25]);

typedef enum { SQLQ_DEST_MAIN = 0, SQLQ_DEST_POISON = 1 } sqlq_envelope_dest;

/* One message to put: its JSON text (before encoding), where it goes and which changes (indexes
 * into the array given to build) it carries. Every change is carried by exactly one message. */
typedef struct sqlq_envelope {
    sqlq_envelope_dest dest;
    char *body;
    size_t len;
    size_t *changes;
    size_t nchanges;
    bool truncated; /* at least one change went out key-only */
} sqlq_envelope;

typedef struct sqlq_envelope_list {
    sqlq_envelope *items;
    size_t count;
} sqlq_envelope_list;

void sqlq_envelope_list_free(sqlq_envelope_list *l);

/* Build the messages for changes[0..n) published at ts_ms. Row mode: one message per change;
 * batch and functions: as many changes per message as fit under max_text, in order. A change too
 * large alone goes without its before image ("before_truncated") when that fits, else key-only
 * ("truncated"), or, by policy, to the poison queue; a change whose
 * key-only form is still too large always goes to poison. Appends to out.
 * A read (backfill) change is the row-shape object with "row" written last, after "ts", as
 * backfill has always written it; the functions shape writes it as Operation 1 (an upsert). */
SQLQ_NODISCARD sqlq_result sqlq_envelope_build(const sqlq_envelope_config *cfg,
                                               const sqlq_msg_change *changes, size_t n,
                                               int64_t ts_ms, sqlq_envelope_list *out,
                                               sqlq_error *err);

/* Append one poison message for change ch, recorded as carrying change number index:
 * {"sqlq_poison":1, "reason": reason, "message": M} (poison_envelope.h) where M is the message
 * that change alone would have been sent as (key-only when that would not fit under max_text,
 * and never above the service limit SQLQ_MESSAGE_MAX_TEXT). */
SQLQ_NODISCARD sqlq_result sqlq_envelope_add_poison(const sqlq_envelope_config *cfg,
                                                    const sqlq_msg_change *ch, size_t index,
                                                    const char *reason, int64_t ts_ms,
                                                    sqlq_envelope_list *out, sqlq_error *err);

#endif
