/* account: a storage account's queue endpoint and credentials, parsed from what users write. */
#ifndef SQLQ_ACCOUNT_H
#define SQLQ_ACCOUNT_H

#include "result.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_account {
    char *name;         /* account name; NULL for a bare SAS URL without one */
    unsigned char *key; /* decoded account key for SharedKey; NULL when using a SAS */
    size_t key_len;
    char *sas;      /* SAS query without the leading '?'; NULL when using a key */
    char *endpoint; /* queue service URL, no trailing slash: https://acct.queue.core.windows.net */
    char *queue;    /* the queue of a queue-scoped SAS URL (…/QUEUE?sv=…); NULL for a service */
    bool plain_http; /* http:// to a host that is neither loopback nor development storage */
    char *ca_file;   /* PEM CA bundle trusted instead of the system's; NULL = system */
    /* Microsoft Entra ID (QueueServiceUri without a key or SAS): the process-wide token cache
     * every client of this account shares; NULL for SharedKey and SAS. */
    struct sqlq_token_cache *token;
    char *credential; /* Credential=…: managedidentity | workloadidentity | environment */
    char *client_id;  /* ClientId=…: a user-assigned identity */
} sqlq_account;

/* Longest endpoint URL and SAS token accepted: requests are built in bounded buffers, and a
 * value this long is a paste error, reported as a configuration error rather than at the
 * first request. */
#define SQLQ_ACCOUNT_MAX_ENDPOINT 512
#define SQLQ_ACCOUNT_MAX_SAS 4096

typedef struct sqlq_account_options {
    /* Accept http:// to any host (SAS tokens and unsigned bodies travel in clear text).
     * Without it, http:// is accepted only for loopback hosts and development storage. */
    bool allow_insecure_http;
    /* A PEM file of CA certificates to trust instead of the system's (a private CA, a TLS
     * proxy); NULL = the system store. Verification is always on. */
    const char *ca_file;
} sqlq_account_options;

/* Accepts:
 *  - DefaultEndpointsProtocol=https;AccountName=…;AccountKey=…;EndpointSuffix=core.windows.net
 *    with optional QueueEndpoint=… override and SharedAccessSignature=… instead of a key;
 *  - UseDevelopmentStorage=true (Azurite: http://127.0.0.1:10001/devstoreaccount1);
 *  - a queue service URL with a SAS token: https://acct.queue.core.windows.net/?sv=…&sig=…;
 *  - a queue URL with a queue-scoped SAS (Azure Portal, the SDKs' generateSasUrl()):
 *    https://acct.queue.core.windows.net/QUEUE?sv=…&sig=… (path-style for IP hosts and
 *    localhost: http://127.0.0.1:10001/ACCOUNT/QUEUE?…); the queue goes to a->queue;
 *  - Microsoft Entra ID, as Azure Functions' identity-based connections:
 *    QueueServiceUri=https://acct.queue.core.windows.net[;Credential=managedidentity]
 *    [;ClientId=…] (cli/config.c builds this from AzureWebJobsStorage__queueServiceUri or
 *    __accountName, __credential, __clientId). https only. The token source is chosen here
 *    (no request is made): credential_token.h.
 * Keys are case-insensitive, order free, whitespace around ';' ignored. An invalid string gets
 * SQLQ_E_INVALID with err->message naming what is wrong (never the key, signature or a
 * user:password@ part of a URL). http:// is refused unless the host is loopback or development
 * storage, or opts->allow_insecure_http (then a warning is logged).
 * The key and SAS signature are registered with sqlq_log_add_secret. */
SQLQ_NODISCARD sqlq_result sqlq_account_parse_opts(const char *text,
                                                   const sqlq_account_options *opts,
                                                   sqlq_account **out, sqlq_error *err);
/* sqlq_account_parse_opts with the defaults (insecure http refused). */
SQLQ_NODISCARD sqlq_result sqlq_account_parse(const char *text, sqlq_account **out, sqlq_error *err);

/* The queue a command works on. For a queue-scoped SAS the queue comes from the URL: a
 * different `wanted` is SQLQ_E_INVALID naming both; wanted NULL or "" takes the URL's. Without
 * one, wanted is returned as is (NULL when not given). */
SQLQ_NODISCARD sqlq_result sqlq_account_queue(const sqlq_account *a, const char *wanted,
                                              const char **out, sqlq_error *err);

/* Whether this credential can reach `queue` at all (a queue-scoped SAS reaches one queue). When
 * not, err says so, naming the queue and the credential's queue. */
bool sqlq_account_reaches(const sqlq_account *a, const char *queue, sqlq_error *err);
void sqlq_account_destroy(sqlq_account *a);

#endif
