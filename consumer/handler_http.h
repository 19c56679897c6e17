/* handler_http: `sqlq consume --http URL`: POST each decoded body to a URL; 2xx is success. */
#ifndef SQLQ_HANDLER_HTTP_H
#define SQLQ_HANDLER_HTTP_H

#include "consumer.h"
#include "result.h"

/* Headers sent: X-Sqlq-Message-Id, X-Sqlq-Dequeue-Count, X-Sqlq-Insertion-Time (ISO 8601 UTC),
 * X-Sqlq-Queue, and Content-Type application/json when the body parses as JSON (text/plain;
 * charset=utf-8 for other UTF-8 text, application/octet-stream otherwise). The request is cut
 * off at timeout_ms, at the message deadline, or when the consumer cancels it. */
/* The status by which an endpoint says the message can never succeed (422 Unprocessable
 * Content): it goes to {queue}-poison at once, the response body as the reason. */
#define SQLQ_HANDLER_HTTP_REJECT 422
/* An endpoint that cannot be reached (connection refused, DNS) or answers 429, 502, 503 or 504
 * is unavailable (SQLQ_E_UNAVAILABLE: an outage, no fault of the message; consumer.h). A 500, a
 * timeout or a connection reset mid-request may be the message's doing and counts as a failure. */

typedef struct sqlq_handler_http sqlq_handler_http;

SQLQ_NODISCARD sqlq_result sqlq_handler_http_create(const char *url, long timeout_ms,
                                                    sqlq_handler_http **out, sqlq_error *err);
void sqlq_handler_http_destroy(sqlq_handler_http *h);
/* The consumer handler: one kept-alive connection per worker. */
sqlq_handler sqlq_handler_http_bind(sqlq_handler_http *h);

#endif
