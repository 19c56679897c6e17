#include "disposition.h"

#include <string.h>

/* The service caps a visibility timeout at 7 days. */
#define MAX_VISIBILITY_S 604800

void sqlq_disposition_policy_default(sqlq_disposition_policy *p)
{
    p->max_dequeue_count = 5;
    p->visibility_timeout_s = 0;
    p->visibility_backoff = false;
    p->visibility_max_s = 3600;
    p->has_poison_queue = true;
}

sqlq_disposition sqlq_disposition_on_receive(const sqlq_disposition_policy *p, long dequeue_count,
                                             bool decodable)
{
    bool over = dequeue_count > p->max_dequeue_count;
    if (!over && decodable)
        return SQLQ_DISPOSE_RUN;
    return p->has_poison_queue ? SQLQ_DISPOSE_POISON : SQLQ_DISPOSE_RELEASE;
}

sqlq_disposition sqlq_disposition_on_result(const sqlq_disposition_policy *p, long dequeue_count,
                                            bool succeeded)
{
    if (succeeded)
        return SQLQ_DISPOSE_DELETE;
    if (p->has_poison_queue && dequeue_count >= p->max_dequeue_count)
        return SQLQ_DISPOSE_POISON;
    return SQLQ_DISPOSE_RELEASE;
}

sqlq_disposition sqlq_disposition_on_handler(const sqlq_disposition_policy *p, long dequeue_count,
                                             sqlq_result handler_result)
{
    if (handler_result == SQLQ_E_REJECTED && p->has_poison_queue)
        return SQLQ_DISPOSE_POISON;
    if (handler_result == SQLQ_E_UNAVAILABLE) /* an outage: never the message's fault */
        return SQLQ_DISPOSE_RELEASE;
    return sqlq_disposition_on_result(p, dequeue_count, handler_result == SQLQ_OK);
}

int sqlq_disposition_release_visibility(const sqlq_disposition_policy *p, long dequeue_count)
{
    long long v = p->visibility_timeout_s > 0 ? p->visibility_timeout_s : 0;
    if (p->visibility_backoff && v > 0) {
        long long cap = p->visibility_max_s > 0 ? p->visibility_max_s : MAX_VISIBILITY_S;
        if (cap < v)
            cap = v; /* the cap limits growth; it never shortens the base delay */
        for (long i = 1; i < dequeue_count && v < cap; i++)
            v *= 2;
        if (v > cap)
            v = cap;
    }
    if (v > MAX_VISIBILITY_S)
        v = MAX_VISIBILITY_S;
    return (int)v;
}

const char *sqlq_disposition_name(sqlq_disposition d)
{
    switch (d) {
    case SQLQ_DISPOSE_RUN: return "run";
    case SQLQ_DISPOSE_DELETE: return "delete";
    case SQLQ_DISPOSE_RELEASE: return "release";
    case SQLQ_DISPOSE_POISON: return "poison";
    }
    return "?";
}

bool sqlq_disposition_is_outage(const sqlq_error *e)
{
    if (e->code == SQLQ_E_NETWORK)
        return true;
    int s = e->http_status;
    if (s == 401 || s == 403 || s == 408 || s == 429 || s >= 500)
        return true;
    return s == 404 && strcmp(e->azure_code, "QueueNotFound") == 0;
}

const char *sqlq_disposition_outage_cause(const sqlq_error *e)
{
    const char *code = e->azure_code;
    if (strcmp(code, "TokenUnavailable") == 0) { /* queue/credential.h; err= says the rest */
        if (strstr(e->message, " refused the credential: "))
            return "no Microsoft Entra ID token: the token endpoint refused the credential (fix "
                   "the identity's settings)";
        if (strstr(e->message, " cannot be reached"))
            return "no Microsoft Entra ID token: the token endpoint cannot be reached";
        return "no Microsoft Entra ID token: the token endpoint failed";
    }
    if (e->code == SQLQ_E_NETWORK)
        return "queue service unreachable (connection, DNS or TLS)";
    if (e->http_status == 403 && strcmp(code, "AuthenticationFailed") == 0)
        return "credential rejected: account key rotated or SAS expired or invalid";
    if (e->http_status == 403 && strncmp(code, "Authorization", 13) == 0)
        return "the credential lacks a permission this operation needs";
    if (e->http_status == 401 || e->http_status == 403)
        return "not authorized by the queue service";
    if (e->http_status == 404)
        return "the queue does not exist";
    if (e->http_status == 503 || e->http_status == 429 || strcmp(code, "OperationTimedOut") == 0)
        return "the queue service is throttling (server busy)";
    return "the queue service is failing";
}
