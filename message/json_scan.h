/* json_scan: JSON text read without parsing it into values: the members of an object as the
 * exact bytes of their keys and values, so a reader can hand on a value byte-identical
 * (nothing is parsed into a double or re-printed). */
#ifndef SQLQ_JSON_SCAN_H
#define SQLQ_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_json_member {
    const char *key; /* raw key bytes, without the quotes (escapes not decoded) */
    size_t key_len;
    const char *value; /* raw value bytes */
    size_t value_len;
} sqlq_json_member;

/* The members of the object text[0..len) (at most max; *n = count). False when the text is not
 * exactly one JSON object (trailing bytes, bad syntax, nesting deeper than 512) or has more
 * than max members. */
bool sqlq_json_scan_members(const char *text, size_t len, sqlq_json_member *out, size_t max,
                            size_t *n);

/* Whether text[0..len) is exactly one JSON value (RFC 8259, UTF-8, nesting at most 512 deep)
 * whatever its numbers: 1e400 and a 30-digit integer are JSON, though no double or int64 holds
 * them. Strings are checked for UTF-8 and their escapes, never decoded. */
bool sqlq_json_scan_value(const char *text, size_t len);

/* Whether s[0..len) is exactly one JSON number (RFC 8259). */
bool sqlq_json_scan_number(const char *s, size_t len);

/* Whether the member's raw key is exactly key (no escapes). */
bool sqlq_json_member_is(const sqlq_json_member *m, const char *key);

#endif
