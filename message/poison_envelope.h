/* poison_envelope: the wrapper around a change sent to {queue}-poison (docs/messages.md),
 *   {"sqlq_poison":1,"reason":"…","message":{…}}
 * written only by sqlq (envelope.h) and recognised by `sqlq poison requeue`, which puts back
 * the exact bytes of its "message"; a body that is not exactly this shape is not an envelope
 * of sqlq's and moves byte-identical. */
#ifndef SQLQ_POISON_ENVELOPE_H
#define SQLQ_POISON_ENVELOPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The marker member: an envelope sqlq wrote. */
#define SQLQ_POISON_MARKER "sqlq_poison"
/* A longer reason is cut to this many bytes less one. */
#define SQLQ_POISON_REASON_MAX 1024

/* The envelope around message (reference stolen, also on failure) as compact JSON text,
 * members in the order above; reason NULL reads "unknown". malloc'd; NULL when out of memory. */
char *sqlq_poison_envelope_write(const char *reason, json_t *message);

/* The envelope around a message given as JSON text (body[0..len), a JSON object or array),
 * keeping its exact bytes as "message": what `sqlq consume --poison-envelope` puts in
 * {queue}-poison so the handler's reason travels with the message. The body is checked as JSON
 * text (sqlq_json_scan_value), never parsed: {"a":1e400} and 30-digit integers are wrapped.
 * NULL when the body is not a JSON object or array (it then moves byte-identical) or when out
 * of memory; malloc'd, length in *out_len. */
char *sqlq_poison_envelope_wrap(const char *reason, const char *body, size_t len, size_t *out_len);

/* When body[0..len) is an envelope sqlq wrote (exactly the members sqlq_poison = 1, reason a
 * string, message an object or array, each once), *out_msg / *out_len point at the exact bytes
 * of its message inside body. */
bool sqlq_poison_envelope_read(const char *body, size_t len, const char **out_msg, size_t *out_len);

#endif
