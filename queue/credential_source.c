/* Token sources (credential_token.h), with the Azure SDKs' environment variables and the
 * DefaultAzureCredential order: environment (service principal) -> workload identity ->
 * managed identity (App Service / Container Apps, else IMDS). REFERENCE.md §9. */
#include "credential_token.h"

#include "classify.h"
#include "http.h"
#include "json_int.h"
#include "log.h"
#include "secret_env.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define TOKEN_TIMEOUT_MS 30000L /* each token request, as a queue request */
#define MAX_REPLY (256 * 1024)
#define DEFAULT_AUTHORITY "https://login.microsoftonline.com/"
#define DEFAULT_IMDS "http://169.254.169.254"
#define JWT_BEARER "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

typedef enum { SRC_SECRET, SRC_WORKLOAD, SRC_APP_SERVICE, SRC_IMDS } source_kind;

typedef struct token_source {
    source_kind kind;
    char *name;      /* "managed identity (IMDS)" */
    char *url;       /* the token endpoint, with the query for managed identity */
    char *client_id; /* NULL = system-assigned identity */
    char *secret;    /* AZURE_CLIENT_SECRET */
    char *header;    /* IDENTITY_HEADER */
    char *token_file; /* AZURE_FEDERATED_TOKEN_FILE */
    char *ca_file;
    char *resource;
} token_source;

static void source_free(void *ctx)
{
    token_source *s = ctx;
    if (!s)
        return;
    free(s->name);
    free(s->url);
    free(s->client_id);
    if (s->secret)
        memset(s->secret, 0, strlen(s->secret));
    free(s->secret);
    free(s->header);
    free(s->token_file);
    free(s->ca_file);
    free(s->resource);
    free(s);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* ---- the request ---- */

/* Percent-encodes s (RFC 3986 unreserved characters kept) onto b. */
static sqlq_result add_encoded(sqlq_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    sqlq_result r = SQLQ_OK;
    for (const unsigned char *p = (const unsigned char *)s; r == SQLQ_OK && *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p)) {
            r = sqlq_buf_addc(b, (char)*p);
        } else {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            r = sqlq_buf_add(b, esc, 3);
        }
    }
    return r;
}

/* What the endpoint said went wrong, from its JSON (never the request's secrets). */
static void reply_error(const sqlq_buf *reply, char *out, size_t size)
{
    json_t *j = json_loadb(reply->data ? reply->data : "", reply->len, 0, NULL);
    const char *keys[] = {"error_description", "message", "error"};
    out[0] = '\0';
    for (size_t i = 0; j && !out[0] && i < 3; i++) {
        json_t *v = json_object_get(j, keys[i]);
        if (json_is_object(v)) /* {"error": {"code": …, "message": …}} */
            v = json_object_get(v, "message");
        if (json_is_string(v))
            snprintf(out, size, "%.300s", json_string_value(v));
    }
    json_decref(j);
    if (!out[0])
        snprintf(out, size, "%.200s", reply->len ? sqlq_buf_str(reply) : "(empty reply)");
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '"')
            *p = ' ';
}

static int64_t json_seconds(json_t *v)
{
    int64_t n = -1;
    return sqlq_json_int64(v, &n) ? n : -1;
}

/* access_token and expires_on (App Service, IMDS) or expires_in (Entra). */
static sqlq_result parse_reply(const token_source *s, const sqlq_buf *reply, char **token,
                               int64_t *expires_on, sqlq_error *err)
{
    json_t *j = json_loadb(reply->data ? reply->data : "", reply->len, 0, NULL);
    json_t *t = j ? json_object_get(j, "access_token") : NULL;
    int64_t on = j ? json_seconds(json_object_get(j, "expires_on")) : -1;
    int64_t in = j ? json_seconds(json_object_get(j, "expires_in")) : -1;
    sqlq_result r = SQLQ_OK;
    if (!json_is_string(t) || !json_string_length(t))
        r = sqlq_error_set(err, SQLQ_E_PARSE, true, "%s: the reply has no access_token", s->name);
    else if (on <= 0 && in <= 0)
        r = sqlq_error_set(err, SQLQ_E_PARSE, true,
                           "%s: the reply has neither expires_on nor expires_in", s->name);
    if (r == SQLQ_OK) {
        *token = strdup(json_string_value(t));
        *expires_on = on > 0 ? on : (int64_t)time(NULL) + in;
        if (!*token)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    json_decref(j);
    return r;
}

/* The exchange's outcome: SQLQ_OK for 200, else the error naming the source. */
static sqlq_result outcome(const token_source *s, const sqlq_http_exchange *ex, sqlq_error *err)
{
    const sqlq_http_response *resp = &ex->response;
    if (resp->status == 0)
        return sqlq_error_set(err, SQLQ_E_NETWORK, sqlq_classify_net_transient(resp->net),
                              "%s cannot be reached at %s: %s", s->name, s->url,
                              resp->net_message);
    if (resp->status == 200)
        return SQLQ_OK;
    char why[320];
    reply_error(&resp->body, why, sizeof(why));
    /* 4xx: the endpoint refused this identity or secret (a configuration error); 5xx, 429:
     * the endpoint is having an outage. retry/fault.c reads "refused the credential". */
    bool transient = resp->status >= 500 || resp->status == 429 || resp->status == 408;
    return sqlq_error_set(err, SQLQ_E_HTTP, transient, "%s %s: %d %s", s->name,
                          transient ? "failed" : "refused the credential", resp->status, why);
}

/* The federated token, re-read for every request (the kubelet rotates the file). */
static char *read_token_file(const token_source *s, sqlq_error *err)
{
    FILE *f = fopen(s->token_file, "rb");
    if (!f) {
        sqlq_error_set(err, SQLQ_E_INVALID, true, "%s: cannot read AZURE_FEDERATED_TOKEN_FILE "
                       "'%s': %s", s->name, s->token_file, strerror(errno));
        return NULL;
    }
    sqlq_buf b;
    sqlq_buf_init(&b, MAX_REPLY);
    char chunk[4096];
    size_t n;
    sqlq_result r = SQLQ_OK;
    while (r == SQLQ_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        r = sqlq_buf_add(&b, chunk, n);
    fclose(f);
    while (b.len && strchr(" \t\r\n", b.data[b.len - 1]))
        b.data[--b.len] = '\0';
    if (r != SQLQ_OK || b.len == 0) {
        sqlq_buf_free(&b);
        sqlq_error_set(err, SQLQ_E_INVALID, true, "%s: AZURE_FEDERATED_TOKEN_FILE '%s' is %s",
                       s->name, s->token_file, r != SQLQ_OK ? "too large" : "empty");
        return NULL;
    }
    char *text = sqlq_buf_take(&b, NULL);
    sqlq_log_add_secret(text);
    return text;
}

/* grant_type=client_credentials&client_id=…&scope=…&(client_secret=… | client_assertion…) */
static sqlq_result entra_form(const token_source *s, sqlq_buf *form, sqlq_error *err)
{
    char *assertion = s->kind == SRC_WORKLOAD ? read_token_file(s, err) : NULL;
    if (s->kind == SRC_WORKLOAD && !assertion)
        return SQLQ_E_INVALID;
    sqlq_result r = sqlq_buf_adds(form, "grant_type=client_credentials&client_id=");
    if (r == SQLQ_OK)
        r = add_encoded(form, s->client_id);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(form, "&scope=");
    if (r == SQLQ_OK)
        r = add_encoded(form, s->resource);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(form, "%2F.default&");
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(form, assertion ? "client_assertion_type=" JWT_BEARER "&client_assertion="
                                          : "client_secret=");
    if (r == SQLQ_OK)
        r = add_encoded(form, assertion ? assertion : s->secret);
    if (assertion)
        memset(assertion, 0, strlen(assertion));
    free(assertion);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "%s: cannot build the request", s->name);
    return SQLQ_OK;
}

/* The request: a form POST to Entra, or a GET with the identity header to managed identity. */
static sqlq_result build_request(const token_source *s, sqlq_http_exchange *ex, sqlq_error *err)
{
    sqlq_http_exchange_reset(ex);
    sqlq_result r = sqlq_buf_adds(&ex->url, s->url);
    bool ok = true;
    if (r == SQLQ_OK && (s->kind == SRC_SECRET || s->kind == SRC_WORKLOAD)) {
        ex->method = "POST";
        r = entra_form(s, &ex->body, err);
        ok = sqlq_http_exchange_header(ex, "Content-Type: application/x-www-form-urlencoded");
    } else if (r == SQLQ_OK) {
        ex->method = "GET";
        ok = s->kind == SRC_APP_SERVICE
                 ? sqlq_http_exchange_header(ex, "X-IDENTITY-HEADER: %s", s->header)
                 : sqlq_http_exchange_header(ex, "Metadata: true");
    }
    if (r == SQLQ_OK && !ok)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false, "%s: the request headers are too long",
                           s->name);
    return r;
}

static sqlq_result source_fetch(void *ctx, char **token, int64_t *expires_on, sqlq_error *err)
{
    const token_source *s = ctx;
    sqlq_http *h = NULL;
    sqlq_http_exchange ex;
    memset(&ex, 0, sizeof(ex));
    sqlq_result r = sqlq_http_create(TOKEN_TIMEOUT_MS, &h, err);
    if (r == SQLQ_OK && s->ca_file)
        r = sqlq_http_set_ca_file(h, s->ca_file, err);
    bool init = r == SQLQ_OK && (r = sqlq_http_exchange_init(h, &ex, err)) == SQLQ_OK;
    if (r == SQLQ_OK)
        r = build_request(s, &ex, err);
    if (r == SQLQ_OK) {
        (void)sqlq_http_perform(h, &ex); /* the outcome tells a failed exchange */
        r = outcome(s, &ex, err);
    }
    if (r == SQLQ_OK)
        r = parse_reply(s, &ex.response.body, token, expires_on, err);
    if (ex.body.data) /* the secret or federated token */
        memset(ex.body.data, 0, ex.body.len);
    if (ex.response.body.data) /* the access token */
        memset(ex.response.body.data, 0, ex.response.body.len);
    if (init)
        sqlq_http_exchange_cleanup(h, &ex);
    sqlq_http_destroy(h);
    return r;
}

/* ---- choosing the source ---- */

static sqlq_result missing(const char *what, const char *vars, sqlq_error *err)
{
    return sqlq_error_set(err, SQLQ_E_INVALID, false, "credential %s needs %s", what, vars);
}

/* {AZURE_AUTHORITY_HOST|https://login.microsoftonline.com/}{tenant}/oauth2/v2.0/token */
static sqlq_result entra_url(token_source *s, const char *tenant, sqlq_error *err)
{
    const char *host = env("AZURE_AUTHORITY_HOST") ? env("AZURE_AUTHORITY_HOST") : DEFAULT_AUTHORITY;
    if (strncasecmp(host, "https://", 8) != 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "AZURE_AUTHORITY_HOST must be an https:// URL (the client secret or "
                              "federated token is sent there), not '%.100s'",
                              host);
    size_t n = strlen(host);
    sqlq_buf b;
    sqlq_buf_init(&b, 4096);
    sqlq_result r = sqlq_buf_printf(&b, "%s%s%s/oauth2/v2.0/token", host,
                                    n && host[n - 1] == '/' ? "" : "/", tenant);
    s->url = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    return s->url ? SQLQ_OK
                  : sqlq_error_set(err, SQLQ_E_INVALID, false, "AZURE_AUTHORITY_HOST is too long");
}

static sqlq_result managed_identity_url(token_source *s, sqlq_error *err)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 4096);
    sqlq_result r;
    if (s->kind == SRC_APP_SERVICE) {
        const char *base = env("IDENTITY_ENDPOINT");
        r = sqlq_buf_printf(&b, "%s%sapi-version=2019-08-01&resource=", base,
                            strchr(base, '?') ? "&" : "?");
    } else {
        const char *host = env("AZURE_POD_IDENTITY_AUTHORITY_HOST");
        host = host ? host : DEFAULT_IMDS;
        size_t n = strlen(host);
        r = sqlq_buf_printf(&b, "%.*s/metadata/identity/oauth2/token?api-version=2018-02-01"
                                "&resource=",
                            (int)(n && host[n - 1] == '/' ? n - 1 : n), host);
    }
    if (r == SQLQ_OK)
        r = add_encoded(&b, s->resource);
    if (r == SQLQ_OK && s->client_id)
        r = sqlq_buf_adds(&b, "&client_id=");
    if (r == SQLQ_OK && s->client_id)
        r = add_encoded(&b, s->client_id);
    s->url = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    return s->url ? SQLQ_OK
                  : sqlq_error_set(err, SQLQ_E_INVALID, false,
                                   "the managed identity endpoint URL is too long");
}

static sqlq_result set_secret_source(token_source *s, const sqlq_token_settings *st,
                                     sqlq_error *err)
{
    const char *tenant = env("AZURE_TENANT_ID"), *id = env("AZURE_CLIENT_ID");
    const char *secret = env("AZURE_CLIENT_SECRET");
    (void)st; /* the service principal is AZURE_CLIENT_ID's; clientId is for identities */
    if (!tenant || !id || !secret)
        return missing("environment (service principal)",
                       "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET", err);
    s->kind = SRC_SECRET;
    s->name = strdup("service principal (AZURE_CLIENT_SECRET)");
    s->client_id = strdup(id);
    s->secret = strdup(secret);
    sqlq_log_add_secret(secret);
    sqlq_secret_env_wipe("AZURE_CLIENT_SECRET"); /* kept in s->secret */
    return entra_url(s, tenant, err);
}

static sqlq_result set_workload_source(token_source *s, const sqlq_token_settings *st,
                                       sqlq_error *err)
{
    const char *tenant = env("AZURE_TENANT_ID"), *file = env("AZURE_FEDERATED_TOKEN_FILE");
    const char *id = st->client_id && *st->client_id ? st->client_id : env("AZURE_CLIENT_ID");
    if (!tenant || !id || !file)
        return missing("workloadidentity", "AZURE_FEDERATED_TOKEN_FILE, AZURE_TENANT_ID and "
                                           "AZURE_CLIENT_ID (or clientId)",
                       err);
    s->kind = SRC_WORKLOAD;
    s->name = strdup("workload identity (AZURE_FEDERATED_TOKEN_FILE)");
    s->client_id = strdup(id);
    s->token_file = strdup(file);
    return entra_url(s, tenant, err);
}

static sqlq_result set_managed_source(token_source *s, const sqlq_token_settings *st,
                                      sqlq_error *err)
{
    bool app_service = env("IDENTITY_ENDPOINT") && env("IDENTITY_HEADER");
    s->kind = app_service ? SRC_APP_SERVICE : SRC_IMDS;
    s->name = strdup(app_service ? "managed identity (IDENTITY_ENDPOINT)"
                                 : "managed identity (IMDS)");
    s->client_id = dup_or_null(st->client_id && *st->client_id ? st->client_id : NULL);
    if (app_service) {
        s->header = strdup(env("IDENTITY_HEADER"));
        sqlq_log_add_secret(s->header);
        sqlq_secret_env_wipe("IDENTITY_HEADER");
    }
    return managed_identity_url(s, err);
}

/* The chain: the first source whose variables are all set; managed identity last. */
static sqlq_result choose(token_source *s, const sqlq_token_settings *st, sqlq_error *err)
{
    const char *c = st->credential && *st->credential ? st->credential : NULL;
    if (c && strcasecmp(c, "managedidentity") == 0)
        return set_managed_source(s, st, err);
    if (c && strcasecmp(c, "workloadidentity") == 0)
        return set_workload_source(s, st, err);
    if (c && strcasecmp(c, "environment") == 0)
        return set_secret_source(s, st, err);
    if (c)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "credential '%.40s' is not known (allowed managedidentity, "
                              "workloadidentity, environment; unset = try them in the "
                              "DefaultAzureCredential order)",
                              c);
    if (env("AZURE_TENANT_ID") && env("AZURE_CLIENT_ID") && env("AZURE_CLIENT_SECRET"))
        return set_secret_source(s, st, err);
    if (env("AZURE_FEDERATED_TOKEN_FILE"))
        return set_workload_source(s, st, err);
    return set_managed_source(s, st, err);
}

sqlq_result sqlq_token_cache_from_env(const sqlq_token_settings *st, sqlq_token_cache **out,
                                      sqlq_error *err)
{
    *out = NULL;
    token_source *s = calloc(1, sizeof(*s));
    if (!s)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    s->resource = strdup(st->resource ? st->resource : "https://storage.azure.com");
    s->ca_file = dup_or_null(st->ca_file && *st->ca_file ? st->ca_file : NULL);
    sqlq_result r = choose(s, st, err);
    if (r == SQLQ_OK && (!s->name || !s->resource || !s->url))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r == SQLQ_OK) {
        sqlq_token_cache_options o = {source_fetch, s, source_free, NULL, NULL, s->name};
        r = sqlq_token_cache_create(&o, out, err);
    }
    if (r != SQLQ_OK) {
        source_free(s);
        return r;
    }
    SQLQ_INFO("token.source", "source=\"%s\" endpoint=%s", s->name, s->url);
    return SQLQ_OK;
}
