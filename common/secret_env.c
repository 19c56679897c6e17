#include "secret_env.h"

#include <stdlib.h>
#include <string.h>

void sqlq_secret_env_wipe(const char *name)
{
    char *v = name ? getenv(name) : NULL;
    if (!v)
        return;
    /* The value may sit in the initial environment block that /proc/PID/environ shows:
     * unsetenv only drops the pointer, so overwrite the bytes first. */
    memset(v, 'x', strlen(v));
    unsetenv(name);
}
