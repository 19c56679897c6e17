/* poison_match: what `sqlq poison requeue` moves and what --where compares, read from the
 * message's exact bytes. A change the bridge poisoned is an envelope only sqlq writes
 * (message/poison_envelope.h) and goes back as the exact bytes of its "message"; everything
 * else moves byte-identical.
 * Numbers compare by value, so 19.99, 1.999e1 and 19.990 are equal and integers beyond 64
 * bits compare exactly; nothing is parsed into a double and printed again. */
#ifndef SQLQ_POISON_MATCH_H
#define SQLQ_POISON_MATCH_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the JSON object body[0..len) has a top-level field equal to value: a string field
 * equals value as text, a number equals value when value is a JSON number of the same value,
 * true / false / null and objects / arrays when written exactly the same. For a sqlq envelope
 * the fields are those of its message, plus the envelope's "reason". */
bool sqlq_poison_match_where(const char *body, size_t len, const char *field, const char *value);

/* Whether two JSON number texts have the same value (false when either is not a number). */
bool sqlq_poison_match_number_equal(const char *a, size_t alen, const char *b, size_t blen);

#endif
