/* cli: what the sqlq subcommand groups share: picking a subcommand from argv, and turning the
 * common settings into a storage account and a queue client. */
#ifndef SQLQ_CLI_H
#define SQLQ_CLI_H

#include "account.h"
#include "clock.h"
#include "config.h"
#include "queue_client.h"

#include <stdio.h>

/* argv[1] among n subcommands whose names name_at(i) gives. Returns its index; or -1 after
 * printing usage (help asked: *exit_code 0; missing or unknown subcommand: 2). */
int sqlq_cli_pick(const char *group, int argc, char **argv, const char *(*name_at)(size_t i),
                  size_t n, void (*usage)(FILE *f), int *exit_code);

/* Parse common->queue_connection with the common transport settings (allow_insecure_http,
 * ca_file). */
SQLQ_NODISCARD sqlq_result sqlq_cli_account_parse(const sqlq_common_settings *common,
                                                  sqlq_account **out, sqlq_error *err);

/* Operator tools give up sooner than the daemons: each request waits at most
 * SQLQ_CLI_REQUEST_TIMEOUT_MS and a failing one is retried with back-off (200 ms doubling up
 * to SQLQ_CLI_RETRY_MAX_DELAY_MS, jittered) for at most SQLQ_CLI_RETRY_BUDGET_MS. A failure
 * that outlasts the budget is an outage: the command stops with exit 1 and the cause. */
#define SQLQ_CLI_REQUEST_TIMEOUT_MS 30000
#define SQLQ_CLI_RETRY_MAX_DELAY_MS 2000
#define SQLQ_CLI_RETRY_BUDGET_MS 20000

/* Parse common->queue_connection and create a client whose retries the stop flag interrupts
 * (*clock must outlive the client). On failure prints "sqlq COMMAND: …" and returns the exit
 * code (2 for a missing or invalid connection, 1 otherwise); -1 on success. */
int sqlq_cli_queue_client(const char *command, const sqlq_common_settings *common,
                          sqlq_clock *clock, sqlq_account **out_account,
                          sqlq_queue_client **out_client);

#endif
