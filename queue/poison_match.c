#include "poison_match.h"

#include "json_scan.h"
#include "poison_envelope.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    memset(d, 0, sizeof(*d));
    if (!sqlq_json_scan_number(s, len))
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
    sqlq_json_member *m = malloc(MAX_MEMBERS * sizeof(*m));
    size_t n = 0;
    bool hit = false;
    if (m && sqlq_json_scan_members(body, len, m, MAX_MEMBERS, &n)) {
        for (size_t i = 0; i < n && !hit; i++)
            hit = sqlq_json_member_is(&m[i], field) && value_equals(m[i].value, m[i].value_len, value);
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
    if (sqlq_poison_envelope_read(body, len, &inner, &inner_len)) {
        if (strcmp(field, "reason") == 0 && field_matches(body, len, field, value))
            return true;
        return field_matches(inner, inner_len, field, value);
    }
    return field_matches(body, len, field, value);
}
