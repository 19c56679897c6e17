/* secret_env: a secret read from the environment is wiped from it once read: its bytes are
 * overwritten where they lie (so /proc/PID/environ, which shows the block the process was
 * started with, no longer holds them) and the variable is removed (so no child inherits it). */
#ifndef SQLQ_SECRET_ENV_H
#define SQLQ_SECRET_ENV_H

/* Wipe variable name (nothing when it is not set). Call it after the value has been copied:
 * getenv(name) finds nothing afterwards. Not thread-safe (like setenv): at start-up only. */
void sqlq_secret_env_wipe(const char *name);

#endif
