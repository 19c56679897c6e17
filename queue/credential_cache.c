/* The process-wide token cache (credential_token.h). */
#include "credential_token.h"

#include "credential.h"
#include "log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SQLQ_TOKEN_RETRY_TEXT "10" /* SQLQ_TOKEN_RETRY_S as text */

struct sqlq_token_cache {
    sqlq_token_cache_options o;
    char *source;
    pthread_mutex_t lock;
    pthread_cond_t fetched; /* signalled when a token request ends */
    bool fetching;          /* a token request is in flight (outside the lock) */
    char *token;            /* NULL = none */
    int64_t expires_on;
    int64_t refresh_at;
    int64_t retry_at;       /* after a failed refresh: no new request before this */
    uint64_t generation;    /* bumped with every new token */
    uint64_t fetches;
    sqlq_error last_error;  /* why the last token request failed (names the source) */
};

int64_t sqlq_token_refresh_time(int64_t obtained, int64_t expires_on)
{
    int64_t lifetime = expires_on > obtained ? expires_on - obtained : 0;
    int64_t margin = lifetime / 2 < 300 ? lifetime / 2 : 300;
    return expires_on - margin;
}

static int64_t now_s(const sqlq_token_cache *c)
{
    return c->o.now_s ? c->o.now_s(c->o.now_ctx) : (int64_t)time(NULL);
}

static void drop_token(sqlq_token_cache *c)
{
    if (c->token)
        memset(c->token, 0, strlen(c->token));
    free(c->token);
    c->token = NULL;
}

sqlq_result sqlq_token_cache_create(const sqlq_token_cache_options *o, sqlq_token_cache **out,
                                    sqlq_error *err)
{
    *out = NULL;
    sqlq_token_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    c->o = *o;
    c->source = strdup(o->source ? o->source : "token source");
    if (!c->source) {
        free(c);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    c->o.source = c->source;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->fetched, NULL);
    *out = c;
    return SQLQ_OK;
}

void sqlq_token_cache_destroy(sqlq_token_cache *c)
{
    if (!c)
        return;
    drop_token(c);
    if (c->o.fetch_ctx_free)
        c->o.fetch_ctx_free(c->o.fetch_ctx);
    pthread_cond_destroy(&c->fetched);
    pthread_mutex_destroy(&c->lock);
    free(c->source);
    free(c);
}

const char *sqlq_token_cache_source(const sqlq_token_cache *c)
{
    return c->source;
}

static sqlq_result copy_out(sqlq_token_cache *c, sqlq_buf *out, uint64_t *generation,
                            sqlq_error *err)
{
    sqlq_buf_reset(out);
    if (sqlq_buf_adds(out, c->token) != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory for the token");
    *generation = c->generation;
    return SQLQ_OK;
}

/* One token request, made outside the lock by the one caller that set c->fetching. */
static sqlq_result fetch_unlocked(sqlq_token_cache *c, char **token, int64_t *expires_on,
                                  sqlq_error *e)
{
    *token = NULL;
    *expires_on = 0;
    sqlq_result r = c->o.fetch(c->o.fetch_ctx, token, expires_on, e);
    if (r == SQLQ_OK && (!*token || !**token))
        r = sqlq_error_set(e, SQLQ_E_PARSE, false, "%s: the reply holds no token", c->source);
    if (r != SQLQ_OK) {
        free(*token);
        *token = NULL;
    }
    return r;
}

/* Stores a fetched token or records the failure; called with the lock held. */
static void settle(sqlq_token_cache *c, sqlq_result r, char *token, int64_t expires_on,
                   int64_t asked_at, const sqlq_error *e)
{
    c->fetches++;
    if (r == SQLQ_OK) {
        drop_token(c);
        c->token = token;
        c->expires_on = expires_on;
        c->refresh_at = sqlq_token_refresh_time(asked_at, expires_on);
        c->retry_at = 0;
        c->generation++;
        SQLQ_INFO("token.acquired", "source=\"%s\" expires_in_s=%lld", c->source,
                  (long long)(expires_on - asked_at));
        return;
    }
    c->retry_at = asked_at + SQLQ_TOKEN_RETRY_S;
    c->last_error = *e;
    bool still_valid = c->token && now_s(c) < c->expires_on;
    SQLQ_WARN("token.failed", "source=\"%s\" err=\"%s\" cached_token_used=%s", c->source,
              e->message, still_valid ? "true" : "false");
}

/* The error of a failed token request e (NULL: the last one, not retried yet). Transient
 * unless the endpoint refused the request itself (a 4xx: wrong secret, unknown identity). */
static sqlq_result unavailable(const sqlq_token_cache *c, const sqlq_error *e, sqlq_error *err)
{
    const sqlq_error *why = e ? e : &c->last_error;
    sqlq_error out;
    sqlq_error_clear(&out);
    sqlq_error_set(&out, SQLQ_E_NETWORK, why->transient, "no access token: %.400s%s",
                   why->code != SQLQ_OK ? why->message : c->source,
                   e ? "" : " (asked again within " SQLQ_TOKEN_RETRY_TEXT " s)");
    snprintf(out.azure_code, sizeof(out.azure_code), "%s", SQLQ_TOKEN_UNAVAILABLE);
    if (err && err->code == SQLQ_OK)
        *err = out;
    return out.code;
}

sqlq_result sqlq_token_cache_get(sqlq_token_cache *c, sqlq_buf *out, uint64_t *generation,
                                 sqlq_error *err)
{
    pthread_mutex_lock(&c->lock);
    for (;;) {
        int64_t now = now_s(c);
        bool valid = c->token && now < c->expires_on;
        bool due = !valid || now >= c->refresh_at;
        bool may_ask = now >= c->retry_at;
        if (valid && (!due || c->fetching || !may_ask)) {
            sqlq_result r = copy_out(c, out, generation, err);
            pthread_mutex_unlock(&c->lock);
            return r;
        }
        if (c->fetching) { /* another caller is asking: wait for its answer */
            pthread_cond_wait(&c->fetched, &c->lock);
            continue;
        }
        if (!may_ask) {
            pthread_mutex_unlock(&c->lock);
            return unavailable(c, NULL, err);
        }
        c->fetching = true;
        pthread_mutex_unlock(&c->lock);
        char *token;
        int64_t expires_on;
        sqlq_error e;
        sqlq_error_clear(&e);
        sqlq_result r = fetch_unlocked(c, &token, &expires_on, &e);
        pthread_mutex_lock(&c->lock);
        settle(c, r, token, expires_on, now, &e);
        c->fetching = false;
        pthread_cond_broadcast(&c->fetched);
        if (r != SQLQ_OK && !(c->token && now_s(c) < c->expires_on)) {
            pthread_mutex_unlock(&c->lock);
            return unavailable(c, &e, err);
        }
    }
}

void sqlq_token_cache_invalidate(sqlq_token_cache *c, uint64_t generation)
{
    pthread_mutex_lock(&c->lock);
    if (c->token && c->generation == generation) {
        SQLQ_INFO("token.refused", "source=\"%s\" note=\"the service refused the cached token: "
                                   "asking for a new one\"",
                  c->source);
        drop_token(c);
        c->retry_at = 0;
    }
    pthread_mutex_unlock(&c->lock);
}

int64_t sqlq_token_cache_refresh_at(sqlq_token_cache *c)
{
    pthread_mutex_lock(&c->lock);
    int64_t t = c->token ? c->refresh_at : 0;
    pthread_mutex_unlock(&c->lock);
    return t;
}

uint64_t sqlq_token_cache_fetches(sqlq_token_cache *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t n = c->fetches;
    pthread_mutex_unlock(&c->lock);
    return n;
}
