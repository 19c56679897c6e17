/* buf: a growable byte buffer with a hard size cap, and a non-owning slice for parsing. */
#ifndef SQLQ_BUF_H
#define SQLQ_BUF_H

#include "result.h"

#include <stddef.h>

/* Always NUL-terminated when data != NULL (the terminator is not counted in len).
 * On any failure the buffer is freed and reset (curl's dynbuf): callers need no cleanup path. */
typedef struct sqlq_buf {
    char *data;
    size_t len;
    size_t alloc;
    size_t cap; /* maximum len; 0 = SQLQ_BUF_DEFAULT_CAP */
} sqlq_buf;

#define SQLQ_BUF_DEFAULT_CAP ((size_t)64 * 1024 * 1024)

typedef struct sqlq_slice {
    const char *ptr;
    size_t len;
} sqlq_slice;

/* cap 0 means SQLQ_BUF_DEFAULT_CAP (64 MiB): pass a literal 0 for "default" only, never a
 * computed capacity that can reach 0 (queue/endpoint.c's build_path once wrote past its
 * buffer that way). */
void sqlq_buf_init(sqlq_buf *b, size_t cap);
void sqlq_buf_free(sqlq_buf *b);
void sqlq_buf_reset(sqlq_buf *b); /* len = 0, memory kept */
SQLQ_NODISCARD sqlq_result sqlq_buf_add(sqlq_buf *b, const void *data, size_t len);
SQLQ_NODISCARD sqlq_result sqlq_buf_adds(sqlq_buf *b, const char *s);
SQLQ_NODISCARD sqlq_result sqlq_buf_addc(sqlq_buf *b, char c);
SQLQ_NODISCARD sqlq_result sqlq_buf_printf(sqlq_buf *b, const char *fmt, ...) SQLQ_PRINTF(2, 3);
/* Hand the contents over (never NULL on success: "" for an empty buffer); b is reset. */
char *sqlq_buf_take(sqlq_buf *b, size_t *out_len);
const char *sqlq_buf_str(const sqlq_buf *b); /* "" when empty */

sqlq_slice sqlq_slice_of(const char *s);
bool sqlq_slice_eq(sqlq_slice s, const char *lit);
bool sqlq_slice_ieq(sqlq_slice s, const char *lit);
char *sqlq_slice_dup(sqlq_slice s); /* NUL-terminated copy, NULL on OOM */

#endif
