/* main: the sqlq command line: signal handling and dispatch to the subcommands. */
#include "cli.h"
#include "commands.h"
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

sqlq_stop sqlq_stop_flag;

static void on_signal(int sig)
{
    if (sqlq_stop_flag) {
        /* Second signal: leave now. Unfinished work becomes visible again by itself. */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    sqlq_stop_flag = 1;
}

static const sqlq_cli_command commands[] = {
    {"bridge", sqlq_cmd_bridge, "publish SQL table changes to queues (the main job)"},
    {"setup", sqlq_cmd_setup, "install (or --drop) change capture and state tables"},
    {"status", sqlq_cmd_status, "sync version, pending changes and leases per table"},
    {"backfill", sqlq_cmd_backfill, "publish a table's current rows (op read) in key order, resumable"},
    {"consume", sqlq_cmd_consume, "run a handler for each queue message"},
    {"poison", sqlq_cmd_poison, "list, show, requeue, export, import, purge poison messages"},
    {"queue", sqlq_cmd_queue, "queue admin: create, delete, list, stats, put, peek, get, ..."},
    {"console", sqlq_cmd_console, "web console: routes, queues, poison triage (127.0.0.1)"},
    {"config", sqlq_cmd_config, "every setting, and `config check` to validate one"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: sqlq COMMAND [options]   (sqlq COMMAND --help for each)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nexit codes: 0 ok, 1 the operation failed, 2 usage or configuration error\n");
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    sqlq_config_set_known_keys(sqlq_cmd_config_key_known); /* one SQLQ_CONFIG for all */

    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)) {
        printf("sqlq 0.1.0\n");
        return SQLQ_EXIT_OK;
    }
    return sqlq_cli_dispatch(NULL, commands, sizeof(commands) / sizeof(commands[0]), argc, argv,
                             usage);
}
