/* http_server: the daemons' optional HTTP endpoint: /healthz, /readyz and /metrics. */
#ifndef SQLQ_HTTP_SERVER_H
#define SQLQ_HTTP_SERVER_H

#include "metrics.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Routes (GET or HEAD; other methods get 405):
 *   /healthz  200 "ok" as long as the process runs (liveness).
 *   /readyz   200 "ready" when the readiness callback returns true (or none was given),
 *             else 503 "not ready: <reason>".
 *   /metrics  200, Content-Type "text/plain; version=0.0.4; charset=utf-8": the registry
 *             rendered by sqlq_metrics_render (empty when the registry is NULL).
 *   anything else 404.
 * libmicrohttpd serves requests on its own internal thread; at most 512 connections at a
 * time and 16 per client address, each closed after 3 s idle, so that clients holding
 * connections open do not starve the probes. */
typedef struct sqlq_http_server sqlq_http_server;

/* Called on the server's thread for each /readyz: must be thread-safe (read atomics or take
 * the daemon's own lock) and quick (no network round trip: report the last known state).
 * Return true when ready; otherwise write a short reason such as "database not connected"
 * into reason (NUL-terminated, never a secret). */
typedef bool (*sqlq_readiness_fn)(void *ctx, char *reason, size_t reason_size);

/* Start serving on listen: "HOST:PORT", "[IPV6]:PORT" or ":PORT" (all IPv4 interfaces);
 * HOST may be a name ("localhost"); PORT 0 picks a free port (see sqlq_http_server_port).
 * listen NULL or "" means the endpoint is off: SQLQ_OK with *out = NULL (stop accepts NULL).
 * metrics may be NULL; ready may be NULL (always ready). Both must outlive the server.
 * Errors: SQLQ_E_INVALID (bad address, message names it), SQLQ_E_IO (bind failed: the
 * message names the address and the system's reason, e.g. address already in use). */
SQLQ_NODISCARD sqlq_result sqlq_http_server_start(const char *listen, sqlq_metrics *metrics,
                                                  sqlq_readiness_fn ready, void *ready_ctx,
                                                  sqlq_http_server **out, sqlq_error *err);

/* The port actually bound (useful after PORT 0); 0 for NULL. */
uint16_t sqlq_http_server_port(const sqlq_http_server *s);

/* Stop accepting, finish or close open connections, join the server thread, free. NULL ok.
 * Call it before destroying the metrics registry or the readiness context. */
void sqlq_http_server_stop(sqlq_http_server *s);

#endif
