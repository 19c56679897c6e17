/* json_text: compact JSON text of a Jansson value, as json_dumps writes it (json_text.h). */
#include "json_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when it is not one: no
 * overlong form, no surrogate, nothing above U+10FFFF (what Jansson accepts). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
    if (p[0] < 0xC2 || p[0] > 0xF4 || n < len)
        return 0;
    uint32_t cp = p[0] & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A string: '"' and '\' escaped, control characters as \b \f \n \r \t or \u00XX (upper-case
 * hex), everything else as it is. */
static sqlq_result add_string(sqlq_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *u = (const unsigned char *)s;
    sqlq_result rc = sqlq_buf_addc(b, '"');
    size_t from = 0, i = 0;
    while (rc == SQLQ_OK && i < n) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t len = utf8_len(u + i, n - i);
            if (len == 0) {
                sqlq_buf_free(b);
                return SQLQ_E_INVALID;
            }
            i += len;
            continue;
        }
        rc = sqlq_buf_add(b, s + from, i - from);
        char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t elen = 2;
        switch (c) {
        case '"': case '\\': break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        if (rc == SQLQ_OK)
            rc = sqlq_buf_add(b, esc, elen);
        from = ++i;
    }
    if (rc == SQLQ_OK)
        rc = sqlq_buf_add(b, s + from, n - from);
    return rc == SQLQ_OK ? sqlq_buf_addc(b, '"') : rc;
}

static sqlq_result add_integer(sqlq_buf *b, json_int_t v)
{
    char d[24];
    size_t at = sizeof d;
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        d[--at] = (char)('0' + m % 10);
        m /= 10;
    } while (m);
    if (v < 0)
        d[--at] = '-';
    return sqlq_buf_add(b, d + at, sizeof d - at);
}

static int to_buf(const char *text, size_t size, void *data)
{
    return sqlq_buf_add(data, text, size) == SQLQ_OK ? 0 : -1;
}

/* A real: Jansson's own text for it (its shortest round-trip form is Jansson's to define). */
static sqlq_result add_real(sqlq_buf *b, const json_t *v)
{
    if (json_dump_callback(v, to_buf, b, JSON_COMPACT | JSON_ENCODE_ANY) == 0)
        return SQLQ_OK;
    sqlq_buf_free(b);
    return SQLQ_E_INVALID;
}

static sqlq_result add_value(sqlq_buf *b, const json_t *v, bool sort_keys, int depth);

typedef struct member {
    const char *key;
    size_t len;
    const json_t *value;
} member;

static int member_cmp(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static sqlq_result add_members(sqlq_buf *b, const member *m, size_t n, bool sort_keys, int depth)
{
    sqlq_result rc = sqlq_buf_addc(b, '{');
    for (size_t i = 0; rc == SQLQ_OK && i < n; i++) {
        if (i)
            rc = sqlq_buf_addc(b, ',');
        if (rc == SQLQ_OK)
            rc = add_string(b, m[i].key, m[i].len);
        if (rc == SQLQ_OK)
            rc = sqlq_buf_addc(b, ':');
        if (rc == SQLQ_OK)
            rc = add_value(b, m[i].value, sort_keys, depth + 1);
    }
    return rc == SQLQ_OK ? sqlq_buf_addc(b, '}') : rc;
}

/* Jansson's iteration takes a json_t * and reads it only: the same pointer without const. */
static json_t *readable(const json_t *v)
{
    json_t *p;
    memcpy(&p, &v, sizeof p);
    return p;
}

static sqlq_result add_object(sqlq_buf *b, const json_t *c, bool sort_keys, int depth)
{
    json_t *o = readable(c);
    size_t n = json_object_size(o);
    member small[16];
    member *m = n <= 16 ? small : malloc(n * sizeof *m);
    if (!m) {
        sqlq_buf_free(b);
        return SQLQ_E_NOMEM;
    }
    size_t i = 0;
    for (void *it = json_object_iter(o); it && i < n; it = json_object_iter_next(o, it), i++)
        m[i] = (member){json_object_iter_key(it), json_object_iter_key_len(it),
                        json_object_iter_value(it)};
    if (sort_keys && i > 1)
        qsort(m, i, sizeof *m, member_cmp);
    sqlq_result rc = add_members(b, m, i, sort_keys, depth);
    if (m != small)
        free(m);
    return rc;
}

static sqlq_result add_array(sqlq_buf *b, const json_t *a, bool sort_keys, int depth)
{
    sqlq_result rc = sqlq_buf_addc(b, '[');
    size_t n = json_array_size(a);
    for (size_t i = 0; rc == SQLQ_OK && i < n; i++) {
        if (i)
            rc = sqlq_buf_addc(b, ',');
        if (rc == SQLQ_OK)
            rc = add_value(b, json_array_get(a, i), sort_keys, depth + 1);
    }
    return rc == SQLQ_OK ? sqlq_buf_addc(b, ']') : rc;
}

static sqlq_result add_value(sqlq_buf *b, const json_t *v, bool sort_keys, int depth)
{
    if (!v || depth > SQLQ_JSON_TEXT_MAX_DEPTH) {
        sqlq_buf_free(b);
        return SQLQ_E_INVALID;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: return add_object(b, v, sort_keys, depth);
    case JSON_ARRAY: return add_array(b, v, sort_keys, depth);
    case JSON_STRING: return add_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: return add_integer(b, json_integer_value(v));
    case JSON_REAL: return add_real(b, v);
    case JSON_TRUE: return sqlq_buf_add(b, "true", 4);
    case JSON_FALSE: return sqlq_buf_add(b, "false", 5);
    case JSON_NULL: return sqlq_buf_add(b, "null", 4);
    }
    sqlq_buf_free(b);
    return SQLQ_E_INVALID;
}

sqlq_result sqlq_json_text_add_string(sqlq_buf *b, const char *s, size_t n)
{
    return add_string(b, s, n);
}

sqlq_result sqlq_json_text_add(sqlq_buf *b, const json_t *v, bool sort_keys)
{
    return add_value(b, v, sort_keys, 0);
}

char *sqlq_json_text(const json_t *v, bool sort_keys, size_t *out_len)
{
    sqlq_buf b;
    sqlq_buf_init(&b, SIZE_MAX / 4); /* no limit of its own, as json_dumps */
    if (sqlq_json_text_add(&b, v, sort_keys) != SQLQ_OK)
        return NULL;
    return sqlq_buf_take(&b, out_len);
}
