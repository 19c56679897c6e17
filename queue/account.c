#include "account.h"

#include "buf.h"
#include "codec.h"
#include "credential_token.h"
#include "log.h"
#include "queue_client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEV_ACCOUNT "devstoreaccount1"
#define DEV_KEY                                                                                    \
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define DEV_QUEUE_PORT "10001"

/* The connection-string keys we understand; each points at a slot in `fields`. */
enum {
    F_PROTOCOL,
    F_NAME,
    F_KEY,
    F_SUFFIX,
    F_QUEUE_ENDPOINT,
    F_SAS,
    F_DEV,
    F_DEV_PROXY,
    F_OTHER_ENDPOINT, /* Blob/Table/FileEndpoint: explicit endpoints, so no queue fallback */
    F_SERVICE_URI,    /* QueueServiceUri: Microsoft Entra ID */
    F_CREDENTIAL,
    F_CLIENT_ID,
    F_COUNT
};

static const struct {
    const char *key;
    int field; /* -1: accepted and ignored (endpoints of the other services) */
} known_keys[] = {
    {"DefaultEndpointsProtocol", F_PROTOCOL},
    {"AccountName", F_NAME},
    {"AccountKey", F_KEY},
    {"EndpointSuffix", F_SUFFIX},
    {"QueueEndpoint", F_QUEUE_ENDPOINT},
    {"SharedAccessSignature", F_SAS},
    {"UseDevelopmentStorage", F_DEV},
    {"DevelopmentStorageProxyUri", F_DEV_PROXY},
    {"BlobEndpoint", F_OTHER_ENDPOINT},
    {"TableEndpoint", F_OTHER_ENDPOINT},
    {"FileEndpoint", F_OTHER_ENDPOINT},
    {"QueueServiceUri", F_SERVICE_URI},
    {"Credential", F_CREDENTIAL},
    {"ClientId", F_CLIENT_ID},
    {"QueueSecondaryEndpoint", -1},
    {"BlobSecondaryEndpoint", -1},
    {"TableSecondaryEndpoint", -1},
    {"FileSecondaryEndpoint", -1},
};

void sqlq_account_destroy(sqlq_account *a)
{
    if (!a)
        return;
    free(a->name);
    if (a->key)
        memset(a->key, 0, a->key_len);
    free(a->key);
    free(a->sas);
    free(a->endpoint);
    free(a->queue);
    free(a->ca_file);
    sqlq_token_cache_destroy(a->token);
    free(a->credential);
    free(a->client_id);
    free(a);
}

static sqlq_slice trim(sqlq_slice s)
{
    while (s.len && isspace((unsigned char)s.ptr[0])) {
        s.ptr++;
        s.len--;
    }
    while (s.len && isspace((unsigned char)s.ptr[s.len - 1]))
        s.len--;
    return s;
}

static bool has_prefix_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static sqlq_result nomem(sqlq_error *err)
{
    return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory parsing the connection string");
}

/* Registers the signature of a SAS query (both as written and percent-decoded). */
static void register_sas_secret(const char *sas)
{
    const char *p = sas;
    while (p && *p) {
        if (strncasecmp(p, "sig=", 4) == 0) {
            size_t n = strcspn(p + 4, "&");
            char *sig = sqlq_slice_dup((sqlq_slice){p + 4, n});
            if (sig) {
                sqlq_log_add_secret(sig);
                /* Decoded form: %2B -> +, %2F -> /, %3D -> = */
                size_t w = 0;
                for (size_t r = 0; sig[r]; r++) {
                    char c = sig[r];
                    if (c == '%' && isxdigit((unsigned char)sig[r + 1]) &&
                        isxdigit((unsigned char)sig[r + 2])) {
                        char hex[3] = {sig[r + 1], sig[r + 2], '\0'};
                        c = (char)strtol(hex, NULL, 16);
                        r += 2;
                    }
                    sig[w++] = c;
                }
                sig[w] = '\0';
                sqlq_log_add_secret(sig);
                free(sig);
            }
        }
        p = strchr(p, '&');
        if (p)
            p++;
    }
}

/* The host of an endpoint URL (after the scheme, before the port and path). */
static sqlq_slice url_host(sqlq_slice url, size_t host_at)
{
    sqlq_slice h = {url.ptr + host_at, 0};
    while (host_at + h.len < url.len && !strchr("/?#", h.ptr[h.len]))
        h.len++;
    if (h.len && h.ptr[0] == '[') { /* [v6]:port */
        const char *close = memchr(h.ptr, ']', h.len);
        return close ? (sqlq_slice){h.ptr + 1, (size_t)(close - h.ptr) - 1} : h;
    }
    const char *colon = memchr(h.ptr, ':', h.len);
    if (colon)
        h.len = (size_t)(colon - h.ptr);
    return h;
}

/* localhost, 127.0.0.0/8, ::1 (and ::ffff:127.x): traffic that never leaves the machine. */
static bool host_is_loopback(sqlq_slice host)
{
    char text[64];
    if (host.len == 0 || host.len >= sizeof(text))
        return false;
    memcpy(text, host.ptr, host.len);
    text[host.len] = '\0';
    if (strcasecmp(text, "localhost") == 0)
        return true;
    unsigned char addr[16];
    if (inet_pton(AF_INET, text, addr) == 1)
        return addr[0] == 127;
    if (inet_pton(AF_INET6, text, addr) != 1)
        return false;
    static const unsigned char v6_loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(addr, v6_loopback, 16) == 0 ||
           (memcmp(addr, v4_mapped, 12) == 0 && addr[12] == 127);
}

/* Copy an endpoint URL, checking the scheme and length and dropping trailing slashes. A
 * user:password@ part is refused (storage accounts never use it) without echoing it. */
static sqlq_result set_endpoint(sqlq_account *a, sqlq_slice url, const char *what, sqlq_error *err)
{
    while (url.len && url.ptr[url.len - 1] == '/')
        url.len--;
    sqlq_slice scheme_http = {url.ptr, url.len < 7 ? url.len : 7};
    sqlq_slice scheme_https = {url.ptr, url.len < 8 ? url.len : 8};
    if (!sqlq_slice_ieq(scheme_http, "http://") && !sqlq_slice_ieq(scheme_https, "https://"))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s must start with http:// or https://",
                              what);
    size_t host_at = sqlq_slice_ieq(scheme_https, "https://") ? 8 : 7;
    if (url.len <= host_at)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s has no host", what);
    size_t authority = strcspn(url.ptr + host_at, "/?#");
    const char *at = memchr(url.ptr + host_at, '@', authority < url.len - host_at ? authority : url.len - host_at);
    if (at) {
        char *userinfo = sqlq_slice_dup((sqlq_slice){url.ptr + host_at, (size_t)(at - url.ptr) - host_at});
        const char *pass = userinfo ? strchr(userinfo, ':') : NULL;
        sqlq_log_add_secret(pass ? pass + 1 : userinfo);
        free(userinfo);
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "%s must not contain a user name or password (%.*s***@...): "
                              "storage accounts authenticate with a key or SAS",
                              what, (int)host_at, url.ptr);
    }
    if (url.len > SQLQ_ACCOUNT_MAX_ENDPOINT)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s is %zu characters long (allowed up to %d)",
                              what, url.len, SQLQ_ACCOUNT_MAX_ENDPOINT);
    a->plain_http = host_at == 7 && !host_is_loopback(url_host(url, host_at));
    a->endpoint = sqlq_slice_dup(url);
    return a->endpoint ? SQLQ_OK : nomem(err);
}

static sqlq_result set_sas(sqlq_account *a, sqlq_slice sas, sqlq_error *err)
{
    if (sas.len && sas.ptr[0] == '?') {
        sas.ptr++;
        sas.len--;
    }
    if (sas.len > SQLQ_ACCOUNT_MAX_SAS)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the SAS token is %zu characters long (allowed up to %d)", sas.len,
                              SQLQ_ACCOUNT_MAX_SAS);
    a->sas = sqlq_slice_dup(sas);
    if (!a->sas)
        return nomem(err);
    bool has_sig = strncasecmp(a->sas, "sig=", 4) == 0 || strcasestr(a->sas, "&sig=") != NULL;
    if (!has_sig)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the SAS token has no sig= parameter (is it complete?)");
    register_sas_secret(a->sas);
    return SQLQ_OK;
}

static sqlq_result set_key(sqlq_account *a, sqlq_slice key, sqlq_error *err)
{
    char *text = sqlq_slice_dup(key);
    if (!text)
        return nomem(err);
    sqlq_log_add_secret(text);
    sqlq_buf raw;
    sqlq_buf_init(&raw, 1024);
    sqlq_error ignored;
    sqlq_error_clear(&ignored);
    sqlq_result r = sqlq_codec_decode(SQLQ_ENCODING_BASE64, text, key.len, &raw, &ignored);
    memset(text, 0, key.len);
    free(text);
    if (r != SQLQ_OK || raw.len == 0) {
        if (raw.data)
            memset(raw.data, 0, raw.len);
        sqlq_buf_free(&raw);
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "AccountKey is not valid base64 (copy the whole key from the portal)");
    }
    a->key = (unsigned char *)sqlq_buf_take(&raw, &a->key_len);
    return a->key ? SQLQ_OK : nomem(err);
}

/* Names the unknown key only when it looks like one (letters, short): a pasted key or a
 * signature with '=' in it must not end up in the message. */
static sqlq_result unknown_key(sqlq_slice k, int segment, sqlq_error *err)
{
    bool word = k.len > 0 && k.len <= 40;
    for (size_t i = 0; word && i < k.len; i++)
        word = isalpha((unsigned char)k.ptr[i]) != 0;
    if (!word)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "connection string part %d is not a known key=value", segment);
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "unknown connection string key '%.*s' (known: AccountName, AccountKey, "
                          "DefaultEndpointsProtocol, EndpointSuffix, QueueEndpoint, "
                          "SharedAccessSignature, UseDevelopmentStorage, QueueServiceUri, "
                          "Credential, ClientId)",
                          (int)k.len, k.ptr);
}

/* Split "k=v;k=v" into fields[]; rejects unknown keys (typos) and segments without '='. */
static sqlq_result split_pairs(const char *text, sqlq_slice fields[F_COUNT], sqlq_error *err)
{
    const char *p = text;
    int segment = 0;
    while (*p) {
        const char *end = strchr(p, ';');
        sqlq_slice seg = trim((sqlq_slice){p, end ? (size_t)(end - p) : strlen(p)});
        p = end ? end + 1 : p + strlen(p);
        segment++;
        if (seg.len == 0)
            continue;
        const char *eq = memchr(seg.ptr, '=', seg.len);
        if (!eq) /* never echo the segment: it may be a piece of a key */
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "connection string part %d is not key=value", segment);
        sqlq_slice k = trim((sqlq_slice){seg.ptr, (size_t)(eq - seg.ptr)});
        sqlq_slice v = trim((sqlq_slice){eq + 1, seg.len - (size_t)(eq - seg.ptr) - 1});
        size_t i = 0, n = sizeof(known_keys) / sizeof(known_keys[0]);
        while (i < n && !sqlq_slice_ieq(k, known_keys[i].key))
            i++;
        if (i == n)
            return unknown_key(k, segment, err);
        if (known_keys[i].field >= 0)
            fields[known_keys[i].field] = v;
    }
    return SQLQ_OK;
}

static sqlq_result parse_dev(sqlq_account *a, const sqlq_slice f[F_COUNT], sqlq_error *err)
{
    if (!sqlq_slice_ieq(f[F_DEV], "true"))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "UseDevelopmentStorage must be true");
    sqlq_buf url;
    sqlq_buf_init(&url, 4096);
    sqlq_result r;
    if (f[F_DEV_PROXY].ptr && f[F_DEV_PROXY].len) {
        sqlq_slice proxy = f[F_DEV_PROXY];
        while (proxy.len && proxy.ptr[proxy.len - 1] == '/')
            proxy.len--;
        r = sqlq_buf_printf(&url, "%.*s:%s/%s", (int)proxy.len, proxy.ptr, DEV_QUEUE_PORT,
                            DEV_ACCOUNT);
    } else {
        r = sqlq_buf_adds(&url, "http://127.0.0.1:" DEV_QUEUE_PORT "/" DEV_ACCOUNT);
    }
    if (r == SQLQ_OK)
        r = set_endpoint(a, sqlq_slice_of(sqlq_buf_str(&url)), "DevelopmentStorageProxyUri", err);
    sqlq_buf_free(&url);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "cannot build the development storage endpoint");
    a->plain_http = false; /* development storage: the emulator's well-known key, no secrets */
    a->name = strdup(DEV_ACCOUNT);
    if (!a->name)
        return nomem(err);
    return set_key(a, sqlq_slice_of(DEV_KEY), err);
}

static char *name_from_url(const char *endpoint);

/* QueueServiceUri[;Credential][;ClientId]: a bearer token travels only over https. */
static sqlq_result parse_identity(sqlq_account *a, const sqlq_slice f[F_COUNT], sqlq_error *err)
{
    if (f[F_KEY].ptr || f[F_SAS].ptr)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "QueueServiceUri (Microsoft Entra ID) takes no AccountKey or "
                              "SharedAccessSignature: give one kind of credential");
    sqlq_slice url = f[F_SERVICE_URI];
    if (url.len < 8 || !sqlq_slice_ieq((sqlq_slice){url.ptr, 8}, "https://"))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "queueServiceUri '%.*s' must be https://: an Entra ID token is sent "
                              "only over https (Azure and Azurite refuse it over http)",
                              (int)(url.len > 200 ? 200 : url.len), url.ptr);
    sqlq_result r = set_endpoint(a, url, "queueServiceUri", err);
    if (r == SQLQ_OK)
        a->name = name_from_url(a->endpoint); /* NULL is fine: tokens need no account name */
    if (r == SQLQ_OK && f[F_CREDENTIAL].len && !(a->credential = sqlq_slice_dup(f[F_CREDENTIAL])))
        r = nomem(err);
    if (r == SQLQ_OK && f[F_CLIENT_ID].len && !(a->client_id = sqlq_slice_dup(f[F_CLIENT_ID])))
        r = nomem(err);
    return r;
}

static sqlq_result parse_pairs(sqlq_account *a, const char *text, sqlq_error *err)
{
    sqlq_slice f[F_COUNT] = {{NULL, 0}};
    sqlq_result r = split_pairs(text, f, err);
    if (r != SQLQ_OK)
        return r;
    if (f[F_DEV].ptr)
        return parse_dev(a, f, err);
    if (f[F_SERVICE_URI].ptr)
        return parse_identity(a, f, err);
    if (f[F_KEY].ptr && f[F_SAS].ptr)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "give AccountKey or SharedAccessSignature, not both");
    if (!f[F_KEY].ptr && !f[F_SAS].ptr)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the connection string has neither AccountKey nor SharedAccessSignature");
    if (f[F_NAME].ptr && f[F_NAME].len) {
        a->name = sqlq_slice_dup(f[F_NAME]);
        if (!a->name)
            return nomem(err);
    } else if (f[F_KEY].ptr) {
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "AccountKey needs AccountName");
    }
    r = f[F_KEY].ptr ? set_key(a, f[F_KEY], err) : set_sas(a, f[F_SAS], err);
    if (r != SQLQ_OK)
        return r;
    if (f[F_QUEUE_ENDPOINT].ptr)
        return set_endpoint(a, f[F_QUEUE_ENDPOINT], "QueueEndpoint", err);
    if (f[F_OTHER_ENDPOINT].ptr) /* a connection string for the other services only */
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the queue endpoint is missing: the connection string names "
                              "BlobEndpoint, TableEndpoint or FileEndpoint but no QueueEndpoint");
    if (!a->name)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the connection string needs AccountName or QueueEndpoint");
    sqlq_slice proto = f[F_PROTOCOL].ptr ? f[F_PROTOCOL] : sqlq_slice_of("https");
    if (!sqlq_slice_ieq(proto, "https") && !sqlq_slice_ieq(proto, "http"))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "DefaultEndpointsProtocol must be http or https, not '%.*s'",
                              (int)(proto.len > 16 ? 16 : proto.len), proto.ptr);
    sqlq_slice suffix = f[F_SUFFIX].ptr ? f[F_SUFFIX] : sqlq_slice_of("core.windows.net");
    if (suffix.len == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "EndpointSuffix is empty");
    sqlq_buf url;
    sqlq_buf_init(&url, 4096);
    r = sqlq_buf_printf(&url, "%s://%s.queue.%.*s", sqlq_slice_ieq(proto, "http") ? "http" : "https",
                        a->name, (int)suffix.len, suffix.ptr);
    if (r == SQLQ_OK)
        r = set_endpoint(a, sqlq_slice_of(sqlq_buf_str(&url)), "the queue endpoint", err);
    else
        r = sqlq_error_set(err, r, false, "AccountName or EndpointSuffix is too long");
    sqlq_buf_free(&url);
    return r;
}

/* Path-style URLs (http://127.0.0.1:10001/ACCOUNT/QUEUE) are used for IP hosts, single-word
 * hosts (localhost, a compose service) and the emulator's ports, as the Azure SDKs decide
 * (isIpEndpointStyle); otherwise the account is in the host name. */
static bool path_style(sqlq_slice url, size_t host_at)
{
    sqlq_slice host = url_host(url, host_at);
    char text[64];
    if (host.len == 0 || host.len >= sizeof(text))
        return false;
    memcpy(text, host.ptr, host.len);
    text[host.len] = '\0';
    unsigned char addr[16];
    if (!strchr(text, '.') || inet_pton(AF_INET, text, addr) == 1 ||
        inet_pton(AF_INET6, text, addr) == 1)
        return true;
    /* The emulator's ports 10000-10002 after the host, e.g. a compose service "azurite:10001". */
    const char *after = host.ptr + host.len;
    size_t rest = url.len - (size_t)(after - url.ptr);
    return rest >= 6 && memcmp(after, ":1000", 5) == 0 && strchr("012", after[5]) &&
           (rest == 6 || !isdigit((unsigned char)after[6]));
}

/* Account name from a URL: "acct.queue.…" host, else the first path segment (Azurite style). */
static char *name_from_url(const char *endpoint)
{
    const char *host = strstr(endpoint, "://") + 3;
    size_t host_len = strcspn(host, "/");
    const char *dot = memchr(host, '.', host_len);
    if (dot && (size_t)(host + host_len - dot) > 7 && strncasecmp(dot, ".queue.", 7) == 0)
        return sqlq_slice_dup((sqlq_slice){host, (size_t)(dot - host)});
    if (host[host_len] == '/' && host[host_len + 1]) {
        const char *seg = host + host_len + 1;
        return sqlq_slice_dup((sqlq_slice){seg, strcspn(seg, "/")});
    }
    return NULL;
}

/* Splits a queue URL's last path segment off into a->queue: one segment after the host (two
 * for path-style URLs) names the queue, none the service. */
static sqlq_result split_queue(sqlq_account *a, sqlq_slice *url, sqlq_error *err)
{
    while (url->len && url->ptr[url->len - 1] == '/')
        url->len--;
    size_t host_at = (size_t)(strstr(url->ptr, "://") - url->ptr) + 3;
    size_t path_at = host_at + strcspn(url->ptr + host_at, "/");
    if (path_at >= url->len)
        return SQLQ_OK;
    size_t segments = 0, last = path_at;
    for (size_t i = path_at; i < url->len; i++)
        if (url->ptr[i] == '/') {
            segments++;
            last = i;
        }
    size_t service_segments = path_style(*url, host_at) ? 1 : 0;
    if (segments == service_segments)
        return SQLQ_OK;
    if (segments > service_segments + 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "the queue URL has %zu path segments: give the queue service URL "
                              "(https://ACCOUNT.queue.core.windows.net?SAS) or a queue URL "
                              "(https://ACCOUNT.queue.core.windows.net/QUEUE?SAS)",
                              segments);
    a->queue = sqlq_slice_dup((sqlq_slice){url->ptr + last + 1, url->len - last - 1});
    if (!a->queue)
        return nomem(err);
    sqlq_error why;
    sqlq_error_clear(&why);
    if (!sqlq_queue_name_valid(a->queue, &why))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "the queue URL's queue: %s", why.message);
    url->len = last;
    return SQLQ_OK;
}

static sqlq_result parse_url(sqlq_account *a, const char *text, sqlq_error *err)
{
    const char *q = strchr(text, '?');
    if (!q || !q[1])
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "a queue service URL needs a SAS token after '?'");
    sqlq_result r = set_sas(a, sqlq_slice_of(q + 1), err);
    sqlq_slice url = {text, (size_t)(q - text)};
    if (r == SQLQ_OK)
        r = set_endpoint(a, url, "the queue service URL", err);
    if (r == SQLQ_OK) {
        free(a->endpoint);
        a->endpoint = NULL;
        r = split_queue(a, &url, err);
    }
    if (r == SQLQ_OK)
        r = set_endpoint(a, url, "the queue service URL", err);
    if (r == SQLQ_OK)
        a->name = name_from_url(a->endpoint); /* NULL is fine: only SharedKey needs it */
    return r;
}

sqlq_result sqlq_account_parse(const char *text, sqlq_account **out, sqlq_error *err)
{
    sqlq_account_options defaults = {false, NULL};
    return sqlq_account_parse_opts(text, &defaults, out, err);
}

/* A CA bundle that cannot be read is a configuration error now, not a TLS error later. */
static sqlq_result set_ca_file(sqlq_account *a, const char *path, sqlq_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "ca_file: cannot read '%s': %s", path,
                              strerror(errno));
    fclose(f);
    a->ca_file = strdup(path);
    return a->ca_file ? SQLQ_OK : nomem(err);
}

/* http:// to a real account: refused, or allowed with a warning when the user said so. */
static sqlq_result check_transport(const sqlq_account *a, const sqlq_account_options *opts,
                                   sqlq_error *err)
{
    if (!a->plain_http)
        return SQLQ_OK;
    if (!opts || !opts->allow_insecure_http)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "%s uses plain http:// to a host that is not loopback: SAS tokens "
                              "and messages would cross the network unencrypted. Use https://, "
                              "or set allow_insecure_http (--allow-insecure-http, "
                              "SQLQ_ALLOW_INSECURE_HTTP) if you accept that",
                              a->endpoint);
    SQLQ_WARN("insecure_http", "endpoint=%s note=\"allow_insecure_http is set: SAS tokens and "
                               "messages cross the network unencrypted\"",
              a->endpoint);
    return SQLQ_OK;
}

sqlq_result sqlq_account_parse_opts(const char *text, const sqlq_account_options *opts,
                                    sqlq_account **out, sqlq_error *err)
{
    *out = NULL;
    if (!text)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "no queue connection string given");
    sqlq_slice t = trim(sqlq_slice_of(text));
    if (t.len == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "the queue connection string is empty");
    char *copy = sqlq_slice_dup(t);
    sqlq_account *a = calloc(1, sizeof(*a));
    if (!copy || !a) {
        free(copy);
        free(a);
        return nomem(err);
    }
    sqlq_result r;
    if (has_prefix_ci(copy, "http://") || has_prefix_ci(copy, "https://"))
        r = parse_url(a, copy, err);
    else
        r = parse_pairs(a, copy, err);
    if (r == SQLQ_OK)
        r = check_transport(a, opts, err);
    if (r == SQLQ_OK && opts && opts->ca_file && *opts->ca_file)
        r = set_ca_file(a, opts->ca_file, err);
    if (r == SQLQ_OK && a->endpoint && !a->key && !a->sas) {
        sqlq_token_settings ts = {a->credential, a->client_id, a->ca_file,
                                  "https://storage.azure.com"};
        r = sqlq_token_cache_from_env(&ts, &a->token, err);
    }
    memset(copy, 0, t.len);
    free(copy);
    if (r != SQLQ_OK) {
        sqlq_account_destroy(a);
        return r;
    }
    *out = a;
    return SQLQ_OK;
}

sqlq_result sqlq_account_queue(const sqlq_account *a, const char *wanted, const char **out,
                               sqlq_error *err)
{
    *out = wanted;
    if (!a || !a->queue)
        return SQLQ_OK;
    if (wanted && *wanted && strcmp(wanted, a->queue) != 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "queue '%s' was given, but the queue connection is a SAS URL for "
                              "queue '%s': use that queue, or a connection for the account",
                              wanted, a->queue);
    *out = a->queue;
    return SQLQ_OK;
}

bool sqlq_account_reaches(const sqlq_account *a, const char *queue, sqlq_error *err)
{
    if (!a || !a->queue || (queue && strcmp(queue, a->queue) == 0))
        return true;
    sqlq_error_set(err, SQLQ_E_INVALID, false,
                   "queue '%s' is not reachable with this credential: the queue connection is a "
                   "SAS URL scoped to queue '%s' (use an account key, a connection string or an "
                   "account SAS to reach other queues)",
                   queue ? queue : "(account-level operations)", a->queue);
    return false;
}
