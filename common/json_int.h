/* json_int: a JSON value read as a 64-bit integer, the one rule every reader of database rows,
 * state tables and service replies uses (drivers hand bigints over as text beyond 2^53). */
#ifndef SQLQ_JSON_INT_H
#define SQLQ_JSON_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* The integer a JSON value holds: a JSON integer, or a JSON string that is an optional sign
 * ('+' or '-') followed by one or more decimal digits and nothing else (no spaces, no fraction,
 * no exponent), within the range of int64_t. Anything else (NULL, null, booleans, reals,
 * other strings, out-of-range text) returns false and leaves *out unchanged. */
bool sqlq_json_int64(const json_t *v, int64_t *out);

/* The same rule for text that is not (yet) a JSON value. */
bool sqlq_json_int64_text(const char *text, int64_t *out);

#endif
