/* json_text: the compact JSON text of a Jansson value, byte for byte what json_dumps(v,
 * JSON_COMPACT | JSON_ENCODE_ANY [| JSON_SORT_KEYS]) writes, appended to a buffer without
 * json_dumps' bookkeeping (a hash table per call and an entry per container). */
#ifndef SQLQ_JSON_TEXT_H
#define SQLQ_JSON_TEXT_H

#include "buf.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>

/* Append v's text to b. sort_keys: object members in JSON_SORT_KEYS' order (bytewise, a
 * shorter key first), else in the object's own order. SQLQ_E_INVALID where json_dumps fails
 * too (a string that is not valid UTF-8, nesting deeper than SQLQ_JSON_TEXT_MAX_DEPTH, NULL);
 * on any failure b is freed (buf.h). */
#define SQLQ_JSON_TEXT_MAX_DEPTH 2048
SQLQ_NODISCARD sqlq_result sqlq_json_text_add(sqlq_buf *b, const json_t *v, bool sort_keys);

/* Append the JSON string of the n bytes at s (as json_dumps writes a string value). */
SQLQ_NODISCARD sqlq_result sqlq_json_text_add_string(sqlq_buf *b, const char *s, size_t n);

/* The text as a malloc'd string (free()), its length in *out_len (may be NULL); NULL on any
 * failure, as json_dumps. */
char *sqlq_json_text(const json_t *v, bool sort_keys, size_t *out_len);

#endif
