#include "log_record.h"

#include <jansson.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* One printf conversion, parsed so that its argument can be taken with the right type. */
typedef struct conversion {
    char spec[48]; /* rebuilt with '*' replaced by the numbers taken from the arguments */
    char length[3];
    char conv;
} conversion;

static bool spec_add(conversion *c, size_t *n, const char *text)
{
    size_t len = strlen(text);
    if (*n + len >= sizeof(c->spec))
        return false;
    memcpy(c->spec + *n, text, len + 1);
    *n += len;
    return true;
}

/* Parses the conversion at *pp (just after '%'), taking '*' widths from ap. */
static bool parse_conversion(const char **pp, va_list *ap, conversion *c)
{
    const char *p = *pp;
    size_t n = 0;
    char tmp[24];
    bool ok = spec_add(c, &n, "%");
    while (ok && *p && strchr("-+ #0", *p)) {
        char f[2] = {*p++, '\0'};
        ok = spec_add(c, &n, f);
    }
    for (int part = 0; ok && part < 2; part++) { /* width, then .precision */
        if (part == 1) {
            if (*p != '.')
                break;
            ok = spec_add(c, &n, ".");
            p++;
        }
        if (*p == '*') {
            snprintf(tmp, sizeof(tmp), "%d", va_arg(*ap, int));
            ok = ok && spec_add(c, &n, tmp);
            p++;
        }
        while (ok && *p >= '0' && *p <= '9') {
            char d[2] = {*p++, '\0'};
            ok = spec_add(c, &n, d);
        }
    }
    size_t l = 0;
    while (ok && *p && strchr("hlzjtL", *p) && l < 2)
        c->length[l++] = *p++;
    c->length[l] = '\0';
    ok = ok && spec_add(c, &n, c->length);
    c->conv = *p;
    char conv[2] = {*p, '\0'};
    ok = ok && *p && strchr("diouxXcspfFeEgGaA", *p) && spec_add(c, &n, conv);
    *pp = *p ? p + 1 : p;
    return ok;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral" /* the spec is rebuilt from a literal format */
static sqlq_result format_signed(sqlq_buf *out, const conversion *c, va_list *ap)
{
    const char *l = c->length;
    if (strcmp(l, "l") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, long));
    if (strcmp(l, "ll") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, long long));
    if (strcmp(l, "z") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, ssize_t));
    if (strcmp(l, "j") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, intmax_t));
    if (strcmp(l, "t") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, ptrdiff_t));
    return sqlq_buf_printf(out, c->spec, va_arg(*ap, int)); /* hh and h are promoted */
}

static sqlq_result format_unsigned(sqlq_buf *out, const conversion *c, va_list *ap)
{
    const char *l = c->length;
    if (strcmp(l, "l") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, unsigned long));
    if (strcmp(l, "ll") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, unsigned long long));
    if (strcmp(l, "z") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, size_t));
    if (strcmp(l, "j") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, uintmax_t));
    if (strcmp(l, "t") == 0)
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, ptrdiff_t));
    return sqlq_buf_printf(out, c->spec, va_arg(*ap, unsigned));
}

static sqlq_result format_other(sqlq_buf *out, const conversion *c, va_list *ap)
{
    switch (c->conv) {
    case 'c':
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, int));
    case 's': {
        const char *s = va_arg(*ap, const char *);
        return sqlq_buf_printf(out, c->spec, s ? s : "(null)");
    }
    case 'p':
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, void *));
    default:
        if (strcmp(c->length, "L") == 0)
            return sqlq_buf_printf(out, c->spec, va_arg(*ap, long double));
        return sqlq_buf_printf(out, c->spec, va_arg(*ap, double));
    }
}
#pragma GCC diagnostic pop

/* Formats the conversion at *pp (just after '%') into out. */
static sqlq_result format_conversion(sqlq_buf *out, const char **pp, va_list *ap)
{
    if (**pp == '%') {
        (*pp)++;
        return sqlq_buf_addc(out, '%');
    }
    conversion c;
    memset(&c, 0, sizeof(c));
    if (!parse_conversion(pp, ap, &c))
        return SQLQ_E_INVALID; /* the rest of the arguments cannot be trusted now */
    if (strchr("di", c.conv))
        return format_signed(out, &c, ap);
    if (strchr("ouxX", c.conv))
        return format_unsigned(out, &c, ap);
    return format_other(out, &c, ap);
}

/* A value: up to the closing quote (quoted) or the next space of the format. */
static sqlq_result format_value(sqlq_log_field *f, const char **pp, va_list *ap)
{
    const char *p = *pp;
    sqlq_result r = SQLQ_OK;
    f->quoted = *p == '"';
    if (f->quoted)
        p++;
    while (r == SQLQ_OK && *p && (f->quoted ? *p != '"' : *p != ' ')) {
        if (*p == '%') {
            p++;
            r = format_conversion(&f->value, &p, ap);
        } else {
            if (*p == '\\' && p[1]) /* \" and \\ written in the format's quoted text */
                p++;
            r = sqlq_buf_addc(&f->value, *p++);
        }
    }
    if (f->quoted && *p == '"')
        p++;
    *pp = p;
    return r;
}

sqlq_result sqlq_log_record_format(sqlq_log_record *rec, const char *fmt, va_list *ap)
{
    memset(rec, 0, sizeof(*rec));
    const char *p = fmt;
    sqlq_result r = SQLQ_OK;
    while (r == SQLQ_OK && *p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        if (rec->n == SQLQ_LOG_MAX_FIELDS)
            return SQLQ_E_TOO_LARGE;
        sqlq_log_field *f = &rec->fields[rec->n++];
        sqlq_buf_init(&f->value, 1024 * 1024);
        size_t k = strcspn(p, "= \"%");
        if (p[k] == '=' && k > 0) {
            f->key = (sqlq_slice){p, k};
            p += k + 1;
        } else {
            f->key = sqlq_slice_of("msg"); /* text that is not key=value */
        }
        r = format_value(f, &p, ap);
    }
    return r;
}

void sqlq_log_record_free(sqlq_log_record *rec)
{
    for (size_t i = 0; i < rec->n; i++)
        sqlq_buf_free(&rec->fields[i].value);
    rec->n = 0;
}

void sqlq_log_record_each_value(sqlq_log_record *rec, void (*fn)(sqlq_buf *value))
{
    for (size_t i = 0; i < rec->n; i++)
        fn(&rec->fields[i].value);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                 : s[0] >= 0xF0 && s[0] <= 0xF4                 ? 4
                                                                : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))
        return 0; /* overlong, surrogate, beyond U+10FFFF */
    return len;
}

static bool is_c1(const unsigned char *s, size_t len)
{
    return len == 2 && s[0] == 0xC2 && s[1] < 0xA0;
}

/* Whether a value can be written bare: printable, no space, '=', '"' or '\'. */
static bool plain(const sqlq_buf *v)
{
    const unsigned char *s = (const unsigned char *)sqlq_buf_str(v);
    if (v->len == 0)
        return false;
    for (size_t i = 0; i < v->len;) {
        size_t len = utf8_len(s + i, v->len - i);
        if (len == 0 || is_c1(s + i, len) || (len == 1 && (s[i] <= ' ' || s[i] == 0x7f ||
                                                          strchr("=\"\\", s[i]))))
            return false;
        i += len;
    }
    return true;
}

static sqlq_result escaped(sqlq_buf *out, const sqlq_buf *v)
{
    static const char *const named[][2] = {{"\"", "\\\""}, {"\\", "\\\\"}, {"\n", "\\n"},
                                           {"\r", "\\r"},  {"\t", "\\t"}};
    const unsigned char *s = (const unsigned char *)sqlq_buf_str(v);
    sqlq_result r = sqlq_buf_addc(out, '"');
    for (size_t i = 0; r == SQLQ_OK && i < v->len;) {
        size_t len = utf8_len(s + i, v->len - i);
        const char *name = NULL;
        for (size_t k = 0; len == 1 && k < sizeof(named) / sizeof(named[0]); k++)
            if (s[i] == (unsigned char)named[k][0][0])
                name = named[k][1];
        if (name)
            r = sqlq_buf_adds(out, name);
        else if (len == 0 || (len == 1 && (s[i] < 0x20 || s[i] == 0x7f)))
            r = sqlq_buf_printf(out, "\\x%02x", s[i]);
        else if (is_c1(s + i, len))
            r = sqlq_buf_printf(out, "\\u%04x", s[i + 1]);
        else
            r = sqlq_buf_add(out, s + i, len);
        i += len ? len : 1;
    }
    return r == SQLQ_OK ? sqlq_buf_addc(out, '"') : r;
}

sqlq_result sqlq_log_record_text(const sqlq_log_record *rec, sqlq_buf *out)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < rec->n; i++) {
        const sqlq_log_field *f = &rec->fields[i];
        if (i > 0)
            r = sqlq_buf_addc(out, ' ');
        if (r == SQLQ_OK)
            r = sqlq_buf_add(out, f->key.ptr, f->key.len);
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(out, '=');
        if (r == SQLQ_OK)
            r = !f->quoted && plain(&f->value) ? sqlq_buf_add(out, sqlq_buf_str(&f->value), f->value.len)
                                               : escaped(out, &f->value);
    }
    return r;
}

/* A JSON string of any bytes: invalid UTF-8 becomes U+FFFD, so Jansson accepts it. */
static json_t *json_bytes(const sqlq_buf *v)
{
    const unsigned char *s = (const unsigned char *)sqlq_buf_str(v);
    sqlq_buf clean;
    sqlq_buf_init(&clean, v->len * 3 + 1);
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < v->len;) {
        size_t len = utf8_len(s + i, v->len - i);
        r = len ? sqlq_buf_add(&clean, s + i, len) : sqlq_buf_adds(&clean, "\xEF\xBF\xBD");
        i += len ? len : 1;
    }
    json_t *j = r == SQLQ_OK ? json_stringn(sqlq_buf_str(&clean), clean.len) : NULL;
    sqlq_buf_free(&clean);
    return j;
}

char *sqlq_log_record_json(const sqlq_log_record *rec, const char *ts, const char *level,
                           const char *event)
{
    json_t *o = json_object();
    bool ok = o && json_object_set_new(o, "ts", json_string(ts)) == 0 &&
              json_object_set_new(o, "level", json_string(level)) == 0 &&
              json_object_set_new(o, "event", json_string(event)) == 0;
    for (size_t i = 0; ok && i < rec->n; i++) {
        const sqlq_log_field *f = &rec->fields[i];
        char key[72];
        snprintf(key, sizeof(key), "%.*s", (int)(f->key.len < 64 ? f->key.len : 64), f->key.ptr);
        if (json_object_get(o, key)) /* never replace ts, level, event or an earlier field */
            snprintf(key, sizeof(key), "field_%.*s", (int)(f->key.len < 64 ? f->key.len : 64),
                     f->key.ptr);
        ok = json_object_set_new(o, key, json_bytes(&f->value)) == 0;
    }
    char *line = ok ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return line;
}
