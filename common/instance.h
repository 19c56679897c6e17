/* instance: the name an instance of sqlq goes by in leases and cursor state when none is
 * configured: "host:pid:8-hex-random", written here once for every library. */
#ifndef SQLQ_INSTANCE_H
#define SQLQ_INSTANCE_H

#include <stddef.h>

/* "host:pid:8-hex-random" into out (the random part from /dev/urandom, else the clock). */
void sqlq_instance_id_make(char *out, size_t out_size);

#endif
