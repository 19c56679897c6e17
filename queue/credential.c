#include "credential.h"

#include "credential_token.h"

#include <stdlib.h>
#include <string.h>

/* SharedKey: "Authorization: SharedKey account:signature" over the canonical request. */
typedef struct key_credential {
    sqlq_credential base;
    sqlq_shared_key *key;
} key_credential;

static sqlq_result key_authorize(sqlq_credential *c, const sqlq_auth_request *req, sqlq_error *err)
{
    key_credential *k = (key_credential *)c;
    char auth[256];
    sqlq_result r = sqlq_shared_key_sign(k->key, req->sign, auth, sizeof(auth), err);
    if (r != SQLQ_OK)
        return r;
    if (!sqlq_http_exchange_header(req->ex, "Authorization: %s", auth))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "request headers too long");
    return SQLQ_OK;
}

static void key_destroy(sqlq_credential *c)
{
    key_credential *k = (key_credential *)c;
    sqlq_shared_key_destroy(k->key);
    free(k);
}

static const sqlq_credential_ops key_ops = {"SharedKey", key_authorize, NULL, key_destroy};

/* SAS: the token's query after the request's own parameters. */
typedef struct sas_credential {
    sqlq_credential base;
    char *sas;
} sas_credential;

static sqlq_result sas_authorize(sqlq_credential *c, const sqlq_auth_request *req, sqlq_error *err)
{
    sas_credential *s = (sas_credential *)c;
    sqlq_result r = sqlq_buf_addc(req->url, req->url_has_query ? '&' : '?');
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(req->url, s->sas);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "request URL too long");
    return SQLQ_OK;
}

static void sas_destroy(sqlq_credential *c)
{
    sas_credential *s = (sas_credential *)c;
    free(s->sas);
    free(s);
}

static const sqlq_credential_ops sas_ops = {"SAS", sas_authorize, NULL, sas_destroy};

/* Token: "Authorization: Bearer …" from the process-wide cache. */
typedef struct token_credential {
    sqlq_credential base;
    sqlq_token_cache *cache;
    sqlq_buf token;       /* this client's copy of the current token */
    uint64_t generation;  /* which token it is, so a refusal drops only that one */
} token_credential;

static sqlq_result token_authorize(sqlq_credential *c, const sqlq_auth_request *req,
                                   sqlq_error *err)
{
    token_credential *t = (token_credential *)c;
    sqlq_result r = sqlq_token_cache_get(t->cache, &t->token, &t->generation, err);
    if (r != SQLQ_OK)
        return r;
    if (!sqlq_http_exchange_authorization(req->ex, "Bearer", sqlq_buf_str(&t->token)))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory for the Authorization header");
    return SQLQ_OK;
}

/* Azure answers an expired or invalid token with 401 InvalidAuthenticationInfo; Azurite with
 * 403 AuthenticationFailed ("Lifetime validation failed"). A missing role (403
 * AuthorizationPermissionMismatch) is not the token's fault: no refresh helps. */
static bool token_refused(sqlq_credential *c, int status, const char *azure_code)
{
    token_credential *t = (token_credential *)c;
    bool auth_code = strcmp(azure_code, "InvalidAuthenticationInfo") == 0 ||
                     strcmp(azure_code, "AuthenticationFailed") == 0;
    if (status != 401 && !(status == 403 && auth_code))
        return false;
    sqlq_token_cache_invalidate(t->cache, t->generation);
    return true;
}

static void token_destroy(sqlq_credential *c)
{
    token_credential *t = (token_credential *)c;
    if (t->token.data)
        memset(t->token.data, 0, t->token.len);
    sqlq_buf_free(&t->token);
    free(t);
}

static const sqlq_credential_ops token_ops = {"token", token_authorize, token_refused,
                                              token_destroy};

static sqlq_result nomem(sqlq_error *err)
{
    return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static sqlq_result create_token(const sqlq_account *a, sqlq_credential **out, sqlq_error *err)
{
    token_credential *t = calloc(1, sizeof(*t));
    if (!t)
        return nomem(err);
    t->base.ops = &token_ops;
    t->cache = a->token;
    sqlq_buf_init(&t->token, 64 * 1024);
    *out = &t->base;
    return SQLQ_OK;
}

sqlq_result sqlq_credential_create(const sqlq_account *a, sqlq_credential **out, sqlq_error *err)
{
    *out = NULL;
    if (a->token)
        return create_token(a, out, err);
    if (a->key) {
        key_credential *k = calloc(1, sizeof(*k));
        if (!k)
            return nomem(err);
        k->base.ops = &key_ops;
        sqlq_result r = sqlq_shared_key_create(a->name, a->key, a->key_len, &k->key, err);
        if (r != SQLQ_OK) {
            free(k);
            return r;
        }
        *out = &k->base;
        return SQLQ_OK;
    }
    if (a->sas) {
        sas_credential *s = calloc(1, sizeof(*s));
        if (!s || !(s->sas = strdup(a->sas))) {
            free(s);
            return nomem(err);
        }
        s->base.ops = &sas_ops;
        *out = &s->base;
        return SQLQ_OK;
    }
    return sqlq_error_set(err, SQLQ_E_INVALID, false, "the account has no credential");
}

sqlq_result sqlq_credential_authorize(sqlq_credential *c, const sqlq_auth_request *req,
                                      sqlq_error *err)
{
    return c->ops->authorize(c, req, err);
}

bool sqlq_credential_refused(sqlq_credential *c, int status, const char *azure_code)
{
    return c->ops->refused && c->ops->refused(c, status, azure_code ? azure_code : "");
}

void sqlq_credential_destroy(sqlq_credential *c)
{
    if (c)
        c->ops->destroy(c);
}
