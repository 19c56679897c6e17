/* shard_set: the queues one route or consumer works on. */
#include "shard_set.h"

#include "queue_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sqlq_shard_set_free(sqlq_shard_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++) {
        free(s->queues ? s->queues[i] : NULL);
        free(s->accounts ? s->accounts[i] : NULL);
    }
    free(s->queues);
    free(s->accounts);
    memset(s, 0, sizeof(*s));
}

/* An account name: 1..64 of letters, digits, '_' and '-'. */
static bool account_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

/* Append entry (account may be NULL) after checking the queue name and its poison room. */
static sqlq_result add(sqlq_shard_set *s, const char *account, size_t alen, const char *queue,
                       sqlq_error *err)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    char poison[64];
    if (!sqlq_queue_name_valid(queue, &e))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "queue '%s' is not allowed: %s", queue,
                              e.message);
    if (!sqlq_queue_poison_name(queue, poison, sizeof(poison)))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "queue '%s' is not allowed: it must leave room for {queue}-poison "
                              "(at most 56 characters, not ending in -poison)", queue);
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->queues[i], queue) == 0)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "queue '%s' appears twice in the shard set", queue);
    s->queues[s->count] = strdup(queue);
    s->accounts[s->count] = account ? strndup(account, alen) : NULL;
    if (!s->queues[s->count] || (account && !s->accounts[s->count])) {
        free(s->queues[s->count]);
        free(s->accounts[s->count]);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    s->count++;
    return SQLQ_OK;
}

/* "[account:]queue" of len n: the account part (NULL when none) and the queue into out. */
static sqlq_result split_entry(const char *p, size_t n, const char **acc, size_t *alen, char *out,
                               size_t out_size, sqlq_error *err)
{
    const char *colon = memchr(p, ':', n);
    *acc = NULL;
    *alen = 0;
    if (colon) {
        *acc = p;
        *alen = (size_t)(colon - p);
        if (!account_name_ok(p, *alen))
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "'%.*s': the account name before ':' is not allowed (1-64 "
                                  "letters, digits, '_' or '-', as named in \"accounts\")",
                                  (int)n, p);
        n -= *alen + 1;
        p = colon + 1;
    }
    if (n == 0 || n >= out_size)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "a queue name of 3-63 characters is needed, got '%.*s'", (int)n, p);
    memcpy(out, p, n);
    out[n] = '\0';
    return SQLQ_OK;
}

static sqlq_result parse_count(sqlq_shard_set *s, const char *spec, long long shards,
                               const char *const *accounts, size_t n_accounts, sqlq_error *err)
{
    const char *acc;
    size_t alen;
    char base[64];
    if (strchr(spec, ','))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "shards %lld with a list of queues '%s': give one or the other",
                              shards, spec);
    sqlq_result r = split_entry(spec, strlen(spec), &acc, &alen, base, sizeof(base), err);
    if (r == SQLQ_OK && acc && n_accounts > 0)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "'%s' names an account and shard_accounts names others: give one", spec);
    for (long long i = 0; r == SQLQ_OK && i < shards; i++) {
        char name[80];
        snprintf(name, sizeof(name), "%s-%lld", base, i);
        const char *a = n_accounts ? accounts[(size_t)i % n_accounts] : acc;
        size_t al = n_accounts ? strlen(a) : alen;
        if (a && !account_name_ok(a, al))
            r = sqlq_error_set(err, SQLQ_E_INVALID, false, "shard account '%s' is not allowed "
                               "(1-64 letters, digits, '_' or '-')", a);
        else
            r = add(s, a, al, name, err);
    }
    return r;
}

sqlq_result sqlq_shard_set_parse(const char *spec, long long shards, const char *const *accounts,
                                 size_t n_accounts, sqlq_shard_set *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!spec || !*spec)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "no queue given");
    if (shards < 0 || shards > SQLQ_SHARDS_MAX)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "shards %lld is not allowed (0 or 1: one queue; 2..%d)", shards,
                              SQLQ_SHARDS_MAX);
    if (n_accounts > 0 && shards < 2)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "shard_accounts needs shards >= 2 (a list of queues names each "
                              "one's account as account:queue)");
    size_t cap = shards >= 2 ? (size_t)shards : 1;
    for (const char *p = spec; shards < 2 && *p; p++)
        cap += *p == ',';
    if (cap > SQLQ_SHARDS_MAX)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "at most %d queues in a shard set",
                              SQLQ_SHARDS_MAX);
    out->queues = calloc(cap, sizeof(char *));
    out->accounts = calloc(cap, sizeof(char *));
    if (!out->queues || !out->accounts) {
        sqlq_shard_set_free(out);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    sqlq_result r = SQLQ_OK;
    if (shards >= 2) {
        r = parse_count(out, spec, shards, accounts, n_accounts, err);
    } else {
        for (const char *p = spec; r == SQLQ_OK;) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            const char *acc;
            size_t alen;
            char name[64];
            r = split_entry(p, n, &acc, &alen, name, sizeof(name), err);
            if (r == SQLQ_OK)
                r = add(out, acc, alen, name, err);
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    if (r != SQLQ_OK)
        sqlq_shard_set_free(out);
    return r;
}
