/* handler_exec: `sqlq consume --exec CMD`: run a shell command per message, the decoded body on
 * its stdin and the message metadata in its environment; exit status 0 is success. */
#ifndef SQLQ_HANDLER_EXEC_H
#define SQLQ_HANDLER_EXEC_H

#include "consumer.h"
#include "result.h"

#include <stdint.h>

/* Environment the command sees (besides the consumer's own):
 *   SQLQ_MESSAGE_ID, SQLQ_DEQUEUE_COUNT, SQLQ_INSERTION_TIME (ISO 8601 UTC), SQLQ_QUEUE.
 * The command runs as `/bin/sh -c CMD` in its own process group. On the message timeout or a
 * shutdown that ran out of time, the group gets SIGTERM, then SIGKILL after kill_grace_ms. The
 * last lines of its stderr (which is also passed through to ours) become the failure reason. */
typedef struct sqlq_handler_exec sqlq_handler_exec;

SQLQ_NODISCARD sqlq_result sqlq_handler_exec_create(const char *command, uint64_t kill_grace_ms,
                                                    sqlq_handler_exec **out, sqlq_error *err);
void sqlq_handler_exec_destroy(sqlq_handler_exec *h);
/* The consumer handler that runs this command (thread-safe: each call spawns its own process). */
sqlq_handler sqlq_handler_exec_bind(sqlq_handler_exec *h);
/* Run the command for one delivery (what the bound handler calls). */
SQLQ_NODISCARD sqlq_result sqlq_handler_exec_run(void *h, const sqlq_delivery *d, sqlq_error *err);

#endif
