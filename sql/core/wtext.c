#include "wtext.h"

#include <stdlib.h>

/* Decode one UTF-8 sequence at s (n bytes left): code point in *cp, length returned, 0 when
 * invalid (overlong, surrogate, beyond U+10FFFF, truncated). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

sqlq_result sqlq_wtext_from_utf8(const char *s, size_t len, uint16_t **out, size_t *out_units)
{
    *out = NULL;
    *out_units = 0;
    /* Never more UTF-16 units than UTF-8 bytes. */
    uint16_t *w = malloc((len + 1) * sizeof(uint16_t));
    if (!w)
        return SQLQ_E_NOMEM;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, n = 0;
    while (i < len) {
        uint32_t cp;
        size_t k = utf8_decode(p + i, len - i, &cp);
        if (k == 0) {
            free(w);
            return SQLQ_E_PARSE;
        }
        i += k;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            w[n++] = (uint16_t)(0xD800 | (cp >> 10));
            w[n++] = (uint16_t)(0xDC00 | (cp & 0x3FF));
        } else {
            w[n++] = (uint16_t)cp;
        }
    }
    w[n] = 0;
    *out = w;
    *out_units = n;
    return SQLQ_OK;
}

static sqlq_result put_utf8(sqlq_buf *out, uint32_t cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6)), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12)), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18)), b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    return sqlq_buf_add(out, b, n);
}

sqlq_result sqlq_wtext_to_utf8(const uint16_t *w, size_t units, sqlq_buf *out)
{
    for (size_t i = 0; i < units; i++) {
        uint32_t cp = w[i];
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < units && w[i + 1] >= 0xDC00 &&
            w[i + 1] <= 0xDFFF) {
            cp = 0x10000 + (((cp - 0xD800) << 10) | (uint32_t)(w[i + 1] - 0xDC00));
            i++;
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        sqlq_result r = put_utf8(out, cp);
        if (r != SQLQ_OK)
            return r;
    }
    return SQLQ_OK;
}
