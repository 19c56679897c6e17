/* cmd_bridge: placeholder until `sqlq bridge` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_bridge(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'bridge' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
