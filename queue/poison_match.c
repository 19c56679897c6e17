#include "poison_match.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
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

static bool skip_string(cursor *c)
{
    if (c->i >= c->len || c->p[c->i] != '"')
        return false;
    for (c->i++; c->i < c->len; c->i++) {
        unsigned char ch = (unsigned char)c->p[c->i];
        if (ch == '"') {
            c->i++;
            return true;
        }
        if (ch < 0x20)
            return false;
        if (ch == '\\')
            c->i++;
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

typedef struct member {
    const char *key; /* raw key bytes, without the quotes (escapes not decoded) */
    size_t key_len;
    const char *value; /* raw value bytes */
    size_t value_len;
} member;

/* The members of the object text (at most max; *n = count). False when the text is not
 * exactly one JSON object (trailing bytes, bad syntax) or has more than max members. */
static bool members(const char *text, size_t len, member *out, size_t max, size_t *n)
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
            out[(*n)++] = (member){text + k + 1, kend - k - 1, text + v, c.i - v};
        } while (eat(&c, ','));
        if (!eat(&c, '}'))
            return false;
    }
    skip_ws(&c);
    return c.i == c.len;
}

static bool key_is(const member *m, const char *key)
{
    return m->key_len == strlen(key) && memcmp(m->key, key, m->key_len) == 0;
}

bool sqlq_poison_match_envelope(const char *body, size_t len, const char **out_msg,
                                size_t *out_len)
{
    member m[4];
    size_t n;
    if (!body || !members(body, len, m, 4, &n) || n != 3)
        return false;
    const member *marker = NULL, *reason = NULL, *message = NULL;
    for (size_t i = 0; i < n; i++) {
        const member **slot = key_is(&m[i], SQLQ_POISON_MARKER) ? &marker
                              : key_is(&m[i], "reason")         ? &reason
                              : key_is(&m[i], "message")        ? &message
                                                                : NULL;
        if (!slot || *slot)
            return false; /* another member, or one twice */
        *slot = &m[i];
    }
    if (marker->value_len != 1 || marker->value[0] != '1' || reason->value[0] != '"' ||
        (message->value[0] != '{' && message->value[0] != '['))
        return false;
    *out_msg = message->value;
    *out_len = message->value_len;
    return true;
}

/* ---- numbers by value ---- */

typedef struct decimal {
    bool negative;
    char digits[1100]; /* significant digits, no leading or trailing zeros; "" for zero */
    size_t n;
    long long exponent; /* value = 0.digits * 10^exponent */
    bool ok;
} decimal;

static void parse_decimal(const char *s, size_t len, decimal *d)
{
    cursor c = {s, 0, len};
    memset(d, 0, sizeof(*d));
    if (!skip_number(&c) || c.i != len)
        return;
    size_t i = 0;
    d->negative = s[0] == '-';
    i += d->negative;
    long long point = 0; /* digits before the decimal point, counted once significant */
    bool seen_point = false, significant = false;
    for (; i < len && s[i] != 'e' && s[i] != 'E'; i++) {
        if (s[i] == '.') {
            seen_point = true;
            continue;
        }
        if (s[i] == '0' && !significant) {
            point -= seen_point; /* 0.001: each zero after the point moves the value down */
            continue;
        }
        significant = true;
        if (d->n == sizeof(d->digits))
            return; /* absurdly long: not compared */
        d->digits[d->n++] = s[i];
        point += !seen_point;
    }
    long long e = 0;
    if (i < len) {
        char *end = NULL;
        char exp[32];
        size_t el = len - i - 1;
        if (el >= sizeof(exp))
            return;
        memcpy(exp, s + i + 1, el);
        exp[el] = '\0';
        e = strtoll(exp, &end, 10);
        if (e > INT32_MAX || e < INT32_MIN)
            return;
    }
    while (d->n > 0 && d->digits[d->n - 1] == '0')
        d->n--;
    d->exponent = d->n ? point + e : 0;
    d->negative = d->negative && d->n > 0; /* -0 == 0 */
    d->ok = true;
}

bool sqlq_poison_match_number_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    decimal *x = malloc(sizeof(*x)), *y = malloc(sizeof(*y));
    bool eq = false;
    if (x && y) {
        parse_decimal(a, alen, x);
        parse_decimal(b, blen, y);
        eq = x->ok && y->ok && x->negative == y->negative && x->n == y->n &&
             x->exponent == y->exponent && memcmp(x->digits, y->digits, x->n) == 0;
    }
    free(x);
    free(y);
    return eq;
}

/* ---- --where ---- */

static bool value_equals(const char *raw, size_t len, const char *want)
{
    if (raw[0] == '"') {
        json_t *s = json_loadb(raw, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        bool eq = json_is_string(s) && json_string_length(s) == strlen(want) &&
                  memcmp(json_string_value(s), want, strlen(want)) == 0;
        json_decref(s);
        return eq;
    }
    if (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
        return sqlq_poison_match_number_equal(raw, len, want, strlen(want));
    return len == strlen(want) && memcmp(raw, want, len) == 0;
}

#define MAX_MEMBERS 4096

static bool field_matches(const char *body, size_t len, const char *field, const char *value)
{
    member *m = malloc(MAX_MEMBERS * sizeof(*m));
    size_t n = 0;
    bool hit = false;
    if (m && members(body, len, m, MAX_MEMBERS, &n)) {
        for (size_t i = 0; i < n && !hit; i++)
            hit = key_is(&m[i], field) && value_equals(m[i].value, m[i].value_len, value);
    }
    free(m);
    return hit;
}

bool sqlq_poison_match_where(const char *body, size_t len, const char *field, const char *value)
{
    const char *inner;
    size_t inner_len;
    if (!body)
        return false;
    if (sqlq_poison_match_envelope(body, len, &inner, &inner_len)) {
        if (strcmp(field, "reason") == 0 && field_matches(body, len, field, value))
            return true;
        return field_matches(inner, inner_len, field, value);
    }
    return field_matches(body, len, field, value);
}
