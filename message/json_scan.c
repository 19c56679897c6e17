/* json_scan: object members as exact bytes (see the header). */
#include "json_scan.h"

#include <string.h>

#define MAX_DEPTH 512

typedef struct cursor {
    const char *p;
    size_t i, len;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->i < c->len && (c->p[c->i] == ' ' || c->p[c->i] == '\t' || c->p[c->i] == '\r' ||
                             c->p[c->i] == '\n'))
        c->i++;
}

static bool eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->i < c->len && c->p[c->i] == ch) {
        c->i++;
        return true;
    }
    return false;
}

static bool hex4(const cursor *c, size_t i)
{
    for (size_t k = 0; k < 4; k++) {
        if (i + k >= c->len)
            return false;
        char h = c->p[i + k];
        if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
            return false;
    }
    return true;
}

/* The length of the UTF-8 sequence at i (RFC 3629: shortest form, no surrogates, at most
 * U+10FFFF); 0 when it is not one. */
static size_t utf8_len(const cursor *c, size_t i)
{
    const unsigned char *u = (const unsigned char *)c->p + i;
    size_t left = c->len - i;
    size_t n = u[0] < 0x80 ? 1 : u[0] >= 0xC2 && u[0] <= 0xDF ? 2 : u[0] >= 0xE0 && u[0] <= 0xEF ? 3
                          : u[0] >= 0xF0 && u[0] <= 0xF4 ? 4 : 0;
    if (n == 0 || n > left)
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((u[k] & 0xC0) != 0x80)
            return 0;
    if ((u[0] == 0xE0 && u[1] < 0xA0) || (u[0] == 0xED && u[1] > 0x9F) ||
        (u[0] == 0xF0 && u[1] < 0x90) || (u[0] == 0xF4 && u[1] > 0x8F))
        return 0;
    return n;
}

/* A string: UTF-8, no raw control character, only the escapes RFC 8259 allows. */
static bool skip_string(cursor *c)
{
    if (c->i >= c->len || c->p[c->i] != '"')
        return false;
    for (c->i++; c->i < c->len;) {
        unsigned char ch = (unsigned char)c->p[c->i];
        if (ch == '"') {
            c->i++;
            return true;
        }
        if (ch < 0x20)
            return false;
        if (ch == '\\') {
            char e = c->i + 1 < c->len ? c->p[c->i + 1] : '\0';
            if (e == 'u' && hex4(c, c->i + 2))
                c->i += 6;
            else if (e && strchr("\"\\/bfnrt", e))
                c->i += 2;
            else
                return false;
            continue;
        }
        size_t n = utf8_len(c, c->i);
        if (n == 0)
            return false;
        c->i += n;
    }
    return false;
}

static size_t digits(const cursor *c, size_t i)
{
    size_t n = 0;
    while (i + n < c->len && c->p[i + n] >= '0' && c->p[i + n] <= '9')
        n++;
    return n;
}

/* A number per RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool skip_number(cursor *c)
{
    size_t i = c->i;
    if (i < c->len && c->p[i] == '-')
        i++;
    size_t n = digits(c, i);
    if (n == 0 || (n > 1 && c->p[i] == '0'))
        return false;
    i += n;
    if (i < c->len && c->p[i] == '.') {
        if ((n = digits(c, i + 1)) == 0)
            return false;
        i += 1 + n;
    }
    if (i < c->len && (c->p[i] == 'e' || c->p[i] == 'E')) {
        i++;
        if (i < c->len && (c->p[i] == '+' || c->p[i] == '-'))
            i++;
        if ((n = digits(c, i)) == 0)
            return false;
        i += n;
    }
    c->i = i;
    return true;
}

static bool skip_value(cursor *c, int depth);

static bool skip_container(cursor *c, char close, bool object, int depth)
{
    c->i++;
    if (eat(c, close))
        return true;
    do {
        skip_ws(c);
        if (object && !(skip_string(c) && eat(c, ':')))
            return false;
        if (!skip_value(c, depth + 1))
            return false;
    } while (eat(c, ','));
    return eat(c, close);
}

static bool skip_value(cursor *c, int depth)
{
    skip_ws(c);
    if (c->i >= c->len || depth > MAX_DEPTH)
        return false;
    static const char *const words[] = {"true", "false", "null"};
    switch (c->p[c->i]) {
    case '"':
        return skip_string(c);
    case '{':
        return skip_container(c, '}', true, depth);
    case '[':
        return skip_container(c, ']', false, depth);
    default:
        for (size_t k = 0; k < 3; k++) {
            size_t n = strlen(words[k]);
            if (c->len - c->i >= n && memcmp(c->p + c->i, words[k], n) == 0) {
                c->i += n;
                return true;
            }
        }
        return skip_number(c);
    }
}

bool sqlq_json_scan_members(const char *text, size_t len, sqlq_json_member *out, size_t max,
                            size_t *n)
{
    cursor c = {text, 0, len};
    *n = 0;
    if (!eat(&c, '{'))
        return false;
    if (!eat(&c, '}')) {
        do {
            skip_ws(&c);
            size_t k = c.i;
            if (!skip_string(&c))
                return false;
            size_t kend = c.i - 1; /* the closing quote */
            if (!eat(&c, ':'))
                return false;
            skip_ws(&c);
            size_t v = c.i;
            if (!skip_value(&c, 1) || *n == max)
                return false;
            out[(*n)++] = (sqlq_json_member){text + k + 1, kend - k - 1, text + v, c.i - v};
        } while (eat(&c, ','));
        if (!eat(&c, '}'))
            return false;
    }
    skip_ws(&c);
    return c.i == c.len;
}

bool sqlq_json_member_is(const sqlq_json_member *m, const char *key)
{
    return m->key_len == strlen(key) && memcmp(m->key, key, m->key_len) == 0;
}

bool sqlq_json_scan_number(const char *s, size_t len)
{
    cursor c = {s, 0, len};
    return skip_number(&c) && c.i == len;
}

bool sqlq_json_scan_value(const char *text, size_t len)
{
    cursor c = {text, 0, len};
    if (!skip_value(&c, 1))
        return false;
    skip_ws(&c);
    return c.i == c.len;
}
