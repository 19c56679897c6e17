/* consumer_transport: the consumer's queue operations over real REST clients, one per thread. */
#include "consumer_internal.h"

#include "log.h"

#include <stdlib.h>
#include <string.h>

typedef struct azure_ctx {
    const sqlq_account *account;
    sqlq_queue_options options;
    const sqlq_clock *interruptible;
    sqlq_clock steady; /* nothing interrupts it: a finishing handler's delete must still retry */
    int lease_s;
    bool (*poll_abort)(void *);
    bool (*io_abort)(void *);
    void *abort_ctx;
} azure_ctx;

static sqlq_result az_open(void *ctx, sqlq_conn_role role, void **out_conn, sqlq_error *err)
{
    azure_ctx *a = ctx;
    sqlq_queue_options o = a->options;
    switch (role) {
    case SQLQ_CONN_POLL:
        /* A failing poll is followed by the polling back-off: keep the request's own short. */
        o.clock = a->interruptible;
        o.retry.max_total_ms = 10000;
        o.abort_now = a->poll_abort;
        break;
    case SQLQ_CONN_WORKER:
        /* Bounded so a shutdown waiting for handlers is not held up for long. */
        o.clock = &a->steady;
        o.retry.max_total_ms = 20000;
        break;
    case SQLQ_CONN_RENEW: {
        /* Renewal retries on its own schedule (sooner than half the lease). */
        uint64_t budget = (uint64_t)a->lease_s * 1000u / 8u;
        o.clock = &a->steady;
        o.retry.max_total_ms = budget < 200 ? 200 : budget > 10000 ? 10000 : budget;
        break;
    }
    }
    if (role != SQLQ_CONN_POLL)
        o.abort_now = a->io_abort;
    o.abort_ctx = a->abort_ctx;
    sqlq_queue_client *c = NULL;
    sqlq_result r = sqlq_queue_client_create(a->account, &o, &c, err);
    *out_conn = c;
    return r;
}

static void az_close(void *conn)
{
    sqlq_queue_client_destroy(conn);
}

static sqlq_result az_get(void *conn, const char *queue, int count, int visibility_s,
                          sqlq_message_list *out, sqlq_error *err)
{
    return sqlq_queue_get(conn, queue, count, visibility_s, out, err);
}

static sqlq_result az_update(void *conn, const char *queue, const char *id, const char *pop_receipt,
                             int visibility_s, char **out_pop_receipt, sqlq_error *err)
{
    return sqlq_queue_update_message(conn, queue, id, pop_receipt, visibility_s, NULL, 0, false,
                                     out_pop_receipt, NULL, err);
}

static sqlq_result az_remove(void *conn, const char *queue, const char *id, const char *pop_receipt,
                             sqlq_error *err)
{
    return sqlq_queue_delete_message(conn, queue, id, pop_receipt, err);
}

/* The consumer puts only into {queue}-poison: copies that never expire (ttl -1), as the
 * bridge's and the poison tools' (docs/consumer.md); 0 would be the service's 7 days. */
static sqlq_result az_put(void *conn, const char *queue, const char *text, size_t len,
                          sqlq_error *err)
{
    sqlq_put_options po = {.visibility_s = 0, .ttl_s = -1, .verbatim = true};
    return sqlq_queue_put(conn, queue, text, len, &po, NULL, err);
}

static sqlq_result az_create(void *conn, const char *queue, sqlq_error *err)
{
    bool created = false;
    return sqlq_queue_create(conn, queue, &created, err);
}

sqlq_result sqlq_consumer_transport_azure(const sqlq_account *account,
                                          const sqlq_queue_options *queue_options,
                                          const sqlq_clock *interruptible, int lease_s,
                                          sqlq_consumer_transport *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!account)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "consumer: no storage account");
    azure_ctx *a = calloc(1, sizeof(*a));
    if (!a)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "consumer: out of memory");
    a->account = account;
    if (queue_options)
        a->options = *queue_options;
    else
        sqlq_queue_options_default(&a->options);
    a->interruptible = interruptible;
    a->steady = sqlq_clock_system(NULL);
    a->lease_s = lease_s;
    out->open = az_open;
    out->close = az_close;
    out->get = az_get;
    out->update = az_update;
    out->remove = az_remove;
    out->put = az_put;
    out->create = az_create;
    out->ctx = a;
    return SQLQ_OK;
}

void sqlq_consumer_transport_azure_abort(sqlq_consumer_transport *t, bool (*poll_abort)(void *),
                                         bool (*io_abort)(void *), void *ctx)
{
    azure_ctx *a = t->ctx;
    a->poll_abort = poll_abort;
    a->io_abort = io_abort;
    a->abort_ctx = ctx;
}

void sqlq_consumer_transport_free(sqlq_consumer_transport *t)
{
    if (!t)
        return;
    free(t->ctx);
    t->ctx = NULL;
}
