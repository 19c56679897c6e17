/* The --exec handler with real processes: body on stdin (binary safe), metadata in the
 * environment (secrets left out), only the three standard descriptors, death with its consumer, the stderr tail as the failure reason, and on timeout or cancellation the whole
 * process group is killed (SIGTERM, then SIGKILL for one that ignores it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "handler_exec.h"
#include "testenv.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char dir[256];
static sqlq_clock clock_;
static atomic_int cancel_flag;

static uint64_t now_ms(void)
{
    return sqlq_clock_now_ms(&clock_);
}

static sqlq_received delivery(const char *body, size_t len, uint64_t timeout_ms)
{
    sqlq_received d = {.queue = "orders",
                       .message_id = "3f1c-42",
                       .body = body,
                       .body_len = len,
                       .text = "",
                       .dequeue_count = 3,
                       .insertion_time = 1714564800,
                       .deadline_ms = timeout_ms ? now_ms() + timeout_ms : 0,
                       .clock = &clock_,
                       .cancel = &cancel_flag};
    return d;
}

static sqlq_result run(const char *cmd, const sqlq_received *d, sqlq_error *err)
{
    sqlq_handler_exec *h = NULL;
    sqlq_error_clear(err);
    assert_int_equal(sqlq_handler_exec_create(cmd, 300, &h, err), SQLQ_OK);
    sqlq_result r = sqlq_handler_exec_run(h, d, err);
    sqlq_handler_exec_destroy(h);
    return r;
}

static char *slurp(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    return buf;
}

static void test_handler_exec_stdin_and_environment(void **state)
{
    (void)state;
    const char body[] = "line one\nbinary \0 zero\xff end";
    sqlq_received d = delivery(body, sizeof(body) - 1, 0);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cat > '%s/body' && env | grep '^SQLQ_' | sort > '%s/env'", dir,
             dir);
    sqlq_error err;
    assert_int_equal(run(cmd, &d, &err), SQLQ_OK);
    size_t n;
    char *got = slurp("body", &n);
    assert_int_equal(n, sizeof(body) - 1);
    assert_memory_equal(got, body, n);
    free(got);
    char *env = slurp("env", &n);
    assert_non_null(strstr(env, "SQLQ_DEQUEUE_COUNT=3\n"));
    assert_non_null(strstr(env, "SQLQ_INSERTION_TIME=2024-05-01T12:00:00Z\n"));
    assert_non_null(strstr(env, "SQLQ_MESSAGE_ID=3f1c-42\n"));
    assert_non_null(strstr(env, "SQLQ_QUEUE=orders\n"));
    free(env);
}

static void test_handler_exec_failure_reason_is_stderr_tail(void **state)
{
    (void)state;
    sqlq_received d = delivery("x", 1, 0);
    sqlq_error err;
    sqlq_result r =
        run("for i in 1 2 3 4 5 6 7; do echo \"problem $i\" >&2; done; exit 3", &d, &err);
    assert_int_equal(r, SQLQ_E_IO);
    assert_non_null(strstr(err.message, "exited with status 3"));
    assert_non_null(strstr(err.message, "problem 7"));
    assert_non_null(strstr(err.message, "problem 3"));
    assert_null(strstr(err.message, "problem 2")); /* the last five lines */
    assert_int_equal(run("kill -9 $$", &d, &err), SQLQ_E_IO);
    assert_non_null(strstr(err.message, "signal 9"));
}

static void test_handler_exec_ignores_unread_input(void **state)
{
    (void)state;
    size_t n = 256 * 1024; /* more than a pipe holds */
    char *big = malloc(n);
    memset(big, 'a', n);
    sqlq_received d = delivery(big, n, 10000);
    sqlq_error err;
    uint64_t t0 = now_ms();
    assert_int_equal(run("exit 0", &d, &err), SQLQ_OK);
    assert_true(now_ms() - t0 < 5000);
    free(big);
}

/* Running (a killed orphan may linger as a zombie until something reaps it: not alive). */
static bool alive(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static void test_handler_exec_timeout_kills_the_group(void **state)
{
    (void)state;
    sqlq_received d = delivery("", 0, 300);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > '%s/grandchild'; echo started >&2; wait", dir);
    sqlq_error err;
    uint64_t t0 = now_ms();
    assert_int_equal(run(cmd, &d, &err), SQLQ_E_TIMEOUT);
    uint64_t took = now_ms() - t0;
    assert_true(took >= 250 && took < 3000);
    assert_non_null(strstr(err.message, "timed out"));
    assert_non_null(strstr(err.message, "started"));
    size_t n;
    char *pid = slurp("grandchild", &n);
    pid_t g = (pid_t)strtol(pid, NULL, 10);
    free(pid);
    assert_true(g > 0);
    for (int i = 0; i < 100 && alive(g); i++)
        usleep(10000);
    assert_false(alive(g)); /* the background child went with the group */
}

static void test_handler_exec_sigkill_after_grace(void **state)
{
    (void)state;
    sqlq_received d = delivery("", 0, 200);
    sqlq_error err;
    uint64_t t0 = now_ms();
    assert_int_equal(run("trap '' TERM; sleep 30; sleep 30", &d, &err), SQLQ_E_TIMEOUT);
    uint64_t took = now_ms() - t0;
    assert_true(took >= 450 && took < 3000); /* 200 ms timeout + 300 ms grace */
}

static void *cancel_later(void *arg)
{
    (void)arg;
    usleep(200000);
    atomic_store(&cancel_flag, 1);
    return NULL;
}

static void test_handler_exec_cancel(void **state)
{
    (void)state;
    atomic_store(&cancel_flag, 0);
    sqlq_received d = delivery("", 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, NULL);
    sqlq_error err;
    uint64_t t0 = now_ms();
    assert_int_equal(run("sleep 30", &d, &err), SQLQ_E_TIMEOUT);
    pthread_join(t, NULL);
    assert_true(now_ms() - t0 < 3000);
    assert_non_null(strstr(err.message, "cancelled"));
    atomic_store(&cancel_flag, 0);
}


/* Descriptors the consumer holds (curl's sockets, pipes: none close-on-exec here on purpose)
 * never reach the handler: it has stdin, stdout and stderr only. */
static void test_handler_exec_only_standard_descriptors(void **state)
{
    (void)state;
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    int p[2];
    assert_true(sock >= 0);
    assert_int_equal(pipe(p), 0);
    sqlq_received d = delivery("x", 1, 5000);
    char cmd[1024];
    /* ls becomes the handler process itself; its 3 is the directory it reads */
    snprintf(cmd, sizeof(cmd), "exec ls /proc/self/fd > '%s/fds'", dir);
    sqlq_error err;
    assert_int_equal(run(cmd, &d, &err), SQLQ_OK);
    size_t n;
    char *fds = slurp("fds", &n);
    assert_string_equal(fds, "0\n1\n2\n3\n");
    free(fds);
    close(sock);
    close(p[0]);
    close(p[1]);
}

/* The handler's environment carries no storage or database secret. */
static void test_handler_exec_environment_without_secrets(void **state)
{
    (void)state;
    static const char *const secret[] = {"SQLQ_QUEUE_CONNECTION", "SQLQ_QUEUE_CONNECTION_FILE",
                                         "SQLQ_POISON_CONNECTION", "AzureWebJobsStorage",
                                         "AzureWebJobsStorage__queueServiceUri",
                                         "AZURE_CLIENT_SECRET", "SQLQ_SQL", "SQLQ_SQL_FILE"};
    for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
        setenv(secret[i], "s3cret-value", 1);
    setenv("SQLQ_KEEP_ME", "kept", 1);
    sqlq_received d = delivery("x", 1, 5000);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "env > '%s/env'", dir);
    sqlq_error err;
    assert_int_equal(run(cmd, &d, &err), SQLQ_OK);
    size_t n;
    char *env = slurp("env", &n);
    assert_null(strstr(env, "s3cret-value"));
    assert_non_null(strstr(env, "SQLQ_KEEP_ME=kept\n"));
    assert_non_null(strstr(env, "SQLQ_MESSAGE_ID=3f1c-42\n"));
    free(env);
    for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
        unsetenv(secret[i]);
    unsetenv("SQLQ_KEEP_ME");
    assert_false(sqlq_handler_exec_env_secret("SQLQ_QUEUE=x"));
    assert_false(sqlq_handler_exec_env_secret("MY_CONNECTION=x"));
    assert_true(sqlq_handler_exec_env_secret("SQLQ_X_CONNECTION_STRING=x"));
    assert_true(sqlq_handler_exec_env_secret("IDENTITY_HEADER=x"));
    assert_false(sqlq_handler_exec_env_secret("IDENTITY_ENDPOINT=http://x"));
    /* docs/consumer.md, docs/security.md: what a handler does receive of the identity */
    assert_false(sqlq_handler_exec_env_secret("AZURE_FEDERATED_TOKEN_FILE=/var/run/t"));
    assert_false(sqlq_handler_exec_env_secret("AZURE_CLIENT_ID=c1"));
    assert_false(sqlq_handler_exec_env_secret("AZURE_TENANT_ID=t1"));
    assert_false(sqlq_handler_exec_env_secret("AZURE_AUTHORITY_HOST=https://login.example/"));
    assert_true(sqlq_handler_exec_env_secret("AzureWebJobsStorage__accountName=acct"));
}

/* A handler dies with the consumer: kill -9 the process that runs it, and the handler (which
 * would sleep 30 s) is gone at once. */
static void test_handler_exec_dies_with_the_consumer(void **state)
{
    (void)state;
    char pidfile[300], cmd[1200];
    snprintf(pidfile, sizeof(pidfile), "%s/handler.pid", dir);
    unlink(pidfile);
    snprintf(cmd, sizeof(cmd), "echo $$ > '%s.tmp' && mv '%s.tmp' '%s' && exec sleep 30",
             pidfile, pidfile, pidfile);
    pid_t consumer = fork();
    assert_true(consumer >= 0);
    if (consumer == 0) {
        sqlq_received d = delivery("", 0, 0);
        sqlq_error err;
        sqlq_handler_exec *h = NULL;
        if (sqlq_handler_exec_create(cmd, 300, &h, &err) == SQLQ_OK)
            _exit(sqlq_handler_exec_run(h, &d, &err) == SQLQ_OK ? 0 : 1);
        _exit(2);
    }
    pid_t handler = 0;
    for (int i = 0; i < 300 && handler <= 0; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            int v = 0;
            if (fscanf(f, "%d", &v) == 1)
                handler = (pid_t)v;
            fclose(f);
        }
        if (handler <= 0)
            usleep(10000);
    }
    assert_true(handler > 0);
    assert_true(alive(handler));
    kill(consumer, SIGKILL);
    waitpid(consumer, NULL, 0);
    for (int i = 0; i < 200 && alive(handler); i++)
        usleep(10000);
    bool survived = alive(handler);
    if (survived)
        kill(handler, SIGKILL);
    assert_false(survived);
}

int main(void)
{
    clock_ = sqlq_clock_system(NULL);
    snprintf(dir, sizeof(dir), "/tmp/sqlq-exec-%d", (int)getpid());
    sqlq_test_sh("mkdir -p '%s'", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handler_exec_stdin_and_environment),
        cmocka_unit_test(test_handler_exec_failure_reason_is_stderr_tail),
        cmocka_unit_test(test_handler_exec_ignores_unread_input),
        cmocka_unit_test(test_handler_exec_timeout_kills_the_group),
        cmocka_unit_test(test_handler_exec_sigkill_after_grace),
        cmocka_unit_test(test_handler_exec_cancel),
        cmocka_unit_test(test_handler_exec_only_standard_descriptors),
        cmocka_unit_test(test_handler_exec_environment_without_secrets),
        cmocka_unit_test(test_handler_exec_dies_with_the_consumer),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    sqlq_test_sh("rm -rf '%s'", dir);
    return rc;
}
