#include "handler_exec.h"

#include "clock.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

bool sqlq_handler_exec_env_secret(const char *e)
{
    static const char *const prefixes[] = {"AzureWebJobsStorage", "AZURE_CLIENT_SECRET",
                                           "IDENTITY_HEADER=", "SQLQ_SQL=", "SQLQ_SQL_FILE="};
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(e, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    /* SQLQ_*CONNECTION* (and their _FILE paths): the name is what precedes '=' */
    size_t name_len = strcspn(e, "=");
    if (name_len < 5 || strncmp(e, "SQLQ_", 5) != 0)
        return false;
    static const char word[] = "CONNECTION";
    for (size_t i = 5; i + sizeof(word) - 1 <= name_len; i++)
        if (memcmp(e + i, word, sizeof(word) - 1) == 0)
            return true;
    return false;
}

static void env_free(child_env *ce)
{
    for (size_t i = 0; i < 4; i++)
        free(ce->vars[i]);
    free(ce->envp);
}

static sqlq_result env_build(child_env *ce, const sqlq_received *d)
{
    memset(ce, 0, sizeof(*ce));
    char iso[32];
    sqlq_received_insertion_iso(d, iso, sizeof(iso));
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
        if (!is_ours(environ[i]) && !sqlq_handler_exec_env_secret(environ[i]))
            ce->envp[k++] = environ[i];
    for (size_t i = 0; i < 4; i++)
        ce->envp[k++] = ce->vars[i];
    return SQLQ_OK;
}

/* ---- the child process ---- */

typedef struct child {
    pid_t pid;
    int err_fd; /* its stderr; -1 at EOF */
    char tail[TAIL_MAX];
    size_t tail_len;
    int status;
    bool exited;
} child;

/* The whole body in an anonymous file, rewound: the handler's stdin exists complete before the
 * handler does, so a consumer that dies mid-way can never hand it a cut body. */
static int body_file(const sqlq_received *d, sqlq_error *err)
{
    int fd = memfd_create("sqlq-message-body", MFD_CLOEXEC);
    if (fd < 0) {
        sqlq_error_set(err, SQLQ_E_IO, true, "memfd_create: %s", strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < d->body_len) {
        ssize_t n = write(fd, d->body + done, d->body_len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            sqlq_error_set(err, SQLQ_E_IO, true, "writing the message body: %s",
                           n < 0 ? strerror(errno) : "short write");
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        sqlq_error_set(err, SQLQ_E_IO, true, "lseek: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Everything the child needs, prepared before vfork: the child only makes system calls. */
typedef struct exec_plan {
    const char *path;
    char *const *argv;
    char *const *envp;
    int stdin_fd, stderr_fd;
    pid_t parent;
    unsigned int max_fd;
} exec_plan;

/* In the vforked child: its own process group, SIGKILL when the spawning thread ends (the
 * worker threads live as long as the consumer), stdin/stdout/stderr and nothing else, default
 * signal handling, then exec. Only async-signal-safe calls. */
static _Noreturn void child_exec(const exec_plan *p)
{
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != p->parent)
        _exit(127); /* the consumer is already gone */
    if (dup2(p->stdin_fd, 0) < 0 || dup2(p->stderr_fd, 2) < 0)
        _exit(127);
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
        for (unsigned int fd = 3; fd < p->max_fd; fd++)
            close((int)fd);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(p->path, p->argv, p->envp);
    _exit(127);
}

static sqlq_result start_process(const exec_plan *plan, pid_t *out_pid, sqlq_error *err)
{
    /* No signal handler may run in the child before its dispositions are reset. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = vfork();
    if (pid == 0)
        child_exec(plan);
    int saved = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0)
        return sqlq_error_set(err, SQLQ_E_IO, true, "cannot start /bin/sh: %s", strerror(saved));
    *out_pid = pid;
    return SQLQ_OK;
}

static sqlq_result child_spawn(sqlq_handler_exec *h, const sqlq_received *d, child *ch,
                               sqlq_error *err)
{
    int in_fd = body_file(d, err);
    if (in_fd < 0)
        return SQLQ_E_IO;
    int errp[2];
    if (pipe2(errp, O_CLOEXEC) != 0) {
        close(in_fd);
        return sqlq_error_set(err, SQLQ_E_IO, true, "pipe: %s", strerror(errno));
    }
    child_env ce;
    sqlq_result r = env_build(&ce, d);
    struct rlimit rl;
    unsigned int max_fd = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < max_fd)
        max_fd = (unsigned int)rl.rlim_cur;
    char *argv[] = {(char *)"sh", (char *)"-c", h->command, NULL};
    exec_plan plan = {"/bin/sh", argv, r == SQLQ_OK ? ce.envp : NULL, in_fd, errp[1],
                      getpid(), max_fd};
    if (r == SQLQ_OK) {
        r = start_process(&plan, &ch->pid, err);
        env_free(&ce);
    } else {
        sqlq_error_set(err, r, true, "out of memory");
    }
    close(in_fd);
    close(errp[1]);
    if (r != SQLQ_OK) {
        close(errp[0]);
        return r;
    }
    ch->err_fd = errp[0];
    fcntl(ch->err_fd, F_SETFL, O_NONBLOCK);
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
    if (ch->err_fd < 0) {
        /* stderr closed but the process still runs: just wait. */
        poll(NULL, 0, ms);
    } else {
        struct pollfd p = {.fd = ch->err_fd, .events = POLLIN};
        if (poll(&p, 1, ms) > 0)
            pump_stderr(ch);
    }
    if (!ch->exited && waitpid(ch->pid, &ch->status, WNOHANG) == ch->pid)
        ch->exited = true;
}

static void child_close(child *ch)
{
    if (ch->err_fd >= 0)
        close(ch->err_fd);
    ch->err_fd = -1;
}

/* SIGTERM to the group, SIGKILL after the grace; always reaps. */
static void child_kill(sqlq_handler_exec *h, child *ch)
{
    kill(-ch->pid, SIGTERM);
    uint64_t until = sqlq_clock_mono_ms() + h->kill_grace_ms;
    while (!ch->exited && sqlq_clock_mono_ms() < until)
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

sqlq_result sqlq_handler_exec_run(void *ctx, const sqlq_received *d, sqlq_error *err)
{
    sqlq_handler_exec *h = ctx;
    child ch = {.err_fd = -1};
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
        uint64_t left = sqlq_received_remaining_ms(d);
        if (left == 0 || sqlq_received_cancelled(d)) {
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
    if (WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == SQLQ_HANDLER_EXEC_REJECT)
        return sqlq_error_set(err, SQLQ_E_REJECTED, false,
                              "command rejected the message (exit %d: poison now); stderr: %s",
                              SQLQ_HANDLER_EXEC_REJECT, tail);
    if (WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == SQLQ_HANDLER_EXEC_UNAVAILABLE)
        return sqlq_error_set(err, SQLQ_E_UNAVAILABLE, true,
                              "command says its target is unavailable (exit %d: held and retried, "
                              "not counted toward poison); stderr: %s",
                              SQLQ_HANDLER_EXEC_UNAVAILABLE, tail);
    if (WIFSIGNALED(ch.status))
        return sqlq_error_set(err, SQLQ_E_IO, false, "command killed by signal %d; stderr: %s",
                              WTERMSIG(ch.status), tail);
    return sqlq_error_set(err, SQLQ_E_IO, false, "command exited with status %d; stderr: %s",
                          WEXITSTATUS(ch.status), tail);
}
