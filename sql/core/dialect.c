#include "dialect.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_IDENT 255

/* Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF), no NUL byte. */
static bool utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        if (c == 0)
            return false;
        size_t n;
        uint32_t v, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 2, v = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, v = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, v = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (len - i < n)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            v = (v << 6) | (p[i + k] & 0x3F);
        }
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

sqlq_result sqlq_dialect_quote_identn(const sqlq_dialect *d, const char *ident, size_t len,
                                      sqlq_buf *out)
{
    if (!ident || len == 0 || len > MAX_IDENT || !utf8_valid(ident, len))
        return SQLQ_E_INVALID;
    char open = d->ident_open;
    char close = d->ident_close;
    sqlq_result r = sqlq_buf_addc(out, open);
    for (size_t i = 0; i < len && r == SQLQ_OK; i++) {
        if (ident[i] == close)
            r = sqlq_buf_addc(out, close); /* doubled: "a""b", [a]]b] */
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(out, ident[i]);
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_addc(out, close);
    return r;
}

sqlq_result sqlq_dialect_quote_ident(const sqlq_dialect *d, const char *ident, sqlq_buf *out)
{
    if (!ident)
        return SQLQ_E_INVALID;
    return sqlq_dialect_quote_identn(d, ident, strnlen(ident, MAX_IDENT + 1), out);
}

sqlq_result sqlq_dialect_quote_table(const sqlq_dialect *d, const sqlq_table_name *t, sqlq_buf *out)
{
    if (!t || !t->name[0])
        return SQLQ_E_INVALID;
    if (t->schema[0]) {
        sqlq_result r = sqlq_dialect_quote_ident(d, t->schema, out);
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(out, '.');
        if (r != SQLQ_OK)
            return r;
    }
    return sqlq_dialect_quote_ident(d, t->name, out);
}

sqlq_result sqlq_dialect_quote_literal(const sqlq_dialect *d, const char *s, sqlq_buf *out)
{
    if (!s)
        return SQLQ_E_INVALID;
    size_t len = strlen(s);
    if (!utf8_valid(s, len))
        return SQLQ_E_INVALID;
    /* PostgreSQL: E'' makes backslashes mean the same whatever standard_conforming_strings
     * says; SQL Server: N'' keeps non-ASCII text out of the code page. */
    bool escape_backslash = d->literal_backslash_e && strchr(s, '\\') != NULL;
    sqlq_result r =
        escape_backslash ? sqlq_buf_addc(out, 'E') : sqlq_buf_adds(out, d->literal_prefix);
    if (r == SQLQ_OK)
        r = sqlq_buf_addc(out, '\'');
    for (size_t i = 0; i < len && r == SQLQ_OK; i++) {
        if (s[i] == '\'' || (escape_backslash && s[i] == '\\'))
            r = sqlq_buf_addc(out, s[i]);
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(out, s[i]);
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_addc(out, '\'');
    return r;
}

const char *sqlq_dialect_now_ms(const sqlq_dialect *d)
{
    return d->now_ms;
}

/* ---- the registered dialects ------------------------------------------------------------- */

/* Every database sqlq speaks to: a new one is one dialect_<name>.c and one line here. */
static const sqlq_dialect *const DIALECTS[] = {
    &sqlq_dialect_sqlite,
    &sqlq_dialect_postgres,
    &sqlq_dialect_mssql,
    &sqlq_dialect_mariadb,
};

const sqlq_dialect *sqlq_dialect_at(size_t i)
{
    return i < sizeof(DIALECTS) / sizeof(DIALECTS[0]) ? DIALECTS[i] : NULL;
}

/* dbms_name is one of the '|'-separated names of list (any case). */
static bool names_one_of(const char *dbms_name, const char *list)
{
    size_t n = strlen(dbms_name);
    for (const char *p = list; p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL) {
        const char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncasecmp(p, dbms_name, n) == 0)
            return true;
    }
    return false;
}

const sqlq_dialect *sqlq_dialect_of_file_driver(const char *driver)
{
    for (size_t i = 0; driver && i < sizeof(DIALECTS) / sizeof(DIALECTS[0]); i++)
        if (DIALECTS[i]->file_driver && strcasestr(driver, DIALECTS[i]->file_driver))
            return DIALECTS[i];
    return NULL;
}

const sqlq_dialect *sqlq_dialect_find(const char *dbms_name)
{
    for (size_t i = 0; dbms_name && i < sizeof(DIALECTS) / sizeof(DIALECTS[0]); i++)
        if (names_one_of(dbms_name, DIALECTS[i]->dbms_name))
            return DIALECTS[i];
    return NULL;
}

void sqlq_dialect_titles(char *out, size_t size)
{
    size_t pos = 0;
    if (size)
        out[0] = '\0';
    for (size_t i = 0; size && i < sizeof(DIALECTS) / sizeof(DIALECTS[0]); i++) {
        int n = snprintf(out + pos, size - pos, "%s%s", i ? ", " : "", DIALECTS[i]->title);
        if (n < 0 || (size_t)n >= size - pos)
            return;
        pos += (size_t)n;
    }
}

/* ---- table names as users write them ------------------------------------------------------- */

static sqlq_result name_error(sqlq_error *err, const char *text, const char *why)
{
    return sqlq_error_set(err, SQLQ_E_INVALID, false, "table name \"%.200s\": %s", text, why);
}

/* One part at *pp: "quoted" ("" inside), `backticked` (`` inside), [bracketed] (]] inside) or bare (up to the next '.',
 * surrounding blanks dropped). Copied into out (256 bytes); *pp moves past it. */
static sqlq_result parse_part(const char **pp, char *out, const char *text, sqlq_error *err)
{
    const char *p = *pp;
    size_t n = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '"' || *p == '[' || *p == '`') {
        char close = *p == '[' ? ']' : *p;
        for (p++;; p++) {
            if (*p == '\0')
                return name_error(err, text, "unterminated quoted name");
            if (*p == close) {
                if (p[1] != close)
                    break;
                p++;
            }
            if (n >= MAX_IDENT)
                return name_error(err, text, "a name is longer than 255 bytes");
            out[n++] = *p;
        }
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '\0' && *p != '.')
            return name_error(err, text, "unexpected text after a quoted name");
    } else {
        const char *start = p;
        while (*p && *p != '.') {
            if (*p == '"' || *p == '[' || *p == ']')
                return name_error(err, text, "quote a name that contains quotes or brackets");
            p++;
        }
        size_t len = (size_t)(p - start);
        while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t'))
            len--;
        if (len > MAX_IDENT)
            return name_error(err, text, "a name is longer than 255 bytes");
        memcpy(out, start, len);
        n = len;
    }
    out[n] = '\0';
    if (n == 0)
        return name_error(err, text, "empty name");
    if (!utf8_valid(out, n))
        return name_error(err, text, "not valid UTF-8");
    *pp = p;
    return SQLQ_OK;
}

sqlq_result sqlq_table_name_parse(const char *text, sqlq_table_name *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!text || !*text)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "empty table name");
    const char *p = text;
    char first[256], second[256];
    sqlq_result r = parse_part(&p, first, text, err);
    if (r != SQLQ_OK)
        return r;
    if (*p == '\0') {
        memcpy(out->name, first, sizeof(out->name));
        return SQLQ_OK;
    }
    p++; /* the dot */
    r = parse_part(&p, second, text, err);
    if (r != SQLQ_OK)
        return r;
    if (*p != '\0')
        return name_error(err, text, "write schema.table (at most two parts)");
    memcpy(out->schema, first, sizeof(out->schema));
    memcpy(out->name, second, sizeof(out->name));
    return SQLQ_OK;
}

void sqlq_table_name_format(const sqlq_table_name *t, char *out, size_t out_size)
{
    if (!out || out_size == 0)
        return;
    if (t->schema[0])
        snprintf(out, out_size, "%s.%s", t->schema, t->name);
    else
        snprintf(out, out_size, "%s", t->name);
}
