#include "redact.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Keys whose value is a secret: ODBC passwords (conn_string.h), libpq's conninfo password,
 * storage account keys and SAS signatures, OAuth client secrets, assertions and tokens. */
static const char *const secret_keys[] = {
    "PWD",         "Password",    "PWD1",          "PWD2",        "PWD3",
    "Password1",   "Password2",   "Password3",     "AccountKey",  "SharedAccessSignature",
    "sig",         "client_secret", "client_assertion", "access_token", NULL};

static bool key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* The secret key ending just before the '=' at text[eq] (blanks allowed around it), if any. */
static bool secret_key_before(const char *text, size_t eq)
{
    size_t end = eq;
    while (end > 0 && text[end - 1] == ' ')
        end--;
    size_t start = end;
    while (start > 0 && key_char(text[start - 1]))
        start--;
    for (size_t i = 0; secret_keys[i]; i++)
        if (strlen(secret_keys[i]) == end - start &&
            strncasecmp(text + start, secret_keys[i], end - start) == 0)
            return true;
    return false;
}

/* The length of the value starting at s: a {braced} value to its closing brace ("}}" inside),
 * a quoted one to its closing quote, else up to ; & } a quote or a blank. */
static size_t value_len(const char *s)
{
    if (*s == '{' || *s == '\'') {
        char close = *s == '{' ? '}' : '\'';
        size_t i = 1;
        for (; s[i]; i++) {
            if (s[i] == close && close == '}' && s[i + 1] == '}') {
                i++;
                continue;
            }
            if (s[i] == '\\' && close == '\'' && s[i + 1]) {
                i++;
                continue;
            }
            if (s[i] == close)
                return i + 1;
        }
        return i;
    }
    return strcspn(s, ";&}\"' \t\r\n");
}

static sqlq_result mask_keyed(sqlq_buf *out, const char *text)
{
    sqlq_result r = SQLQ_OK;
    size_t i = 0, n = strlen(text);
    while (r == SQLQ_OK && i < n) {
        const char *eq = strchr(text + i, '=');
        if (!eq) {
            r = sqlq_buf_adds(out, text + i);
            break;
        }
        size_t at = (size_t)(eq - text);
        r = sqlq_buf_add(out, text + i, at + 1 - i);
        i = at + 1;
        if (r != SQLQ_OK || !secret_key_before(text, at))
            continue;
        while (text[i] == ' ')
            r = r == SQLQ_OK ? sqlq_buf_addc(out, text[i++]) : r;
        size_t v = value_len(text + i);
        if (v > 0 && r == SQLQ_OK)
            r = sqlq_buf_adds(out, "***");
        i += v;
    }
    return r;
}

static sqlq_result mask_long(sqlq_buf *text, const char *secret)
{
    size_t slen = secret ? strlen(secret) : 0;
    if (slen < SQLQ_REDACT_MIN_SECRET || !text->data || !strstr(text->data, secret))
        return SQLQ_OK;
    sqlq_buf out;
    sqlq_buf_init(&out, 0);
    sqlq_result r = SQLQ_OK;
    const char *p = text->data, *hit;
    while (r == SQLQ_OK && (hit = strstr(p, secret)) != NULL) {
        r = sqlq_buf_add(&out, p, (size_t)(hit - p));
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(&out, "***");
        p = hit + slen;
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&out, p);
    if (r == SQLQ_OK) {
        sqlq_buf_free(text);
        *text = out;
    }
    return r;
}

sqlq_result sqlq_redact(sqlq_buf *text, char *const *secrets)
{
    if (!text->data)
        return SQLQ_OK;
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && secrets && secrets[i]; i++)
        r = mask_long(text, secrets[i]);
    if (r == SQLQ_OK && !strchr(text->data, '='))
        return SQLQ_OK; /* no key=value in it: nothing keyed to redact */
    sqlq_buf out;
    sqlq_buf_init(&out, text->cap);
    if (r == SQLQ_OK)
        r = mask_keyed(&out, text->data);
    if (r == SQLQ_OK && !out.data)
        r = sqlq_buf_adds(&out, "");
    if (r != SQLQ_OK) {
        sqlq_buf_free(&out);
        sqlq_buf_reset(text); /* never leave it unredacted */
        if (text->data)
            text->data[0] = '\0';
        return r;
    }
    sqlq_buf_free(text);
    *text = out;
    return SQLQ_OK;
}

void sqlq_redact_into(char *text, size_t size, char *const *secrets)
{
    if (!text || size == 0)
        return;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    if (sqlq_buf_adds(&b, text) != SQLQ_OK || sqlq_redact(&b, secrets) != SQLQ_OK) {
        sqlq_buf_free(&b);
        text[0] = '\0';
        return;
    }
    snprintf(text, size, "%s", sqlq_buf_str(&b));
    sqlq_buf_free(&b);
}
