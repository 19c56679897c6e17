#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void sqlq_buf_init(sqlq_buf *b, size_t cap)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap = cap ? cap : SQLQ_BUF_DEFAULT_CAP;
}

void sqlq_buf_free(sqlq_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
}

void sqlq_buf_reset(sqlq_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static sqlq_result buf_reserve(sqlq_buf *b, size_t extra)
{
    if (b->cap == 0)
        b->cap = SQLQ_BUF_DEFAULT_CAP;
    if (extra > b->cap || b->len > b->cap - extra) {
        sqlq_buf_free(b);
        return SQLQ_E_TOO_LARGE;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->alloc)
        return SQLQ_OK;
    size_t n = b->alloc ? b->alloc : 64;
    while (n < need)
        n *= 2;
    if (n > b->cap + 1)
        n = b->cap + 1;
    char *p = realloc(b->data, n);
    if (!p) {
        sqlq_buf_free(b);
        return SQLQ_E_NOMEM;
    }
    b->data = p;
    b->alloc = n;
    return SQLQ_OK;
}

sqlq_result sqlq_buf_add(sqlq_buf *b, const void *data, size_t len)
{
    sqlq_result r = buf_reserve(b, len);
    if (r != SQLQ_OK)
        return r;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return SQLQ_OK;
}

sqlq_result sqlq_buf_adds(sqlq_buf *b, const char *s)
{
    return sqlq_buf_add(b, s, strlen(s));
}

sqlq_result sqlq_buf_addc(sqlq_buf *b, char c)
{
    return sqlq_buf_add(b, &c, 1);
}

sqlq_result sqlq_buf_printf(sqlq_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sqlq_buf_free(b);
        return SQLQ_E_INVALID;
    }
    sqlq_result r = buf_reserve(b, (size_t)n);
    if (r != SQLQ_OK)
        return r;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return SQLQ_OK;
}

char *sqlq_buf_take(sqlq_buf *b, size_t *out_len)
{
    char *p = b->data;
    if (out_len)
        *out_len = b->len;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    return p;
}

const char *sqlq_buf_str(const sqlq_buf *b)
{
    return b->data ? b->data : "";
}

sqlq_slice sqlq_slice_of(const char *s)
{
    sqlq_slice sl = {s, s ? strlen(s) : 0};
    return sl;
}

bool sqlq_slice_eq(sqlq_slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

bool sqlq_slice_ieq(sqlq_slice s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && strncasecmp(s.ptr, lit, n) == 0;
}

char *sqlq_slice_dup(sqlq_slice s)
{
    char *p = malloc(s.len + 1);
    if (!p)
        return NULL;
    memcpy(p, s.ptr, s.len);
    p[s.len] = '\0';
    return p;
}
