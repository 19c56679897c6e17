/* measure: run a command and write its CPU time and peak RSS to a file, like /usr/bin/time
 * but with microseconds (GNU time prints 10 ms steps, too coarse for 0.1 s runs).
 *
 *   measure OUT_FILE CMD [ARGS...]     writes "user_us sys_us maxrss_kib\n"; exits as CMD did
 *
 * A small wrapper process is needed at all because a forked child keeps its parent's RSS
 * high-water mark until exec (a Python parent would show up as every child's peak RSS).
 * Built by bench/setup.sh. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child;

static void forward(int sig)
{
    if (child > 0)
        kill(child, sig);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: measure OUT_FILE CMD [ARGS...]\n");
        return 2;
    }
    child = fork();
    if (child < 0) {
        perror("measure: fork");
        return 2;
    }
    if (child == 0) {
        execvp(argv[2], argv + 2);
        perror("measure: exec");
        _exit(127);
    }
    signal(SIGTERM, forward);
    signal(SIGINT, forward);
    int status = 0;
    struct rusage ru;
    while (wait4(child, &status, 0, &ru) < 0)
        if (errno != EINTR)
            return 2;
    FILE *f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "%ld %ld %ld\n", (long)ru.ru_utime.tv_sec * 1000000L + (long)ru.ru_utime.tv_usec,
                (long)ru.ru_stime.tv_sec * 1000000L + (long)ru.ru_stime.tv_usec, ru.ru_maxrss);
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
