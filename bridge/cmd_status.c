/* cmd_status: placeholder until `sqlq status` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_status(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'status' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
