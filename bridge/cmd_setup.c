/* cmd_setup: placeholder until `sqlq setup` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_setup(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'setup' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
