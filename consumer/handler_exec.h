/* handler_exec: `sqlq consume --exec CMD`: run a shell command per message, the decoded body on
 * its stdin and the message metadata in its environment; exit status 0 is success. */
#ifndef SQLQ_HANDLER_EXEC_H
#define SQLQ_HANDLER_EXEC_H

#include "consumer.h"
#include "result.h"

#include <stdbool.h>
#include <stdint.h>

/* Environment the command sees: the consumer's own without its secrets (see
 * sqlq_handler_exec_env_secret), plus
 *   SQLQ_MESSAGE_ID, SQLQ_DEQUEUE_COUNT, SQLQ_INSERTION_TIME (ISO 8601 UTC), SQLQ_QUEUE.
 * The command runs as `/bin/sh -c CMD` in its own process group, with exactly three open
 * descriptors: stdin is an anonymous file holding the whole body (never a cut one), stdout is
 * ours, stderr a pipe to us. The shell gets SIGKILL when the consumer dies (PR_SET_PDEATHSIG,
 * tied to the worker thread that started it, which lives as long as the consumer). On the
 * message timeout or a shutdown that ran out of time, the group gets SIGTERM, then SIGKILL after
 * kill_grace_ms. The last lines of its stderr (also passed through to ours) become the failure
 * reason. */
/* The exit status by which a command says the message can never succeed (EX_DATAERR of
 * sysexits.h): it goes to {queue}-poison at once, its stderr as the reason. */
#define SQLQ_HANDLER_EXEC_REJECT 65
/* The exit status by which a command says that what it needs is unavailable (EX_TEMPFAIL of
 * sysexits.h: a database down, a service refusing): an outage, no fault of the message. The
 * message is held and the command run again for it with back-off, never counted toward poison,
 * and no further messages are taken meanwhile (consumer.h). */
#define SQLQ_HANDLER_EXEC_UNAVAILABLE 75

typedef struct sqlq_handler_exec sqlq_handler_exec;

SQLQ_NODISCARD sqlq_result sqlq_handler_exec_create(const char *command, uint64_t kill_grace_ms,
                                                    sqlq_handler_exec **out, sqlq_error *err);
void sqlq_handler_exec_destroy(sqlq_handler_exec *h);
/* The consumer handler that runs this command (thread-safe: each call spawns its own process). */
sqlq_handler sqlq_handler_exec_bind(sqlq_handler_exec *h);
/* True for an environment entry ("NAME=value") a handler must not inherit: SQLQ_*CONNECTION*
 * (and their _FILE paths), SQLQ_SQL(_FILE), AzureWebJobsStorage*, AZURE_CLIENT_SECRET*. */
bool sqlq_handler_exec_env_secret(const char *entry);
/* Run the command for one delivery (what the bound handler calls). */
SQLQ_NODISCARD sqlq_result sqlq_handler_exec_run(void *h, const sqlq_received *d, sqlq_error *err);

#endif
