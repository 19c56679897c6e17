/* shared_key: SharedKey signing of queue service requests (HMAC-SHA256 over the canonical
 * request, REFERENCE.md §1). */
#ifndef SQLQ_SHARED_KEY_H
#define SQLQ_SHARED_KEY_H

#include "result.h"

#include <stddef.h>

/* A name/value pair: a query parameter (value NOT percent-encoded) or an x-ms-* header. */
typedef struct sqlq_pair {
    const char *name;
    const char *value;
} sqlq_pair;

typedef struct sqlq_sign_input {
    const char *method;          /* GET, PUT, POST, DELETE, HEAD */
    const char *path;            /* URL path as sent, from the first '/', without the query */
    const sqlq_pair *query;      /* decoded query parameters (any order; names any case) */
    size_t nquery;
    const sqlq_pair *ms_headers; /* every x-ms-* header sent (any order; names any case) */
    size_t nms_headers;
    size_t content_length;       /* 0 is signed as the empty string */
    const char *content_type;    /* NULL when no Content-Type header is sent */
} sqlq_sign_input;

/* Holds the account name and a ready HMAC key, so each signature costs no set-up. */
typedef struct sqlq_shared_key sqlq_shared_key;

SQLQ_NODISCARD sqlq_result sqlq_shared_key_create(const char *account, const unsigned char *key,
                                                  size_t key_len, sqlq_shared_key **out,
                                                  sqlq_error *err);
void sqlq_shared_key_destroy(sqlq_shared_key *k);

/* Writes the Authorization header value "SharedKey {account}:{signature}" to out. */
SQLQ_NODISCARD sqlq_result sqlq_shared_key_sign(sqlq_shared_key *k, const sqlq_sign_input *in,
                                                char *out, size_t out_size, sqlq_error *err);
/* The string that was signed last (for tests and trace logs; holds no secret). */
const char *sqlq_shared_key_last_string(const sqlq_shared_key *k);

#endif
