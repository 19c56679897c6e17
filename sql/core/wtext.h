/* wtext: UTF-8 <-> UTF-16 (SQLWCHAR) for drivers whose narrow calls follow the client code page. */
#ifndef SQLQ_WTEXT_H
#define SQLQ_WTEXT_H

#include "buf.h"
#include "result.h"

#include <stddef.h>
#include <stdint.h>

/* UTF-8 (len bytes, must be valid) to UTF-16 code units in native byte order, NUL-terminated;
 * *out is malloc'd, *out_units excludes the terminator. SQLQ_E_PARSE on invalid UTF-8. */
SQLQ_NODISCARD sqlq_result sqlq_wtext_from_utf8(const char *s, size_t len, uint16_t **out,
                                                size_t *out_units);
/* UTF-16 code units (native byte order) appended to out as UTF-8; a lone surrogate becomes
 * U+FFFD. */
SQLQ_NODISCARD sqlq_result sqlq_wtext_to_utf8(const uint16_t *w, size_t units, sqlq_buf *out);

#endif
