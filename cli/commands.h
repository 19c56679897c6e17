/* commands: the sqlq subcommands. Each returns the process exit code:
 * 0 success, 1 the operation failed, 2 usage or configuration error. */
#ifndef SQLQ_COMMANDS_H
#define SQLQ_COMMANDS_H

#include "stop.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

enum { SQLQ_EXIT_OK = 0, SQLQ_EXIT_FAILED = 1, SQLQ_EXIT_USAGE = 2 };

/* Set by SIGTERM/SIGINT (main.c); every long-running command polls it. A second signal
 * exits at once. */
extern sqlq_stop sqlq_stop_flag;

int sqlq_cmd_queue(int argc, char **argv);    /* cmd_queue.c */
int sqlq_cmd_consume(int argc, char **argv);  /* cmd_consume.c */
int sqlq_cmd_poison(int argc, char **argv);   /* cmd_poison.c */
int sqlq_cmd_bridge(int argc, char **argv);   /* cmd_bridge.c */
int sqlq_cmd_setup(int argc, char **argv);    /* cmd_setup.c */
int sqlq_cmd_status(int argc, char **argv);   /* cmd_status.c */
int sqlq_cmd_config(int argc, char **argv);   /* cmd_config.c */
int sqlq_cmd_console(int argc, char **argv);  /* cmd_console.c */

/* The settings tables, for `sqlq config` (help, Markdown reference, check). */
struct sqlq_config_spec;
const struct sqlq_config_spec *sqlq_cmd_bridge_spec(void);
const struct sqlq_config_spec *sqlq_cmd_setup_spec(void);
const struct sqlq_config_spec *sqlq_cmd_status_spec(void);
const struct sqlq_config_spec *sqlq_cmd_backfill_spec(void);
const struct sqlq_config_spec *sqlq_cmd_consume_spec(void);
const struct sqlq_config_spec *sqlq_cmd_console_spec(void);
int sqlq_cmd_backfill(int argc, char **argv); /* cmd_backfill.c */
/* The tables of the `poison` and `queue` subcommands: the i-th, NULL past the last. */
const struct sqlq_config_spec *sqlq_cmd_poison_spec(size_t i);
const struct sqlq_config_spec *sqlq_cmd_queue_spec(size_t i);
/* Whether any sqlq command reads this config-file key (cmd_config.c): a shared SQLQ_CONFIG
 * file may hold the keys of every command. */
bool sqlq_cmd_config_key_known(const char *key);

#endif
