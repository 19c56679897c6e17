/* cmd_poison: placeholder until `sqlq poison` is built (replaced by its real implementation). */
#include "commands.h"

#include <stdio.h>

int sqlq_cmd_poison(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "sqlq: 'poison' is not built yet\n");
    return SQLQ_EXIT_FAILED;
}
