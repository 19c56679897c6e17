#include "cli.h"

#include "commands.h"
#include "term_text.h"

#include <string.h>

int sqlq_cli_pick(const char *group, int argc, char **argv, const char *(*name_at)(size_t i),
                  size_t n, void (*usage)(FILE *f), int *exit_code)
{
    if (argc < 2) {
        usage(stderr);
        *exit_code = SQLQ_EXIT_USAGE;
        return -1;
    }
    const char *want = argv[1];
    if (strcmp(want, "-h") == 0 || strcmp(want, "--help") == 0 || strcmp(want, "help") == 0) {
        usage(stdout);
        *exit_code = SQLQ_EXIT_OK;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(want, name_at(i)) == 0)
            return (int)i;
    fprintf(stderr, "sqlq %s: unknown subcommand '%s'\n\n", group, want);
    usage(stderr);
    *exit_code = SQLQ_EXIT_USAGE;
    return -1;
}

sqlq_result sqlq_cli_account_parse(const sqlq_common_settings *common, sqlq_account **out,
                                   sqlq_error *err)
{
    sqlq_account_options o = {common->allow_insecure_http, common->ca_file};
    return sqlq_account_parse_opts(common->queue_connection, &o, out, err);
}

int sqlq_cli_queue_client(const char *command, const sqlq_common_settings *common,
                          sqlq_clock *clock, sqlq_account **out_account,
                          sqlq_queue_client **out_client)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (!common->queue_connection || !*common->queue_connection) {
        fprintf(stderr, "sqlq %s: no queue connection: use --queue-connection, "
                        "SQLQ_QUEUE_CONNECTION, AzureWebJobsStorage or SQLQ_QUEUE_CONNECTION_FILE\n",
                command);
        return SQLQ_EXIT_USAGE;
    }
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    if (common->encoding && !sqlq_encoding_parse(common->encoding, &o.encoding)) {
        fprintf(stderr, "sqlq %s: --encoding: '%s' is not allowed (allowed base64|plain)\n",
                command, common->encoding);
        return SQLQ_EXIT_USAGE;
    }
    if (sqlq_cli_account_parse(common, out_account, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq %s: queue connection: %s\n", command, err.message);
        return SQLQ_EXIT_USAGE;
    }
    *clock = sqlq_clock_system(&sqlq_stop_flag);
    o.clock = clock; /* Ctrl-C interrupts retries */
    o.abort_on_stop = true; /* and a request the service does not answer */
    o.timeout_ms = SQLQ_CLI_REQUEST_TIMEOUT_MS;
    o.retry.max_delay_ms = SQLQ_CLI_RETRY_MAX_DELAY_MS;
    o.retry.max_total_ms = SQLQ_CLI_RETRY_BUDGET_MS;
    if (sqlq_queue_client_create(*out_account, &o, out_client, &err) != SQLQ_OK) {
        char raw[800], line[800];
        sqlq_error_format(&err, raw, sizeof(raw));
        sqlq_term_text_line(raw, line, sizeof(line)); /* the service wrote part of it */
        fprintf(stderr, "sqlq %s: %s\n", command, line);
        return SQLQ_EXIT_FAILED;
    }
    return -1;
}
