/* cmd_config: placeholder until `sqlq config` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_config(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'config' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
