/* cmd_queue: placeholder until `sqlq queue` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_queue(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'queue' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
