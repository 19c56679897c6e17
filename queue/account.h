/* account: a storage account's queue endpoint and credentials, parsed from what users write. */
#ifndef SQLQ_ACCOUNT_H
#define SQLQ_ACCOUNT_H

#include "result.h"

#include <stddef.h>

typedef struct sqlq_account {
    char *name;         /* account name; NULL for a bare SAS URL without one */
    unsigned char *key; /* decoded account key for SharedKey; NULL when using a SAS */
    size_t key_len;
    char *sas;      /* SAS query without the leading '?'; NULL when using a key */
    char *endpoint; /* queue service URL, no trailing slash: https://acct.queue.core.windows.net */
} sqlq_account;

/* Accepts:
 *  - DefaultEndpointsProtocol=https;AccountName=…;AccountKey=…;EndpointSuffix=core.windows.net
 *    with optional QueueEndpoint=… override and SharedAccessSignature=… instead of a key;
 *  - UseDevelopmentStorage=true (Azurite: http://127.0.0.1:10001/devstoreaccount1);
 *  - a queue service URL with a SAS token: https://acct.queue.core.windows.net/?sv=…&sig=….
 * Keys are case-insensitive, order free, whitespace around ';' ignored. An invalid string gets
 * SQLQ_E_INVALID with err->message naming what is wrong (never the key or signature).
 * The key and SAS signature are registered with sqlq_log_add_secret. */
SQLQ_NODISCARD sqlq_result sqlq_account_parse(const char *text, sqlq_account **out, sqlq_error *err);
void sqlq_account_destroy(sqlq_account *a);

#endif
