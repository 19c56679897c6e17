/* credential: how a queue request proves who sends it, the one seam the request builder calls
 * (as the Azure SDK for C's credential policy): SharedKey signs the canonical request, a SAS
 * adds its query, a token credential adds "Authorization: Bearer" from the process-wide token
 * cache (credential_token.h). */
#ifndef SQLQ_CREDENTIAL_H
#define SQLQ_CREDENTIAL_H

#include "account.h"
#include "buf.h"
#include "http.h"
#include "result.h"
#include "shared_key.h"

#include <stdbool.h>

/* What a credential sees of one request attempt, and where it writes. */
typedef struct sqlq_auth_request {
    const sqlq_sign_input *sign; /* method, path, query, x-ms headers, body length and type */
    sqlq_buf *url;               /* the URL built so far; a SAS appends its query */
    bool url_has_query;          /* url already holds a '?' */
    sqlq_http_exchange *ex;      /* headers go here */
} sqlq_auth_request;

typedef struct sqlq_credential sqlq_credential;

typedef struct sqlq_credential_ops {
    const char *kind; /* "SharedKey", "SAS", "token" (for messages) */
    /* Authorizes one attempt. A token credential may block for the token request; its
     * failure is SQLQ_E_NETWORK with azure_code SQLQ_TOKEN_UNAVAILABLE, transient unless the
     * token endpoint refused the identity (a 4xx). */
    sqlq_result (*authorize)(sqlq_credential *c, const sqlq_auth_request *req, sqlq_error *err);
    /* After a 401/403 that says the credential was refused: true when one more attempt with a
     * fresh credential may succeed (a token: the cached one is dropped). NULL = never. */
    bool (*refused)(sqlq_credential *c, int status, const char *azure_code);
    void (*destroy)(sqlq_credential *c);
} sqlq_credential_ops;

struct sqlq_credential {
    const sqlq_credential_ops *ops;
};

/* The error code a failed token request carries in sqlq_error.azure_code (retry/fault.c makes
 * it an outage: never a reason to poison a message). */
#define SQLQ_TOKEN_UNAVAILABLE "TokenUnavailable"

/* The credential of one client (one thread) for this account: SharedKey (a->key), SAS
 * (a->sas) or token (a->token, shared by every client of the process). */
SQLQ_NODISCARD sqlq_result sqlq_credential_create(const sqlq_account *a, sqlq_credential **out,
                                                  sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_credential_authorize(sqlq_credential *c,
                                                     const sqlq_auth_request *req,
                                                     sqlq_error *err);
bool sqlq_credential_refused(sqlq_credential *c, int status, const char *azure_code);
void sqlq_credential_destroy(sqlq_credential *c);

#endif
