#include "endpoint.h"

#include "classify.h"
#include "credential.h"
#include "queue_client.h"
#include "xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Room in path[] for "/" + a 63-character queue name + "/messages/" + an encoded message id. */
#define MAX_BASE_PATH 512

struct sqlq_endpoint {
    char *origin;    /* scheme://host[:port] */
    char *base_path; /* "" for Azure, "/devstoreaccount1" for Azurite's path-style URLs */
    char *scope;     /* the one queue a queue-scoped SAS reaches; NULL = the whole account */
    sqlq_credential *credential; /* SharedKey, SAS or token: authorizes every attempt */
    time_t date_s; /* x-ms-date is formatted once per second */
    char date[40];
    char path[1024]; /* scratch: the path of the request being built */
};

void sqlq_call_query(sqlq_call *call, const char *name, const char *value)
{
    if (call->nquery < SQLQ_CALL_MAX_QUERY) {
        call->query[call->nquery].name = name;
        call->query[call->nquery].value = value;
        call->nquery++;
    }
}

void sqlq_endpoint_destroy(sqlq_endpoint *ep)
{
    if (!ep)
        return;
    free(ep->origin);
    free(ep->base_path);
    free(ep->scope);
    sqlq_credential_destroy(ep->credential);
    free(ep);
}

sqlq_result sqlq_endpoint_create(const sqlq_account *a, sqlq_endpoint **out, sqlq_error *err)
{
    *out = NULL;
    if (!a || !a->endpoint || (!a->key && !a->sas && !a->token))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "the account has no endpoint or credential");
    sqlq_endpoint *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    const char *host = strstr(a->endpoint, "://");
    host = host ? host + 3 : a->endpoint;
    const char *path = host + strcspn(host, "/?");
    ep->origin = sqlq_slice_dup((sqlq_slice){a->endpoint, (size_t)(path - a->endpoint)});
    ep->base_path = sqlq_slice_dup((sqlq_slice){path, strcspn(path, "?")});
    if (ep->base_path) /* no trailing slash: paths are built as base + "/" + queue */
        for (size_t n = strlen(ep->base_path); n > 0 && ep->base_path[n - 1] == '/'; n--)
            ep->base_path[n - 1] = '\0';
    ep->scope = a->queue ? strdup(a->queue) : NULL;
    sqlq_result r = SQLQ_OK;
    if (!ep->origin || !ep->base_path || (a->queue && !ep->scope))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    else if (strlen(ep->base_path) > MAX_BASE_PATH)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "the queue endpoint's path is longer than %d characters", MAX_BASE_PATH);
    else
        r = sqlq_credential_create(a, &ep->credential, err);
    if (r != SQLQ_OK) {
        sqlq_endpoint_destroy(ep);
        return r;
    }
    *out = ep;
    return SQLQ_OK;
}

const char *sqlq_endpoint_scope(const sqlq_endpoint *ep)
{
    return ep->scope;
}

const char *sqlq_endpoint_host(const sqlq_endpoint *ep)
{
    return ep->origin;
}

static const char *http_date(sqlq_endpoint *ep)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    if (now != ep->date_s) {
        struct tm tm;
        gmtime_r(&now, &tm);
        snprintf(ep->date, sizeof(ep->date), "%s, %02d %s %04d %02d:%02d:%02d GMT",
                 days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
        ep->date_s = now;
    }
    return ep->date;
}

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static sqlq_result add_encoded(sqlq_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    sqlq_result r = SQLQ_OK;
    for (const unsigned char *p = (const unsigned char *)s; r == SQLQ_OK && *p; p++) {
        if (unreserved(*p)) {
            r = sqlq_buf_addc(b, (char)*p);
        } else {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            r = sqlq_buf_add(b, esc, 3);
        }
    }
    return r;
}

/* base/queue[/messages[/id]] into ep->path (the id percent-encoded), or SQLQ_E_TOO_LARGE when
 * it does not fit: the id comes from the service, so its length is not ours to assume. */
static sqlq_result build_path(sqlq_endpoint *ep, const sqlq_call *call)
{
    int n;
    if (!call->queue) {
        n = snprintf(ep->path, sizeof(ep->path), "%s", ep->base_path[0] ? ep->base_path : "/");
    } else {
        n = snprintf(ep->path, sizeof(ep->path), "%s/%s%s", ep->base_path, call->queue,
                     call->messages || call->message_id ? "/messages" : "");
    }
    if (n < 0 || (size_t)n >= sizeof(ep->path))
        return SQLQ_E_TOO_LARGE;
    if (call->message_id) {
        size_t room = sizeof(ep->path) - (size_t)n; /* bytes left, the terminator included */
        sqlq_buf id;
        sqlq_buf_init(&id, sizeof(ep->path)); /* never 0: that would mean the 64 MiB default */
        sqlq_result r = sqlq_buf_addc(&id, '/');
        if (r == SQLQ_OK)
            r = add_encoded(&id, call->message_id);
        if (r == SQLQ_OK && id.len >= room)
            r = SQLQ_E_TOO_LARGE;
        if (r == SQLQ_OK)
            memcpy(ep->path + n, id.data, id.len + 1);
        sqlq_buf_free(&id);
        return r;
    }
    return SQLQ_OK;
}

static sqlq_result build_url(sqlq_endpoint *ep, const sqlq_call *call, sqlq_buf *url)
{
    sqlq_result r = sqlq_buf_adds(url, ep->origin);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(url, ep->path);
    for (size_t i = 0; r == SQLQ_OK && i < call->nquery; i++) {
        r = sqlq_buf_addc(url, i == 0 ? '?' : '&');
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(url, call->query[i].name);
        if (r == SQLQ_OK)
            r = sqlq_buf_addc(url, '=');
        if (r == SQLQ_OK)
            r = add_encoded(url, call->query[i].value);
    }
    return r;
}

sqlq_result sqlq_endpoint_build(sqlq_endpoint *ep, const sqlq_call *call, sqlq_http_exchange *ex,
                                sqlq_error *err)
{
    sqlq_http_exchange_reset(ex);
    ex->method = call->method;
    if (ep->scope && (!call->queue || strcmp(call->queue, ep->scope) != 0))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "%s%s%s%s: not reachable with this credential: the queue connection "
                              "is a SAS URL scoped to queue '%s'",
                              call->op, call->queue ? " '" : "", call->queue ? call->queue : "",
                              call->queue ? "'" : "", ep->scope);
    sqlq_result r = build_path(ep, call);
    if (r == SQLQ_OK)
        r = build_url(ep, call, &ex->url);
    if (r == SQLQ_OK && call->text)
        r = sqlq_xml_message_body(&ex->body, call->text, call->text_len);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "%s: request too large to build", call->op);
    const char *date = http_date(ep);
    const char *type = call->text ? "application/xml" : NULL;
    bool ok = sqlq_http_exchange_header(ex, "x-ms-version: %s", SQLQ_QUEUE_API_VERSION) &&
              sqlq_http_exchange_header(ex, "x-ms-date: %s", date) &&
              sqlq_http_exchange_header(ex, "Content-Type:%s%s", type ? " " : "", type ? type : "");
    if (!ok)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "%s: request headers too long", call->op);
    sqlq_pair ms[] = {{"x-ms-date", date}, {"x-ms-version", SQLQ_QUEUE_API_VERSION}};
    sqlq_sign_input in = {call->method, ep->path, call->query, call->nquery, ms, 2,
                          ex->body.len, type};
    sqlq_auth_request req = {&in, &ex->url, call->nquery > 0, ex};
    sqlq_error e;
    sqlq_error_clear(&e);
    r = sqlq_credential_authorize(ep->credential, &req, &e);
    if (r != SQLQ_OK && err && err->code == SQLQ_OK) {
        *err = e; /* the op first: "put message 'q': no access token: managed identity …" */
        snprintf(err->message, sizeof(err->message), "%s%s%s%s: %.400s", call->op,
                 call->queue ? " '" : "", call->queue ? call->queue : "", call->queue ? "'" : "",
                 e.message);
    }
    return r;
}

bool sqlq_endpoint_refused(sqlq_endpoint *ep, const sqlq_error *e)
{
    return sqlq_credential_refused(ep->credential, e->http_status, e->azure_code);
}

static sqlq_result map_status(int status, const char *code)
{
    if (status == 404)
        return SQLQ_E_NOT_FOUND;
    if (status == 409)
        return SQLQ_E_CONFLICT;
    if (strcmp(code, "PopReceiptMismatch") == 0)
        return SQLQ_E_POP_RECEIPT;
    if (status == 413 || strcmp(code, "MessageTooLarge") == 0 ||
        strcmp(code, "RequestBodyTooLarge") == 0)
        return SQLQ_E_TOO_LARGE;
    return SQLQ_E_HTTP;
}

sqlq_result sqlq_endpoint_outcome(const sqlq_endpoint *ep, const sqlq_call *call,
                                  sqlq_http_exchange *ex, sqlq_error *err)
{
    const sqlq_http_response *resp = &ex->response;
    if (resp->status >= 200 && resp->status < 300)
        return SQLQ_OK;
    sqlq_error e;
    sqlq_error_clear(&e);
    const char *q = call->queue ? call->queue : "";
    const char *sep = call->queue ? " '" : "";
    const char *end = call->queue ? "'" : "";
    if (resp->status == 0) {
        sqlq_error_set(&e, SQLQ_E_NETWORK, sqlq_classify_net_transient(resp->net),
                       "%s%s%s%s: no response from %s: %s", call->op, sep, q, end, ep->origin,
                       resp->net_message);
    } else {
        char code[64], text[256] = "";
        snprintf(code, sizeof(code), "%s", resp->error_code);
        if (resp->body.len > 0) {
            char body_code[64];
            (void)sqlq_xml_parse_error(resp->body.data, resp->body.len, body_code,
                                       sizeof(body_code), text, sizeof(text));
            if (!code[0])
                snprintf(code, sizeof(code), "%s", body_code);
        }
        /* The status, code and request id travel in their own fields (sqlq_error_format). */
        if (text[0])
            sqlq_error_set(&e, map_status(resp->status, code),
                           sqlq_classify_http_transient(resp->status), "%s%s%s%s: %s", call->op,
                           sep, q, end, text);
        else
            sqlq_error_set(&e, map_status(resp->status, code),
                           sqlq_classify_http_transient(resp->status), "%s%s%s%s: HTTP %d%s%s",
                           call->op, sep, q, end, resp->status, code[0] ? " " : "", code);
        e.http_status = resp->status;
        snprintf(e.azure_code, sizeof(e.azure_code), "%s", code);
    }
    snprintf(e.request_id, sizeof(e.request_id), "%s", resp->request_id);
    if (err && err->code == SQLQ_OK)
        *err = e;
    return e.code;
}
