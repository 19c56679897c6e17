/* msg_change: the names of the operations (see the header). */
#include "msg_change.h"

#include <string.h>

static const char *const op_names[] = {"insert", "update", "delete", "read"};

const char *sqlq_op_name(sqlq_op op)
{
    return (unsigned)op < 4 ? op_names[op] : "?";
}

bool sqlq_op_parse(const char *name, sqlq_op *out)
{
    for (int i = 0; name && i < 4; i++)
        if (strcmp(name, op_names[i]) == 0) {
            *out = (sqlq_op)i;
            return true;
        }
    return false;
}
