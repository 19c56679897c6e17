/* endpoint: one storage account's queue service as requests see it: builds each REST call
 * (URL, x-ms headers, XML body; the credential authorizes it: credential.h) into an HTTP exchange and turns the response
 * into a sqlq_result with the service's error detail. */
#ifndef SQLQ_ENDPOINT_H
#define SQLQ_ENDPOINT_H

#include "account.h"
#include "http.h"
#include "result.h"
#include "shared_key.h"

#include <stdbool.h>
#include <stddef.h>

#define SQLQ_CALL_MAX_QUERY 6

/* One REST call, independent of its attempts (each attempt is signed anew). */
typedef struct sqlq_call {
    const char *op;         /* for messages: "put message", "create queue" */
    const char *method;     /* GET PUT POST DELETE */
    const char *queue;      /* NULL for account-level calls (list queues) */
    bool messages;          /* adds /messages to the path */
    const char *message_id; /* adds /messages/{id} */
    sqlq_pair query[SQLQ_CALL_MAX_QUERY]; /* decoded values */
    size_t nquery;
    const char *text; /* MessageText (already encoded) sent in an XML body; NULL = no body */
    size_t text_len;
} sqlq_call;

void sqlq_call_query(sqlq_call *call, const char *name, const char *value);

typedef struct sqlq_endpoint sqlq_endpoint;

SQLQ_NODISCARD sqlq_result sqlq_endpoint_create(const sqlq_account *account, sqlq_endpoint **out,
                                                sqlq_error *err);
void sqlq_endpoint_destroy(sqlq_endpoint *ep);

/* Fills ex (reset first) with the request for call, dated now and signed. */
SQLQ_NODISCARD sqlq_result sqlq_endpoint_build(sqlq_endpoint *ep, const sqlq_call *call,
                                               sqlq_http_exchange *ex, sqlq_error *err);

/* The outcome of a finished exchange: SQLQ_OK for 2xx; otherwise the mapped result with err
 * filled (http_status, azure_code, request_id, transient, message naming op and queue):
 * 404 -> NOT_FOUND, 409 -> CONFLICT, PopReceiptMismatch -> POP_RECEIPT, MessageTooLarge /
 * 413 -> TOO_LARGE, other statuses -> HTTP, no response -> NETWORK. */
sqlq_result sqlq_endpoint_outcome(const sqlq_endpoint *ep, const sqlq_call *call,
                                  sqlq_http_exchange *ex, sqlq_error *err);

/* After a failed outcome: true when the service refused the credential and the credential
 * dropped it (an expired or invalid token), so one new attempt at once may succeed. Callers
 * make that one attempt and no more. */
bool sqlq_endpoint_refused(sqlq_endpoint *ep, const sqlq_error *e);

/* The one queue a queue-scoped SAS URL reaches; NULL for an account-wide credential. */
const char *sqlq_endpoint_scope(const sqlq_endpoint *ep);

/* scheme://host[:port] of the service, for messages (never holds a SAS). */
const char *sqlq_endpoint_host(const sqlq_endpoint *ep);

#endif
