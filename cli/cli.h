/* cli: what every sqlq command shares: the dispatcher that picks a command or subcommand from
 * argv, and the storage account and queue client made from the common settings. */
#ifndef SQLQ_CLI_H
#define SQLQ_CLI_H

#include "account.h"
#include "clock.h"
#include "config.h"
#include "queue_client.h"

#include <stdio.h>

/* One command (or subcommand) of a dispatch table. */
typedef struct sqlq_cli_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command's own name */
    const char *summary;
} sqlq_cli_command;

/* The one dispatcher, for `sqlq COMMAND` (group NULL) and `sqlq GROUP SUBCOMMAND`: argv[1]
 * among the n names name_at(names, i) gives. Returns its index; or -1 after printing usage
 * (help asked: *exit_code 0; missing or unknown command: 2, naming it). */
int sqlq_cli_pick(const char *group, int argc, char **argv,
                  const char *(*name_at)(const void *names, size_t i), const void *names, size_t n,
                  void (*usage)(FILE *f), int *exit_code);
/* sqlq_cli_pick over a table of commands, then runs the one picked with argv from its name. */
int sqlq_cli_dispatch(const char *group, const sqlq_cli_command *commands, size_t n, int argc,
                      char **argv, void (*usage)(FILE *f));

/* Operator tools give up sooner than the daemons: each request waits at most
 * SQLQ_CLI_REQUEST_TIMEOUT_MS and a failing one is retried with back-off (200 ms doubling up
 * to SQLQ_CLI_RETRY_MAX_DELAY_MS, jittered) for at most SQLQ_CLI_RETRY_BUDGET_MS. A failure
 * that outlasts the budget is an outage: the command stops with exit 1 and the cause, and
 * its client makes no further request (one budget per command: queue_options.one_budget). */
#define SQLQ_CLI_REQUEST_TIMEOUT_MS 30000
#define SQLQ_CLI_RETRY_MAX_DELAY_MS 2000
#define SQLQ_CLI_RETRY_BUDGET_MS 20000

/* Which queue client a command wants besides the account. */
typedef enum sqlq_cli_client {
    SQLQ_CLI_ACCOUNT_ONLY, /* daemons (bridge, consume) make their own clients per thread */
    SQLQ_CLI_OPERATOR,     /* operator tools: the SQLQ_CLI_* limits above; Ctrl-C interrupts
                            * retries and aborts the request on the wire */
    SQLQ_CLI_PATIENT,      /* the daemons' timeouts and retries; Ctrl-C interrupts retries
                            * (backfill: a long run rides out what a daemon rides out) */
} sqlq_cli_client;

/* The queue service as a command reaches it. Do not copy: client keeps &clock. */
typedef struct sqlq_cli_queue {
    sqlq_account *account;
    sqlq_queue_client *client; /* NULL for SQLQ_CLI_ACCOUNT_ONLY */
    sqlq_encoding encoding;
    sqlq_clock clock; /* the client's: a stop request (sqlq_stop_flag) interrupts retries */
} sqlq_cli_queue;

/* The one account and client set-up of every command: the encoding, then the account from
 * common->queue_connection with the common transport settings (allow_insecure_http,
 * ca_file), then the client `kind` asks for. On failure prints "sqlq COMMAND: …" naming the
 * setting and returns the exit code (2 for a missing or invalid setting, 1 when the client
 * cannot start); -1 on success. Call sqlq_cli_queue_close either way. */
int sqlq_cli_queue_open(const char *command, const sqlq_common_settings *common,
                        sqlq_cli_client kind, sqlq_cli_queue *q);
void sqlq_cli_queue_close(sqlq_cli_queue *q);

#endif
