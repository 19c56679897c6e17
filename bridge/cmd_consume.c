/* cmd_consume: placeholder until `sqlq consume` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_consume(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'consume' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
