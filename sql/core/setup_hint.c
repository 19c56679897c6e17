/* setup_hint: see setup_hint.h. */
#include "setup_hint.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A name read as written without quotes (PostgreSQL folds others to lower case): lowercase
 * ASCII letters, digits, _ and $, not starting with a digit or $. */
static bool plain_ident(const char *s)
{
    if (!(*s >= 'a' && *s <= 'z') && *s != '_')
        return false;
    for (; *s; s++)
        if (!(*s >= 'a' && *s <= 'z') && !(*s >= '0' && *s <= '9') && *s != '_' && *s != '$')
            return false;
    return true;
}

/* Append c to out (of size) at *n, truncating. */
static void put(char *out, size_t size, size_t *n, char c)
{
    if (*n + 1 < size)
        out[(*n)++] = c;
    out[*n < size ? *n : size - 1] = '\0';
}

static void put_ident(char *out, size_t size, size_t *n, const char *s)
{
    bool quote = !plain_ident(s);
    if (quote)
        put(out, size, n, '"');
    for (; *s; s++) {
        if (*s == '"')
            put(out, size, n, '"');
        put(out, size, n, *s);
    }
    if (quote)
        put(out, size, n, '"');
}

/* A shell word of ident: single-quoted ('"'"' for ', no backslash, which logs escape) unless
 * it is letters, digits, _ . - only. */
static void shell_word(const char *ident, char *out, size_t size)
{
    bool shell_plain = *ident != '\0';
    for (const char *c = ident; *c; c++)
        shell_plain = shell_plain && ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                                      (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' ||
                                      *c == '-');
    size_t n = 0;
    out[0] = '\0';
    if (!shell_plain)
        put(out, size, &n, '\'');
    for (const char *c = ident; *c; c++) {
        if (*c == '\'' && !shell_plain) {
            put(out, size, &n, '\'');
            put(out, size, &n, '"');
            put(out, size, &n, '\'');
            put(out, size, &n, '"');
        }
        put(out, size, &n, *c);
    }
    if (!shell_plain)
        put(out, size, &n, '\'');
}

void sqlq_setup_table_arg(const sqlq_table_name *name, const char *default_schema, char *out,
                          size_t size)
{
    char ident[1100];
    size_t n = 0;
    ident[0] = '\0';
    if (name->schema[0] && !(default_schema && strcmp(name->schema, default_schema) == 0)) {
        put_ident(ident, sizeof ident, &n, name->schema);
        put(ident, sizeof ident, &n, '.');
    }
    put_ident(ident, sizeof ident, &n, name->name);
    shell_word(ident, out, size);
}

void sqlq_setup_table_arg_text(const char *table, const char *default_schema, char *out,
                               size_t size)
{
    sqlq_table_name t;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_table_name_parse(table ? table : "", &t, &err) == SQLQ_OK)
        sqlq_setup_table_arg(&t, default_schema, out, size);
    else
        shell_word(table ? table : "", out, size);
}

void sqlq_setup_route_args(const sqlq_table_name *name, const char *default_schema,
                           const char *bridge, char *out, size_t size)
{
    char table[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(name, default_schema, table, sizeof table);
    char word[5 * 128 + 3] = ""; /* a bridge name (at most 128 bytes), each ' as 5 */
    if (bridge && bridge[0] && strcmp(bridge, "default") != 0)
        shell_word(bridge, word, sizeof word);
    snprintf(out, size, "--table %s%s%s", table, word[0] ? " --bridge-name " : "", word);
}
