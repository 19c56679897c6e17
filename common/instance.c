/* instance: the default instance id, "host:pid:8-hex-random". */
#include "instance.h"

#include "clock.h"

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void sqlq_instance_id_make(char *out, size_t out_size)
{
    char host[128] = "localhost";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    unsigned int rnd = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd))
        rnd = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16) ^ (unsigned)sqlq_clock_wall_ms();
    if (fd >= 0)
        close(fd);
    snprintf(out, out_size, "%s:%d:%08x", host, (int)getpid(), rnd);
}
