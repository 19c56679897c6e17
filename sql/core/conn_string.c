#include "conn_string.h"

#include "buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const sqlq_conn_string_password_keys[] = {
    "PWD", "Password", "PWD1", "PWD2", "PWD3", "Password1", "Password2", "Password3", NULL};

/* One key=value attribute as written. */
typedef struct attr {
    const char *key;
    size_t klen;
    const char *raw; /* the value as written, inside the braces when braced */
    size_t rawlen;
    bool braced;
    bool closed; /* a braced value's closing '}' was found */
    size_t at;   /* offset of the value in the string */
} attr;

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The next attribute at or after *pp; false at the end of the string. A piece without '='
 * is skipped (drivers ignore it too). */
static bool next_attr(const char *conn, const char **pp, attr *a)
{
    const char *p = *pp;
    for (;;) {
        while (*p == ';' || blank(*p))
            p++;
        if (!*p) {
            *pp = p;
            return false;
        }
        const char *key = p;
        while (*p && *p != '=' && *p != ';')
            p++;
        size_t klen = (size_t)(p - key);
        while (klen > 0 && blank(key[klen - 1]))
            klen--;
        if (*p != '=')
            continue;
        for (p++; blank(*p); p++) {
        }
        *a = (attr){.key = key, .klen = klen, .braced = *p == '{', .at = (size_t)(p - conn)};
        if (a->braced) {
            a->raw = ++p;
            for (; *p; p++) {
                if (*p == '}' && p[1] == '}') {
                    p++;
                    continue;
                }
                if (*p == '}') {
                    a->closed = true;
                    break;
                }
            }
            a->rawlen = (size_t)(p - a->raw);
            while (*p && *p != ';')
                p++;
        } else {
            a->raw = p;
            while (*p && *p != ';')
                p++;
            a->rawlen = (size_t)(p - a->raw);
            while (a->rawlen > 0 && blank(a->raw[a->rawlen - 1]))
                a->rawlen--;
        }
        *pp = p;
        return true;
    }
}

static bool key_in(const attr *a, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++)
        if (strlen(keys[i]) == a->klen && strncasecmp(a->key, keys[i], a->klen) == 0)
            return true;
    return false;
}

sqlq_result sqlq_conn_string_check(const char *conn, sqlq_error *err)
{
    const char *base = conn ? conn : "", *p = base;
    attr a;
    while (next_attr(base, &p, &a))
        if (a.braced && !a.closed)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "database connection string: the value of %.*s opens '{' at "
                                  "offset %zu and never closes it (a braced value ends with '}'; "
                                  "a '}' inside it is written '}}')",
                                  (int)(a.klen < 40 ? a.klen : 40), a.key, a.at);
    return SQLQ_OK;
}

/* A growing NULL-terminated list of strings. */
typedef struct strlist {
    char **items;
    size_t n;
    bool oom;
} strlist;

static void list_add(strlist *l, const char *s, size_t len)
{
    if (l->oom || len == 0)
        return;
    char **grown = realloc(l->items, (l->n + 2) * sizeof(char *));
    char *copy = grown ? strndup(s, len) : NULL;
    if (grown)
        l->items = grown;
    if (!copy) {
        l->oom = true;
        return;
    }
    l->items[l->n++] = copy;
    l->items[l->n] = NULL;
}

static char **list_finish(strlist *l)
{
    if (!l->oom && !l->items)
        l->items = calloc(1, sizeof(char *));
    if (l->oom || !l->items) {
        sqlq_conn_string_list_free(l->items);
        return NULL;
    }
    return l->items;
}

/* The value unbraced ("}}" is "}") into l. */
static void add_value(strlist *l, const attr *a)
{
    sqlq_buf v;
    sqlq_buf_init(&v, 0);
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; i < a->rawlen && r == SQLQ_OK; i++) {
        r = sqlq_buf_addc(&v, a->raw[i]);
        i += a->braced && a->raw[i] == '}';
    }
    if (r != SQLQ_OK)
        l->oom = true;
    list_add(l, v.data ? v.data : "", v.len);
    sqlq_buf_free(&v);
}

char **sqlq_conn_string_values(const char *conn, const char *const *keys)
{
    strlist l = {0};
    const char *base = conn ? conn : "", *p = base;
    attr a;
    while (next_attr(base, &p, &a))
        if (key_in(&a, keys))
            add_value(&l, &a);
    return list_finish(&l);
}

const char *sqlq_conn_string_describe(const char *conn, char *out, size_t out_size)
{
    static const char *const named[] = {"DSN", "Server", "Host", "Port", "Database", NULL};
    const char *base = conn ? conn : "", *p = base;
    size_t used = 0;
    attr a;
    if (out_size == 0)
        return out;
    out[0] = '\0';
    while (next_attr(base, &p, &a) && used < out_size) {
        if (!key_in(&a, named) || a.rawlen == 0)
            continue;
        int n = snprintf(out + used, out_size - used, "%s%.*s=%.*s", used ? ";" : "",
                         (int)a.klen, a.key, (int)(a.rawlen < 120 ? a.rawlen : 120), a.raw);
        used = n < 0 ? out_size : used + (size_t)n;
    }
    if (out[0] == '\0')
        snprintf(out, out_size, "(no server or database named)");
    return out;
}

/* The password= values of libpq conninfo text s[0..len) (keyword = value, the value bare or
 * 'quoted' with backslash escapes), unescaped and as written. */
static void add_conninfo_passwords(strlist *l, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && isspace((unsigned char)s[i]))
            i++;
        size_t k = i;
        while (i < len && s[i] != '=' && !isspace((unsigned char)s[i]))
            i++;
        bool password = i - k == 8 && strncmp(s + k, "password", 8) == 0;
        while (i < len && isspace((unsigned char)s[i]))
            i++;
        if (i >= len || s[i] != '=')
            continue;
        for (i++; i < len && isspace((unsigned char)s[i]); i++) {
        }
        bool quoted = i < len && s[i] == '\'';
        size_t start = i += quoted;
        sqlq_buf v;
        sqlq_buf_init(&v, 0);
        for (; i < len && (quoted ? s[i] != '\'' : !isspace((unsigned char)s[i])); i++) {
            i += s[i] == '\\' && i + 1 < len;
            if (sqlq_buf_addc(&v, s[i]) != SQLQ_OK)
                l->oom = true;
        }
        if (password) {
            list_add(l, v.data ? v.data : "", v.len);
            if (v.len != i - start) /* escapes: also as written */
                list_add(l, s + start, i - start);
        }
        sqlq_buf_free(&v);
        i += quoted && i < len;
    }
}

char **sqlq_conn_string_secrets(const char *conn)
{
    strlist l = {0};
    const char *base = conn ? conn : "", *p = base;
    attr a;
    static const char *const pqopt[] = {"pqopt", NULL};
    while (next_attr(base, &p, &a)) {
        if (key_in(&a, sqlq_conn_string_password_keys)) {
            add_value(&l, &a);
            if (a.braced && memmem(a.raw, a.rawlen, "}}", 2))
                list_add(&l, a.raw, a.rawlen); /* as a driver may echo it */
        } else if (key_in(&a, pqopt)) {
            add_conninfo_passwords(&l, a.raw, a.rawlen);
        }
    }
    return list_finish(&l);
}

void sqlq_conn_string_list_free(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        free(list[i]);
    free(list);
}
