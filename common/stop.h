/* stop: the type of a stop request flag. A signal handler or a supervising thread sets it;
 * any thread reads it. A lock-free atomic int may be stored from a signal handler (C11
 * 7.14.1.1) and read from other threads without a data race, which volatile sig_atomic_t
 * does not promise; plain reads and writes of it are atomic (sequentially consistent). */
#ifndef SQLQ_STOP_H
#define SQLQ_STOP_H

#include <stdatomic.h>

typedef atomic_int sqlq_stop;

#if ATOMIC_INT_LOCK_FREE != 2
#error "sqlq_stop must be lock-free to be set from a signal handler"
#endif

#endif
