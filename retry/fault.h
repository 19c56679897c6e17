/* fault: what a failed queue request says about the queue service: a fault that would fail
 * every request (an outage: wait with back-off, never count it against the message) or a
 * refusal of this one message's body (counts toward poison), and its probable cause in words an
 * operator can act on. Pure policy: no I/O, the time is passed in. */
#ifndef SQLQ_FAULT_H
#define SQLQ_FAULT_H

#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    SQLQ_FAULT_NETWORK = 1,    /* no response: DNS, refused, timed out, reset (retryable) */
    SQLQ_FAULT_TLS,            /* no response: certificate, handshake, other transport failure */
    SQLQ_FAULT_THROTTLED,      /* 503 ServerBusy, 500 OperationTimedOut, 429, 408 */
    SQLQ_FAULT_SERVER,         /* 500 InternalError, 502, 504, other 5xx */
    SQLQ_FAULT_AUTHENTICATION, /* 401, 403 AuthenticationFailed: key or SAS rejected or expired */
    SQLQ_FAULT_PERMISSION,     /* 403 AuthorizationFailure, AuthorizationPermissionMismatch,
                                  AuthorizationResourceTypeMismatch */
    SQLQ_FAULT_QUEUE_MISSING,  /* 404 QueueNotFound */
    SQLQ_FAULT_QUEUE_BUSY,     /* 409 QueueBeingDeleted, QueueDisabled */
    SQLQ_FAULT_TOO_LARGE,      /* 413 RequestBodyTooLarge, 400 MessageTooLarge: this message */
    SQLQ_FAULT_BAD_BODY,       /* 400 InvalidXmlDocument, InvalidXmlNodeValue, or a body its
                                  encoding cannot carry (SQLQ_E_BODY, never sent): this message */
    SQLQ_FAULT_UNEXPECTED,     /* any other refusal: treated as an outage, never poisons */
    SQLQ_FAULT_LOCAL           /* no request sent or no answer read for a reason of sqlq's own
                                  (out of memory, a request that cannot be built, an unreadable
                                  reply): would fail any message alike, never poisons */
} sqlq_fault_kind;

/* The kind of a failed request, from its error. Without an HTTP status (http_status 0) only
 * SQLQ_E_NETWORK is a transport failure (curl's: transient tells a network failure, DNS,
 * refused, timeout, reset, from TLS or another transport failure); SQLQ_E_TOO_LARGE and
 * SQLQ_E_BODY are this body refused before sending; anything else is SQLQ_FAULT_LOCAL. */
sqlq_fault_kind sqlq_fault_classify(const sqlq_error *e);

/* True only for refusals specific to one message's body: the attempt counts toward poison.
 * Every other fault would fail any message the same way (an outage). */
bool sqlq_fault_counts(sqlq_fault_kind kind);

/* Short stable name for logs and metrics: "network", "tls", "throttled", "server",
 * "authentication", "permission", "queue_missing", "queue_busy", "too_large", "bad_body",
 * "unexpected", "local". */
const char *sqlq_fault_name(sqlq_fault_kind kind);

/* What the request and the credential were, for the cause. */
typedef struct sqlq_fault_context {
    const char *op;         /* "put message", "create queue", "get queue properties" */
    const char *queue;      /* the queue it was for; NULL for account-level requests */
    int http_status;        /* 0 when there was no response */
    const char *azure_code; /* "" when none */
    const char *sas;        /* SAS query of the credential (without '?'); NULL for a key */
    int64_t now_s;          /* Unix time now */
    const char *detail;     /* the request's error message (a token failure's reason: whether
                             * the token endpoint refused the credential or cannot be reached);
                             * NULL = none */
} sqlq_fault_context;

/* The probable cause, one line: "SAS expired at 2026-11-25T10:00:00Z: …", "key rejected: …",
 * "permission missing: needs add (SAS sp=a, role Storage Queue Data Message Sender) on queue
 * orders", … Never holds the signature or key. */
void sqlq_fault_describe(sqlq_fault_kind kind, const sqlq_fault_context *ctx, char *out,
                         size_t size);

/* The SAS's signed expiry (`se=`, URL-decoded: 2026-11-25T10:00:00Z, seconds and fraction
 * optional, or a bare date) into text and Unix seconds. False when absent or unreadable. */
bool sqlq_fault_sas_expiry(const char *sas, char *out_text, size_t text_size, int64_t *out_epoch_s);
/* True when the SAS's signed expiry is at or before now_s: an authentication fault whatever the
 * service answered (the bridge's probe and `config check` both say so). */
bool sqlq_fault_sas_expired(const char *sas, int64_t now_s);

#endif
