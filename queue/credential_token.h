/* credential_token: Microsoft Entra ID access tokens for Azure Storage: the process-wide token
 * cache every route thread and consumer worker shares, and the sources it asks
 * (credential_source.c: service principal, workload identity, managed identity). */
#ifndef SQLQ_CREDENTIAL_TOKEN_H
#define SQLQ_CREDENTIAL_TOKEN_H

#include "buf.h"
#include "result.h"

#include <stdbool.h>
#include <stdint.h>

/* Asks a token source for a fresh token: *token malloc'd, *expires_on in epoch seconds. */
typedef sqlq_result (*sqlq_token_fetch_fn)(void *ctx, char **token, int64_t *expires_on,
                                           sqlq_error *err);

typedef struct sqlq_token_cache_options {
    sqlq_token_fetch_fn fetch;
    void *fetch_ctx;
    void (*fetch_ctx_free)(void *ctx); /* NULL = nothing to free */
    int64_t (*now_s)(void *ctx);       /* wall clock in epoch seconds; NULL = time() */
    void *now_ctx;
    const char *source;                /* for messages: "managed identity (IMDS)" */
} sqlq_token_cache_options;

/* Thread-safe: one token request at a time (other callers wait for it); a token is refreshed
 * once less than min(5 min, half its lifetime) remains. */
typedef struct sqlq_token_cache sqlq_token_cache;

SQLQ_NODISCARD sqlq_result sqlq_token_cache_create(const sqlq_token_cache_options *o,
                                                   sqlq_token_cache **out, sqlq_error *err);
void sqlq_token_cache_destroy(sqlq_token_cache *c);

/* A valid token into out (replacing its content) and its generation. When a refresh fails
 * while the cached token is still valid, that token is used (a warning is logged, the next
 * attempt waits SQLQ_TOKEN_RETRY_S). With no valid token: SQLQ_E_NETWORK, transient,
 * azure_code SQLQ_TOKEN_UNAVAILABLE, the message naming the source (never a secret). */
#define SQLQ_TOKEN_RETRY_S 10
SQLQ_NODISCARD sqlq_result sqlq_token_cache_get(sqlq_token_cache *c, sqlq_buf *out,
                                                uint64_t *generation, sqlq_error *err);
/* The service refused token `generation`: the next get fetches a new one (a no-op when a newer
 * token is already cached). */
void sqlq_token_cache_invalidate(sqlq_token_cache *c, uint64_t generation);
/* When the cached token is due for refresh (0 = none cached); for tests. */
int64_t sqlq_token_cache_refresh_at(sqlq_token_cache *c);
/* How many token requests were made (for tests and metrics). */
uint64_t sqlq_token_cache_fetches(sqlq_token_cache *c);
/* The refresh rule: at what time a token obtained at `obtained` and expiring at `expires_on`
 * is refreshed. */
int64_t sqlq_token_refresh_time(int64_t obtained, int64_t expires_on);

/* Where tokens come from (the DefaultAzureCredential chain, settings as Azure Functions). */
typedef struct sqlq_token_settings {
    const char *credential; /* NULL/"" = the chain; managedidentity | workloadidentity |
                             * environment */
    const char *client_id;  /* a user-assigned managed identity / the workload's app */
    const char *ca_file;    /* PEM bundle for https token endpoints; NULL = system */
    const char *resource;   /* "https://storage.azure.com" */
} sqlq_token_settings;

/* A cache over the source the settings and the standard environment variables choose. No
 * request is made here. A missing variable for an explicit credential is SQLQ_E_INVALID naming
 * it. */
SQLQ_NODISCARD sqlq_result sqlq_token_cache_from_env(const sqlq_token_settings *s,
                                                     sqlq_token_cache **out, sqlq_error *err);
/* The chosen source's name, e.g. "managed identity (IDENTITY_ENDPOINT)". */
const char *sqlq_token_cache_source(const sqlq_token_cache *c);

#endif
