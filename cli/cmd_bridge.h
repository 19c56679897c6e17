/* cmd_bridge: the settings table of `sqlq bridge`, for `sqlq config` (help, Markdown, check). */
#ifndef SQLQ_CMD_BRIDGE_H
#define SQLQ_CMD_BRIDGE_H

#include "config.h"

const sqlq_config_spec *sqlq_cmd_bridge_spec(void);
/* `sqlq config check`: the bridge's settings, then a connection to both ends of every route. */
int sqlq_cmd_bridge_check(int argc, char **argv);

#endif
