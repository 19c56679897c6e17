/* accounts: the named storage accounts of a settings file. */
#include "accounts.h"

#include "buf.h"
#include "commands.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sqlq_cli_accounts_free(sqlq_cli_accounts *a)
{
    for (size_t i = 0; i < a->count; i++) {
        free(a->names[i]);
        sqlq_account_destroy(a->accounts[i]);
    }
    free(a->names);
    free(a->accounts);
    memset(a, 0, sizeof(*a));
}

const sqlq_account *sqlq_cli_accounts_find(const sqlq_cli_accounts *a, const char *name)
{
    for (size_t i = 0; name && i < a->count; i++)
        if (strcmp(a->names[i], name) == 0)
            return a->accounts[i];
    return NULL;
}

/* The text of a file, its trailing newlines dropped; NULL (why in `why`) when unreadable. */
static char *read_text(const char *path, char *why, size_t why_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    sqlq_buf b;
    sqlq_buf_init(&b, 64 * 1024);
    char chunk[4096];
    size_t n;
    sqlq_result r = SQLQ_OK;
    while (r == SQLQ_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        r = sqlq_buf_add(&b, chunk, n);
    fclose(f);
    if (r != SQLQ_OK) {
        sqlq_buf_free(&b);
        snprintf(why, why_size, "'%s' is too large", path);
        return NULL;
    }
    while (b.len > 0 && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
        b.data[--b.len] = '\0';
    return sqlq_buf_take(&b, NULL);
}

/* The connection text of one account entry (malloc'd), or NULL with the reason in `why`. */
static char *connection_of(const json_t *v, char *why, size_t why_size)
{
    if (json_is_string(v))
        return strdup(json_string_value(v));
    const char *file = json_string_value(json_object_get(v, "connection_file"));
    const char *env = json_string_value(json_object_get(v, "connection_env"));
    if (!json_is_object(v) || json_object_size(v) != 1 || (!file && !env)) {
        snprintf(why, why_size, "expected a connection string, {\"connection_file\": PATH} or "
                                "{\"connection_env\": VARIABLE}");
        return NULL;
    }
    if (file)
        return read_text(file, why, why_size);
    const char *text = getenv(env);
    if (!text || !*text) {
        snprintf(why, why_size, "environment variable %s is not set", env);
        return NULL;
    }
    return strdup(text);
}

int sqlq_cli_accounts_load(const char *command, const json_t *file,
                           const sqlq_account_options *opts, sqlq_cli_accounts *out)
{
    memset(out, 0, sizeof(*out));
    json_t *all = file ? json_object_get(file, "accounts") : NULL;
    if (!all)
        return -1;
    if (!json_is_object(all)) {
        fprintf(stderr, "sqlq %s: config file key accounts: expected an object of name: "
                        "connection\n", command);
        return SQLQ_EXIT_USAGE;
    }
    size_t n = json_object_size(all);
    out->names = calloc(n ? n : 1, sizeof(char *));
    out->accounts = calloc(n ? n : 1, sizeof(sqlq_account *));
    if (!out->names || !out->accounts) {
        sqlq_cli_accounts_free(out);
        return SQLQ_EXIT_FAILED;
    }
    const char *name;
    json_t *v;
    json_object_foreach(all, name, v) {
        char why[300] = "out of memory";
        char *text = connection_of(v, why, sizeof(why));
        sqlq_error err;
        sqlq_error_clear(&err);
        if (text)
            sqlq_log_add_secret(text);
        if (text && sqlq_account_parse_opts(text, opts, &out->accounts[out->count], &err) != SQLQ_OK)
            snprintf(why, sizeof(why), "%.290s", err.message);
        bool ok = text && out->accounts[out->count];
        free(text);
        if (ok)
            out->names[out->count] = strdup(name);
        if (!ok || !out->names[out->count]) {
            fprintf(stderr, "sqlq %s: config file accounts key %s: %s\n", command, name, why);
            sqlq_account_destroy(out->accounts[out->count]);
            out->accounts[out->count] = NULL;
            sqlq_cli_accounts_free(out);
            return SQLQ_EXIT_USAGE;
        }
        out->count++;
    }
    return -1;
}
