/* envelope_text: the row and batch formats' element of one change written straight as text,
 * the same bytes envelope.c's row object has as compact JSON, without building that object. */
#ifndef SQLQ_ENVELOPE_TEXT_H
#define SQLQ_ENVELOPE_TEXT_H

#include "envelope.h"

#include <stdbool.h>
#include <stddef.h>

/* The element {"id","op","table","key","row"|…,"changed","before","version","bridge","ts"}
 * (docs/messages.md) as a malloc'd string, its length in *out_len. truncated: key only, row
 * omitted, "truncated":true; no_before: the before image left out and "before_truncated":true
 * (when the change has one). NULL on failure (out of memory, a value JSON cannot carry). */
char *sqlq_envelope_text_row(const sqlq_envelope_config *cfg, const sqlq_msg_change *ch,
                             int64_t ts_ms, bool truncated, bool no_before, size_t *out_len);

#endif
