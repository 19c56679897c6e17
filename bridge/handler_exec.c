#include "handler_exec.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define TAIL_MAX 4096 /* bytes of stderr kept for the failure reason */
#define REASON_LINES 5

struct sqlq_handler_exec {
    char *command;
    uint64_t kill_grace_ms;
};

sqlq_result sqlq_handler_exec_create(const char *command, uint64_t kill_grace_ms,
                                     sqlq_handler_exec **out, sqlq_error *err)
{
    *out = NULL;
    if (!command || !*command)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "--exec: empty command");
    sqlq_handler_exec *h = calloc(1, sizeof(*h));
    if (!h || !(h->command = strdup(command))) {
        free(h);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    h->kill_grace_ms = kill_grace_ms ? kill_grace_ms : 2000;
    *out = h;
    return SQLQ_OK;
}

void sqlq_handler_exec_destroy(sqlq_handler_exec *h)
{
    if (!h)
        return;
    free(h->command);
    free(h);
}

sqlq_handler sqlq_handler_exec_bind(sqlq_handler_exec *h)
{
    sqlq_handler hd = {.handle = sqlq_handler_exec_run, .ctx = h};
    return hd;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- environment ---- */

typedef struct child_env {
    char *vars[4];
    char **envp;
} child_env;

static bool is_ours(const char *e)
{
    static const char *const names[] = {
        "SQLQ_MESSAGE_ID=", "SQLQ_DEQUEUE_COUNT=", "SQLQ_INSERTION_TIME=", "SQLQ_QUEUE="};
    for (size_t i = 0; i < 4; i++)
        if (strncmp(e, names[i], strlen(names[i])) == 0)
            return true;
    return false;
}

static void env_free(child_env *ce)
{
    for (size_t i = 0; i < 4; i++)
        free(ce->vars[i]);
    free(ce->envp);
}

static sqlq_result env_build(child_env *ce, const sqlq_delivery *d)
{
    memset(ce, 0, sizeof(*ce));
    char iso[32];
    sqlq_delivery_insertion_iso(d, iso, sizeof(iso));
    if (asprintf(&ce->vars[0], "SQLQ_MESSAGE_ID=%s", d->message_id) < 0)
        ce->vars[0] = NULL;
    if (asprintf(&ce->vars[1], "SQLQ_DEQUEUE_COUNT=%ld", d->dequeue_count) < 0)
        ce->vars[1] = NULL;
    if (asprintf(&ce->vars[2], "SQLQ_INSERTION_TIME=%s", iso) < 0)
        ce->vars[2] = NULL;
    if (asprintf(&ce->vars[3], "SQLQ_QUEUE=%s", d->queue) < 0)
        ce->vars[3] = NULL;
    size_t n = 0;
    while (environ && environ[n])
        n++;
    ce->envp = calloc(n + 5, sizeof(char *));
    if (!ce->envp || !ce->vars[0] || !ce->vars[1] || !ce->vars[2] || !ce->vars[3]) {
        env_free(ce);
        return SQLQ_E_NOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_ours(environ[i]))
            ce->envp[k++] = environ[i];
    for (size_t i = 0; i < 4; i++)
        ce->envp[k++] = ce->vars[i];
    return SQLQ_OK;
}

/* ---- the child process ---- */

typedef struct child {
    pid_t pid;
    int in_fd;  /* its stdin; -1 once closed */
    int err_fd; /* its stderr; -1 at EOF */
    const char *body;
    size_t body_len, written;
    char tail[TAIL_MAX];
    size_t tail_len;
    int status;
    bool exited;
} child;

static sqlq_result child_spawn(sqlq_handler_exec *h, const sqlq_delivery *d, child *ch,
                               sqlq_error *err)
{
    int in[2], errp[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return sqlq_error_set(err, SQLQ_E_IO, true, "pipe: %s", strerror(errno));
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return sqlq_error_set(err, SQLQ_E_IO, true, "pipe: %s", strerror(errno));
    }
    child_env ce;
    sqlq_result r = env_build(&ce, d);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawnattr_init(&at);
    sigset_t def, none;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {(char *)"sh", (char *)"-c", h->command, NULL};
    int rc = r == SQLQ_OK ? posix_spawn(&ch->pid, "/bin/sh", &fa, &at, argv, ce.envp) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (r == SQLQ_OK)
        env_free(&ce);
    close(in[0]);
    close(errp[1]);
    if (rc != 0) {
        close(in[1]);
        close(errp[0]);
        return sqlq_error_set(err, SQLQ_E_IO, true, "cannot start /bin/sh: %s", strerror(rc));
    }
    ch->in_fd = in[1];
    ch->err_fd = errp[0];
    fcntl(ch->in_fd, F_SETFL, O_NONBLOCK);
    fcntl(ch->err_fd, F_SETFL, O_NONBLOCK);
    if (ch->body_len == 0) {
        close(ch->in_fd);
        ch->in_fd = -1;
    }
    return SQLQ_OK;
}

static void tail_add(child *ch, const char *p, size_t n)
{
    if (n >= TAIL_MAX) {
        p += n - TAIL_MAX;
        n = TAIL_MAX;
    }
    if (ch->tail_len + n > TAIL_MAX) {
        size_t drop = ch->tail_len + n - TAIL_MAX;
        memmove(ch->tail, ch->tail + drop, ch->tail_len - drop);
        ch->tail_len -= drop;
    }
    memcpy(ch->tail + ch->tail_len, p, n);
    ch->tail_len += n;
}

/* write() to a pipe whose reader is gone raises SIGPIPE: block it in this thread around the
 * write and take the pending one back, so embedding programs need not ignore SIGPIPE. */
static ssize_t write_nosigpipe(int fd, const void *p, size_t n)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t w = write(fd, p, n);
    int saved = errno;
    if (w < 0 && errno == EPIPE) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return w;
}

static void pump_stdin(child *ch)
{
    ssize_t n = write_nosigpipe(ch->in_fd, ch->body + ch->written, ch->body_len - ch->written);
    if (n > 0)
        ch->written += (size_t)n;
    /* EPIPE: the command does not read its input; that is its business. */
    if (ch->written == ch->body_len || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(ch->in_fd);
        ch->in_fd = -1;
    }
}

static void pump_stderr(child *ch)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(ch->err_fd, buf, sizeof(buf));
        if (n > 0) {
            tail_add(ch, buf, (size_t)n);
            if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
                /* our stderr is gone: keep the tail anyway */
            }
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            close(ch->err_fd);
            ch->err_fd = -1;
        }
        return;
    }
}

/* Wait up to ms for I/O or exit; moves data. */
static void child_step(child *ch, int ms)
{
    struct pollfd p[2];
    nfds_t n = 0;
    if (ch->in_fd >= 0)
        p[n++] = (struct pollfd){.fd = ch->in_fd, .events = POLLOUT};
    if (ch->err_fd >= 0)
        p[n++] = (struct pollfd){.fd = ch->err_fd, .events = POLLIN};
    if (n == 0) {
        /* Both pipes closed but the process still runs (it closed its stderr): just wait. */
        poll(NULL, 0, ms);
    } else if (poll(p, n, ms) > 0) {
        for (nfds_t i = 0; i < n; i++) {
            if (!p[i].revents)
                continue;
            if (p[i].fd == ch->in_fd)
                pump_stdin(ch);
            else if (p[i].fd == ch->err_fd)
                pump_stderr(ch);
        }
    }
    if (!ch->exited && waitpid(ch->pid, &ch->status, WNOHANG) == ch->pid)
        ch->exited = true;
}

static void child_close(child *ch)
{
    if (ch->in_fd >= 0)
        close(ch->in_fd);
    if (ch->err_fd >= 0)
        close(ch->err_fd);
    ch->in_fd = ch->err_fd = -1;
}

/* SIGTERM to the group, SIGKILL after the grace; always reaps. */
static void child_kill(sqlq_handler_exec *h, child *ch)
{
    kill(-ch->pid, SIGTERM);
    uint64_t until = mono_ms() + h->kill_grace_ms;
    while (!ch->exited && mono_ms() < until)
        child_step(ch, 20);
    kill(-ch->pid, SIGKILL);
    if (!ch->exited && waitpid(ch->pid, &ch->status, 0) == ch->pid)
        ch->exited = true;
}

/* The last lines of stderr, on one line, for the failure reason. */
static void tail_lines(const child *ch, char *out, size_t size)
{
    size_t end = ch->tail_len;
    while (end > 0 && (ch->tail[end - 1] == '\n' || ch->tail[end - 1] == '\r'))
        end--;
    size_t start = end;
    int lines = 0;
    while (start > 0 && lines < REASON_LINES) {
        start--;
        if (ch->tail[start] == '\n' && ++lines == REASON_LINES) {
            start++;
            break;
        }
    }
    size_t n = end - start < size - 1 ? end - start : size - 1;
    memcpy(out, ch->tail + end - n, n);
    out[n] = '\0';
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '"')
            *p = *p == '"' ? '\'' : '|';
}

sqlq_result sqlq_handler_exec_run(void *ctx, const sqlq_delivery *d, sqlq_error *err)
{
    sqlq_handler_exec *h = ctx;
    child ch = {.in_fd = -1, .err_fd = -1, .body = d->body, .body_len = d->body_len};
    sqlq_result r = child_spawn(h, d, &ch, err);
    if (r != SQLQ_OK)
        return r;
    bool timed_out = false, cancelled = false;
    while (!ch.exited || ch.err_fd >= 0) {
        if (ch.exited && ch.err_fd >= 0) {
            /* A background grandchild may hold stderr open: take what is there and go. */
            pump_stderr(&ch);
            break;
        }
        uint64_t left = sqlq_delivery_remaining_ms(d);
        if (left == 0 || sqlq_delivery_cancelled(d)) {
            timed_out = left == 0;
            cancelled = !timed_out;
            child_kill(h, &ch);
            break;
        }
        child_step(&ch, left < 100 ? (int)left : 100);
    }
    child_close(&ch);
    char tail[600];
    tail_lines(&ch, tail, sizeof(tail));
    if (timed_out || cancelled)
        return sqlq_error_set(err, SQLQ_E_TIMEOUT, false, "command %s (killed); stderr: %s",
                              timed_out ? "timed out" : "cancelled by shutdown", tail);
    if (WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0)
        return SQLQ_OK;
    if (WIFSIGNALED(ch.status))
        return sqlq_error_set(err, SQLQ_E_IO, false, "command killed by signal %d; stderr: %s",
                              WTERMSIG(ch.status), tail);
    return sqlq_error_set(err, SQLQ_E_IO, false, "command exited with status %d; stderr: %s",
                          WEXITSTATUS(ch.status), tail);
}
