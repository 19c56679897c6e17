/* Fuzz: the storage connection string / queue URL parser, and the endpoint built from it (the
 * request path and URL for a message id taken from the input too). */
#include "account.h"
#include "endpoint.h"
#include "log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet++)
        sqlq_log_set_level(SQLQ_LOG_ERROR);
    /* input: CONNECTION '\n' MESSAGE-ID */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *nl = memchr(text, '\n', size);
    const char *id = "id";
    if (nl) {
        *nl = '\0';
        id = nl + 1;
    }
    for (int allow = 0; allow < 2; allow++) {
        sqlq_account_options o = {allow == 1, NULL};
        sqlq_account *a = NULL;
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_account_parse_opts(text, &o, &a, &err) != SQLQ_OK)
            continue;
        const char *q = NULL;
        sqlq_error_clear(&err);
        (void)sqlq_account_queue(a, "orders", &q, &err);
        (void)sqlq_account_reaches(a, "orders-poison", NULL);
        sqlq_endpoint *ep = NULL;
        sqlq_http *http = NULL;
        sqlq_http_exchange ex;
        memset(&ex, 0, sizeof(ex));
        if (sqlq_endpoint_create(a, &ep, &err) == SQLQ_OK &&
            sqlq_http_create(1000, &http, &err) == SQLQ_OK &&
            sqlq_http_exchange_init(http, &ex, &err) == SQLQ_OK) {
            sqlq_call call = {"delete message", "DELETE", a->queue ? a->queue : "orders", false, id,
                              {{0}}, 0, NULL, 0};
            sqlq_call_query(&call, "popreceipt", id);
            (void)sqlq_endpoint_build(ep, &call, &ex, &err);
            sqlq_http_exchange_cleanup(http, &ex);
        }
        sqlq_http_destroy(http);
        sqlq_endpoint_destroy(ep);
        sqlq_account_destroy(a);
    }
    sqlq_log_clear_secrets();
    free(text);
    return 0;
}
