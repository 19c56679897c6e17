/* Token sources (credential_token.h), with the Azure SDKs' environment variables and the
 * DefaultAzureCredential order: environment (service principal) -> workload identity ->
 * managed identity (App Service / Container Apps, else IMDS). REFERENCE.md §9. */
#include "credential_token.h"

#include "log.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define TOKEN_TIMEOUT_MS 30000L
#define TOKEN_CONNECT_TIMEOUT_MS 10000L
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

static size_t on_reply(char *data, size_t size, size_t n, void *userp)
{
    sqlq_buf *b = userp;
    return sqlq_buf_add(b, data, size * n) == SQLQ_OK ? size * n : 0;
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
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_string(v)) {
        char *end;
        errno = 0;
        long long n = strtoll(json_string_value(v), &end, 10);
        if (!errno && end != json_string_value(v) && *end == '\0')
            return n;
    }
    return -1;
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

static sqlq_result perform(const token_source *s, CURL *e, sqlq_buf *reply, sqlq_error *err)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(e, CURLOPT_URL, s->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (s->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, s->ca_file);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, TOKEN_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, TOKEN_CONNECT_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "sqlq/0.1.0");
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_reply);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, reply);
    CURLcode rc = curl_easy_perform(e);
    if (rc != CURLE_OK)
        return sqlq_error_set(err, SQLQ_E_NETWORK, true, "%s: no reply from %s: %s", s->name,
                              s->url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        char why[320];
        reply_error(reply, why, sizeof(why));
        /* 4xx: the endpoint refused this identity or secret (a configuration error); 5xx,
         * 429: the endpoint is having an outage. */
        bool transient = status >= 500 || status == 429 || status == 408;
        return sqlq_error_set(err, SQLQ_E_HTTP, transient, "%s: %ld %s", s->name, status, why);
    }
    return SQLQ_OK;
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

/* client_id=…&scope=…&grant_type=client_credentials&(client_secret=… | client_assertion…) */
static sqlq_result entra_form(const token_source *s, CURL *e, sqlq_buf *form, sqlq_error *err)
{
    char *assertion = s->kind == SRC_WORKLOAD ? read_token_file(s, err) : NULL;
    if (s->kind == SRC_WORKLOAD && !assertion)
        return SQLQ_E_INVALID;
    char scope[300];
    snprintf(scope, sizeof(scope), "%s/.default", s->resource);
    const char *proof = s->kind == SRC_WORKLOAD ? assertion : s->secret;
    char *id = curl_easy_escape(e, s->client_id, 0);
    char *sc = curl_easy_escape(e, scope, 0);
    char *pr = curl_easy_escape(e, proof, 0);
    sqlq_result r = SQLQ_E_NOMEM;
    if (id && sc && pr)
        r = sqlq_buf_printf(form, "grant_type=client_credentials&client_id=%s&scope=%s&%s%s", id,
                            sc, s->kind == SRC_WORKLOAD
                                    ? "client_assertion_type=" JWT_BEARER "&client_assertion="
                                    : "client_secret=",
                            pr);
    if (pr)
        memset(pr, 0, strlen(pr));
    curl_free(id);
    curl_free(sc);
    curl_free(pr);
    if (assertion)
        memset(assertion, 0, strlen(assertion));
    free(assertion);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "%s: cannot build the request", s->name);
    return SQLQ_OK;
}

static sqlq_result source_fetch(void *ctx, char **token, int64_t *expires_on, sqlq_error *err)
{
    const token_source *s = ctx;
    CURL *e = curl_easy_init();
    if (!e)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "%s: cannot create a curl handle", s->name);
    struct curl_slist *headers = NULL;
    sqlq_buf form, reply, line;
    sqlq_buf_init(&form, MAX_REPLY);
    sqlq_buf_init(&reply, MAX_REPLY);
    sqlq_buf_init(&line, 16 * 1024);
    sqlq_result r = SQLQ_OK;
    if (s->kind == SRC_SECRET || s->kind == SRC_WORKLOAD) {
        r = entra_form(s, e, &form, err);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, sqlq_buf_str(&form));
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)form.len);
    } else if (s->kind == SRC_APP_SERVICE) {
        r = sqlq_buf_printf(&line, "X-IDENTITY-HEADER: %s", s->header);
        headers = curl_slist_append(NULL, sqlq_buf_str(&line));
    } else {
        headers = curl_slist_append(NULL, "Metadata: true");
    }
    if (r == SQLQ_OK) {
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        r = perform(s, e, &reply, err);
    }
    if (r == SQLQ_OK)
        r = parse_reply(s, &reply, token, expires_on, err);
    if (form.data)
        memset(form.data, 0, form.len);
    if (line.data)
        memset(line.data, 0, line.len);
    if (reply.data)
        memset(reply.data, 0, reply.len);
    sqlq_buf_free(&form);
    sqlq_buf_free(&reply);
    sqlq_buf_free(&line);
    curl_slist_free_all(headers);
    curl_easy_cleanup(e);
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

static sqlq_result managed_identity_url(token_source *s, CURL *e, sqlq_error *err)
{
    char *res = curl_easy_escape(e, s->resource, 0);
    char *id = s->client_id ? curl_easy_escape(e, s->client_id, 0) : NULL;
    sqlq_buf b;
    sqlq_buf_init(&b, 4096);
    sqlq_result r = SQLQ_E_NOMEM;
    if (res && (id || !s->client_id)) {
        if (s->kind == SRC_APP_SERVICE) {
            const char *base = env("IDENTITY_ENDPOINT");
            r = sqlq_buf_printf(&b, "%s%sapi-version=2019-08-01&resource=%s", base,
                                strchr(base, '?') ? "&" : "?", res);
        } else {
            const char *host = env("AZURE_POD_IDENTITY_AUTHORITY_HOST");
            host = host ? host : DEFAULT_IMDS;
            size_t n = strlen(host);
            r = sqlq_buf_printf(&b, "%.*s/metadata/identity/oauth2/token?api-version=2018-02-01"
                                    "&resource=%s",
                                (int)(n && host[n - 1] == '/' ? n - 1 : n), host, res);
        }
        if (r == SQLQ_OK && id)
            r = sqlq_buf_printf(&b, "&client_id=%s", id);
    }
    curl_free(res);
    curl_free(id);
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
    }
    CURL *e = curl_easy_init();
    sqlq_result r = e ? managed_identity_url(s, e, err)
                      : sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot create a curl handle");
    curl_easy_cleanup(e);
    return r;
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
