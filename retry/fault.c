#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool is(const char *code, const char *want)
{
    return code && strcmp(code, want) == 0;
}

/* A failure with no answer from the service. Only curl's failure (SQLQ_E_NETWORK) says anything
 * about the transport; a body refused before sending is this message's; whatever else stopped
 * the request on this side (out of memory, a request too long to build, an unreadable reply) is
 * no proof of a network or TLS fault, and no fault of this one body either. */
static sqlq_fault_kind classify_unanswered(const sqlq_error *e)
{
    switch (e->code) {
    case SQLQ_E_NETWORK: return e->transient ? SQLQ_FAULT_NETWORK : SQLQ_FAULT_TLS;
    case SQLQ_E_TOO_LARGE: return SQLQ_FAULT_TOO_LARGE;
    case SQLQ_E_BODY: return SQLQ_FAULT_BAD_BODY;
    default: return SQLQ_FAULT_LOCAL;
    }
}

sqlq_fault_kind sqlq_fault_classify(const sqlq_error *e)
{
    int http_status = e->http_status;
    const char *azure_code = e->azure_code;
    /* No Entra ID token (queue/credential.h): the token endpoint's outage is the queue's. */
    if (is(azure_code, "TokenUnavailable"))
        return SQLQ_FAULT_AUTHENTICATION;
    if (http_status == 0)
        return classify_unanswered(e);
    if (http_status == 413 || is(azure_code, "RequestBodyTooLarge") ||
        is(azure_code, "MessageTooLarge"))
        return SQLQ_FAULT_TOO_LARGE;
    if (http_status == 400 &&
        (is(azure_code, "InvalidXmlDocument") || is(azure_code, "InvalidXmlNodeValue")))
        return SQLQ_FAULT_BAD_BODY;
    if (is(azure_code, "AuthorizationFailure") ||
        is(azure_code, "AuthorizationPermissionMismatch") ||
        is(azure_code, "AuthorizationResourceTypeMismatch") ||
        is(azure_code, "AuthorizationSourceIPMismatch") ||
        is(azure_code, "AuthorizationProtocolMismatch") ||
        is(azure_code, "AuthorizationServiceMismatch"))
        return SQLQ_FAULT_PERMISSION;
    if (http_status == 401 || http_status == 403 || is(azure_code, "AuthenticationFailed") ||
        is(azure_code, "InvalidAuthenticationInfo"))
        return SQLQ_FAULT_AUTHENTICATION;
    if (http_status == 404 && (is(azure_code, "QueueNotFound") || !azure_code || !azure_code[0]))
        return SQLQ_FAULT_QUEUE_MISSING;
    if (http_status == 409 &&
        (is(azure_code, "QueueBeingDeleted") || is(azure_code, "QueueDisabled")))
        return SQLQ_FAULT_QUEUE_BUSY;
    if (http_status == 503 || http_status == 429 || http_status == 408 ||
        is(azure_code, "ServerBusy") || is(azure_code, "OperationTimedOut"))
        return SQLQ_FAULT_THROTTLED;
    if (http_status >= 500)
        return SQLQ_FAULT_SERVER;
    return SQLQ_FAULT_UNEXPECTED;
}

bool sqlq_fault_counts(sqlq_fault_kind kind)
{
    return kind == SQLQ_FAULT_TOO_LARGE || kind == SQLQ_FAULT_BAD_BODY;
}

const char *sqlq_fault_name(sqlq_fault_kind kind)
{
    switch (kind) {
    case SQLQ_FAULT_NETWORK: return "network";
    case SQLQ_FAULT_TLS: return "tls";
    case SQLQ_FAULT_THROTTLED: return "throttled";
    case SQLQ_FAULT_SERVER: return "server";
    case SQLQ_FAULT_AUTHENTICATION: return "authentication";
    case SQLQ_FAULT_PERMISSION: return "permission";
    case SQLQ_FAULT_QUEUE_MISSING: return "queue_missing";
    case SQLQ_FAULT_QUEUE_BUSY: return "queue_busy";
    case SQLQ_FAULT_TOO_LARGE: return "too_large";
    case SQLQ_FAULT_BAD_BODY: return "bad_body";
    case SQLQ_FAULT_UNEXPECTED: return "unexpected";
    case SQLQ_FAULT_LOCAL: return "local";
    }
    return "unexpected";
}

/* The value of one query parameter (URL-decoded) into out; false when absent. */
static bool sas_param(const char *sas, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    for (const char *p = sas; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, n) != 0 || p[n] != '=')
            continue;
        size_t k = 0;
        for (const char *v = p + n + 1; *v && *v != '&' && k + 1 < size; v++) {
            char c = *v;
            if (c == '%' && v[1] && v[2]) {
                char hex[3] = {v[1], v[2], '\0'};
                c = (char)strtol(hex, NULL, 16);
                v += 2;
            }
            out[k++] = c;
        }
        out[k] = '\0';
        return k > 0;
    }
    return false;
}

bool sqlq_fault_sas_expiry(const char *sas, char *out_text, size_t text_size, int64_t *out_epoch_s)
{
    char se[64];
    if (!sas || !sas_param(sas, "se", se, sizeof(se)))
        return false;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(se, "%Y-%m-%dT%H:%M", &tm);
    if (end && *end == ':')
        end = strptime(end, ":%S", &tm);
    if (!end) {
        memset(&tm, 0, sizeof(tm));
        end = strptime(se, "%Y-%m-%d", &tm);
    }
    if (!end)
        return false;
    if (*end == '.') /* fraction of a second */
        while (*++end >= '0' && *end <= '9') {
        }
    if (*end != '\0' && strcmp(end, "Z") != 0)
        return false;
    *out_epoch_s = (int64_t)timegm(&tm);
    snprintf(out_text, text_size, "%s", se);
    return true;
}

bool sqlq_fault_sas_expired(const char *sas, int64_t now_s)
{
    char se[64];
    int64_t expiry = 0;
    return sqlq_fault_sas_expiry(sas, se, sizeof(se), &expiry) && expiry <= now_s;
}

/* No Entra ID token. The token request's error (queue/credential_source.c) names the source and
 * says whether the endpoint refused the credential (a 4xx with the endpoint's error code and
 * description, never a secret), failed (5xx) or cannot be reached. */
static void describe_token(const sqlq_fault_context *c, char *out, size_t size)
{
    static const char prefix[] = "no access token: ";
    const char *why = c->detail && c->detail[0] ? c->detail : NULL;
    const char *token_error = why ? strstr(why, prefix) : NULL; /* after "put message 'q': " */
    if (token_error)
        why = token_error + sizeof(prefix) - 1;
    if (why && strstr(why, " refused the credential: "))
        snprintf(out, size,
                 "no Microsoft Entra ID token: %.300s: fix the identity's settings (client ID, "
                 "secret, federated token, tenant); retried with back-off",
                 why);
    else if (why)
        snprintf(out, size, "no Microsoft Entra ID token: %.300s; retried with back-off", why);
    else
        snprintf(out, size,
                 "no Microsoft Entra ID token: the token endpoint refused the credential, failed "
                 "or cannot be reached (the error names the source tried); retried with back-off");
}

/* Authentication refused: no token, an expired SAS, another SAS problem, or the key. */
static void describe_authentication(const sqlq_fault_context *c, char *out, size_t size)
{
    char se[64];
    int64_t expiry = 0;
    if (is(c->azure_code, "TokenUnavailable"))
        describe_token(c, out, size);
    else if (sqlq_fault_sas_expiry(c->sas, se, sizeof(se), &expiry) && expiry <= c->now_s)
        snprintf(out, size,
                 "SAS expired at %s: restart with a fresh SAS (or key) in the connection string",
                 se);
    else if (c->sas && !strstr(c->sas, "ss="))
        snprintf(
            out, size,
            "SAS rejected for queue %s: a queue-scoped SAS works for its own queue only "
            "(the bridge also puts to {queue}-poison: use an account SAS ss=q&srt=o&sp=a), or its "
            "signature, start time or version is wrong",
            c->queue ? c->queue : "-");
    else if (c->sas)
        snprintf(out, size,
                 "SAS rejected: its signature, start time (st=), version or IP range is wrong");
    else
        snprintf(
            out, size,
            "key rejected: the account key is wrong or was rotated; restart with the current key "
            "(with Microsoft Entra ID: the token's audience, tenant or expiry was refused)");
}

static void describe_permission(const sqlq_fault_context *c, char *out, size_t size)
{
    const char *q = c->queue ? c->queue : "-";
    if (is(c->azure_code, "AuthorizationSourceIPMismatch") ||
        is(c->azure_code, "AuthorizationFailure"))
        snprintf(
            out, size,
            "permission missing or network rule: %s on queue %s was refused (%s): check the role "
            "assignment, the SAS permissions and the account's firewall",
            c->op, q, c->azure_code);
    else if (c->op && strcmp(c->op, "create queue") == 0)
        snprintf(
            out, size,
            "permission missing: queue %s does not exist and this credential may not create it "
            "(needs SAS sp=c with srt=c, or role Storage Queue Data Contributor): create it once "
            "with `sqlq queue create %s` or with a credential that may",
            q, q);
    else if (c->op && strcmp(c->op, "put message") == 0)
        snprintf(out, size,
                 "permission missing: needs add on queue %s (SAS sp=a with srt=o, or role "
                 "Storage Queue Data Message Sender)",
                 q);
    else
        snprintf(out, size,
                 "permission missing: %s on queue %s is not allowed for this credential (%s)",
                 c->op ? c->op : "request", q, c->azure_code ? c->azure_code : "");
}

/* One message refused: by the service (its error code) or before sending (the error's words). */
static void describe_body(const char *what, const sqlq_fault_context *c, char *out, size_t size)
{
    const char *q = c->queue ? c->queue : "-";
    if (c->http_status == 0 && c->detail && c->detail[0])
        snprintf(out, size, "%s for queue %s, not sent: %.300s", what, q, c->detail);
    else
        snprintf(out, size, "%s for queue %s (%s)", what, q,
                 c->azure_code && c->azure_code[0] ? c->azure_code : "no error code");
}

void sqlq_fault_describe(sqlq_fault_kind kind, const sqlq_fault_context *c, char *out, size_t size)
{
    const char *q = c->queue ? c->queue : "-";
    const char *code = c->azure_code && c->azure_code[0] ? c->azure_code : "no error code";
    switch (kind) {
    case SQLQ_FAULT_NETWORK:
        snprintf(out, size, "queue service unreachable (DNS, connection refused or timed out)");
        return;
    case SQLQ_FAULT_TLS:
        snprintf(out, size, "TLS or transport failure (certificate, handshake or proxy)");
        return;
    case SQLQ_FAULT_THROTTLED:
        snprintf(out, size, "queue service busy (HTTP %d %s): throttled or overloaded",
                 c->http_status, code);
        return;
    case SQLQ_FAULT_SERVER:
        snprintf(out, size, "queue service error (HTTP %d %s)", c->http_status, code);
        return;
    case SQLQ_FAULT_AUTHENTICATION: describe_authentication(c, out, size); return;
    case SQLQ_FAULT_PERMISSION: describe_permission(c, out, size); return;
    case SQLQ_FAULT_QUEUE_MISSING: snprintf(out, size, "queue %s does not exist", q); return;
    case SQLQ_FAULT_QUEUE_BUSY:
        snprintf(out, size, "queue %s is being deleted or is disabled (%s)", q, code);
        return;
    case SQLQ_FAULT_TOO_LARGE: describe_body("message too large", c, out, size); return;
    case SQLQ_FAULT_BAD_BODY: describe_body("message body refused", c, out, size); return;
    case SQLQ_FAULT_LOCAL:
        snprintf(out, size, "%s on queue %s failed before the queue service answered: %.300s",
                 c->op ? c->op : "request", q, c->detail ? c->detail : "local failure");
        return;
    case SQLQ_FAULT_UNEXPECTED: break;
    }
    snprintf(out, size, "unexpected refusal of %s on queue %s (HTTP %d %s)",
             c->op ? c->op : "request", q, c->http_status, code);
}
