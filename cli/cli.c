#include "cli.h"

#include "commands.h"
#include "term_text.h"

#include <string.h>

int sqlq_cli_pick(const char *group, int argc, char **argv,
                  const char *(*name_at)(const void *names, size_t i), const void *names, size_t n,
                  void (*usage)(FILE *f), int *exit_code)
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
        if (strcmp(want, name_at(names, i)) == 0)
            return (int)i;
    if (group)
        fprintf(stderr, "sqlq %s: unknown subcommand '%s'\n\n", group, want);
    else
        fprintf(stderr, "sqlq: unknown command '%s'\n\n", want);
    usage(stderr);
    *exit_code = SQLQ_EXIT_USAGE;
    return -1;
}

static const char *table_name(const void *names, size_t i)
{
    return ((const sqlq_cli_command *)names)[i].name;
}

int sqlq_cli_dispatch(const char *group, const sqlq_cli_command *commands, size_t n, int argc,
                      char **argv, void (*usage)(FILE *f))
{
    int code = SQLQ_EXIT_USAGE;
    int pick = sqlq_cli_pick(group, argc, argv, table_name, commands, n, usage, &code);
    return pick < 0 ? code : commands[pick].run(argc - 1, argv + 1);
}

static void client_options(sqlq_cli_client kind, sqlq_cli_queue *q, sqlq_queue_options *o)
{
    sqlq_queue_options_default(o);
    o->encoding = q->encoding;
    q->clock = sqlq_clock_system(&sqlq_stop_flag);
    o->clock = &q->clock; /* Ctrl-C interrupts retries */
    if (kind == SQLQ_CLI_OPERATOR) {
        o->abort_on_stop = true; /* and a request the service does not answer */
        o->timeout_ms = SQLQ_CLI_REQUEST_TIMEOUT_MS;
        o->retry.max_delay_ms = SQLQ_CLI_RETRY_MAX_DELAY_MS;
        o->retry.max_total_ms = SQLQ_CLI_RETRY_BUDGET_MS;
        o->one_budget = true; /* one budget per command, not per request */
    }
}

int sqlq_cli_queue_open(const char *command, const sqlq_common_settings *common,
                        sqlq_cli_client kind, sqlq_cli_queue *q)
{
    memset(q, 0, sizeof(*q));
    q->encoding = SQLQ_ENCODING_BASE64;
    if (common->encoding && !sqlq_encoding_parse(common->encoding, &q->encoding)) {
        fprintf(stderr, "sqlq %s: --encoding: '%s' is not allowed (allowed base64|plain)\n",
                command, common->encoding);
        return SQLQ_EXIT_USAGE;
    }
    if (!common->queue_connection || !*common->queue_connection) {
        fprintf(stderr,
                "sqlq %s: no queue connection: use --queue-connection, SQLQ_QUEUE_CONNECTION, "
                "AzureWebJobsStorage or SQLQ_QUEUE_CONNECTION_FILE; or, with Microsoft Entra ID, "
                "AzureWebJobsStorage__accountName or AzureWebJobsStorage__queueServiceUri (or "
                "SQLQ_QUEUE_CONNECTION__accountName / __queueServiceUri)\n",
                command);
        return SQLQ_EXIT_USAGE;
    }
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_account_options ao = {common->allow_insecure_http, common->ca_file};
    if (sqlq_account_parse_opts(common->queue_connection, &ao, &q->account, &err) != SQLQ_OK) {
        fprintf(stderr, "sqlq %s: queue connection: %s\n", command, err.message);
        return SQLQ_EXIT_USAGE;
    }
    if (kind == SQLQ_CLI_ACCOUNT_ONLY)
        return -1;
    sqlq_queue_options o;
    client_options(kind, q, &o);
    if (sqlq_queue_client_create(q->account, &o, &q->client, &err) != SQLQ_OK) {
        char raw[800], line[800];
        sqlq_error_format(&err, raw, sizeof(raw));
        sqlq_term_text_line(raw, line, sizeof(line)); /* the service wrote part of it */
        fprintf(stderr, "sqlq %s: %s\n", command, line);
        return SQLQ_EXIT_FAILED;
    }
    return -1;
}

void sqlq_cli_queue_close(sqlq_cli_queue *q)
{
    sqlq_queue_client_destroy(q->client);
    sqlq_account_destroy(q->account);
    q->client = NULL;
    q->account = NULL;
}
