/* Transient failures: a request retries while its private Azurite is down and succeeds once the
 * server is back on the same port (on-disk persistence keeps the queue); shutdown interrupts the
 * back-off; a spent budget ends in a transient network error. */
#include "log.h"
#include "queue_client.h"
#include "testenv.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    char dir[512];
    char port[16];
    sqlq_account *account;
    sqlq_queue_client *client;
    char queue[64];
} fixture;

static sqlq_stop stop_flag;
static sqlq_clock stoppable_clock;
static int retries_logged;

static void count_retries(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)ctx;
    (void)level;
    (void)fields;
    if (strcmp(event, "queue.retry") == 0)
        __atomic_add_fetch(&retries_logged, 1, __ATOMIC_SEQ_CST);
}

static int azurite(const char *cmd, fixture *f)
{
    return sqlq_test_sh("'%s/tests/support/azurite.sh' %s '%s' %s %s >/dev/null", sqlq_test_source_dir(),
                        cmd, f->dir, strcmp(cmd, "start") == 0 ? f->port : "",
                        strcmp(cmd, "start") == 0 ? "--disk" : "");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int make_client(fixture *f, const char *conn)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_account_parse(conn, &f->account, &err) != SQLQ_OK)
        return -1;
    stop_flag = 0;
    stoppable_clock = sqlq_clock_system(&stop_flag);
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.clock = &stoppable_clock;
    o.retry.initial_ms = 100;
    o.retry.max_delay_ms = 500;
    o.retry.max_total_ms = 60000;
    o.timeout_ms = 5000;
    if (sqlq_queue_client_create(f->account, &o, &f->client, &err) != SQLQ_OK)
        return -1;
    sqlq_test_unique_name("retry", f->queue, sizeof(f->queue));
    return 0;
}

static fixture *new_fixture(void)
{
    fixture *f = calloc(1, sizeof(*f));
    const char *env = getenv("SQLQ_TEST_ENV_DIR");
    snprintf(f->dir, sizeof(f->dir), "%s/queue-retry-%d", env ? env : "/tmp", (int)getpid());
    FILE *p = popen("\"$SQLQ_SOURCE_DIR/tests/support/free_port.sh\"", "r");
    if (!p || !fgets(f->port, sizeof(f->port), p))
        return NULL;
    pclose(p);
    f->port[strcspn(f->port, "\r\n")] = '\0';
    return f;
}

/* A private on-disk Azurite with a queue. */
static int setup(void **state)
{
    fixture *f = new_fixture();
    if (!f || azurite("start", f) != 0)
        return -1;
    char conn_path[600];
    snprintf(conn_path, sizeof(conn_path), "%s/conn", f->dir);
    FILE *c = fopen(conn_path, "r");
    char conn[1024] = "";
    if (!c || !fgets(conn, sizeof(conn), c))
        return -1;
    fclose(c);
    conn[strcspn(conn, "\r\n")] = '\0';
    if (make_client(f, conn) != 0)
        return -1;
    sqlq_error err;
    sqlq_error_clear(&err);
    bool created;
    if (sqlq_queue_create(f->client, f->queue, &created, &err) != SQLQ_OK)
        return -1;
    *state = f;
    return 0;
}

/* A free port with no server behind it: every request is refused (transient). */
static int setup_nothing_listening(void **state)
{
    fixture *f = new_fixture();
    char conn[1024];
    if (!f)
        return -1;
    snprintf(conn, sizeof(conn),
             "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=%s;"
             "QueueEndpoint=http://127.0.0.1:%s/devstoreaccount1",
             "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
             f->port);
    if (make_client(f, conn) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    sqlq_log_set_sink(NULL, NULL);
    sqlq_queue_client_destroy(f->client);
    sqlq_account_destroy(f->account);
    (void)azurite("stop", f);
    (void)sqlq_test_sh("rm -rf '%s'", f->dir);
    free(f);
    return 0;
}

typedef struct put_job {
    fixture *f;
    sqlq_result result;
    sqlq_error err;
    volatile int done;
} put_job;

static void *put_in_background(void *arg)
{
    put_job *j = arg;
    sqlq_error_clear(&j->err);
    j->result = sqlq_queue_put(j->f->client, j->f->queue, "during", 6, NULL, NULL, &j->err);
    __atomic_store_n(&j->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_retry_survives_a_server_restart(void **state)
{
    fixture *f = *state;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_put(f->client, f->queue, "before", 6, NULL, NULL, &err), SQLQ_OK);
    assert_int_equal(azurite("stop", f), 0);

    retries_logged = 0;
    sqlq_log_set_sink(count_retries, NULL);
    put_job job = {f, SQLQ_E_INVALID, {0}, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, put_in_background, &job), 0);
    usleep(800 * 1000);
    assert_int_equal(__atomic_load_n(&job.done, __ATOMIC_SEQ_CST), 0); /* still retrying */
    assert_true(__atomic_load_n(&retries_logged, __ATOMIC_SEQ_CST) >= 2);
    assert_int_equal(azurite("start", f), 0); /* same port, same data directory */
    pthread_join(t, NULL);
    sqlq_log_set_sink(NULL, NULL);
    if (job.result != SQLQ_OK)
        fail_msg("put after restart: %s", job.err.message);

    sqlq_message_list l;
    assert_int_equal(sqlq_queue_peek(f->client, f->queue, 32, &l, &err), SQLQ_OK);
    assert_int_equal(l.count, 2);
    assert_string_equal(l.items[0].text, "YmVmb3Jl"); /* before */
    assert_string_equal(l.items[1].text, "ZHVyaW5n"); /* during */
    sqlq_message_list_free(&l);
}

static void *raise_stop_later(void *arg)
{
    (void)arg;
    usleep(400 * 1000);
    stop_flag = 1;
    return NULL;
}

static void test_retry_shutdown_interrupts_backoff(void **state)
{
    fixture *f = *state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, raise_stop_later, NULL), 0);
    double t0 = now_s();
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_put(f->client, f->queue, "x", 1, NULL, NULL, &err), SQLQ_E_CANCELLED);
    assert_true(now_s() - t0 < 2.0);
    pthread_join(t, NULL);

    /* put_many: every unfinished item is marked cancelled. */
    sqlq_put_item items[8];
    for (int i = 0; i < 8; i++) {
        items[i].body = "y";
        items[i].len = 1;
        items[i].result = SQLQ_OK;
    }
    assert_int_equal(sqlq_queue_put_many(f->client, f->queue, items, 8, 4, NULL), SQLQ_E_CANCELLED);
    for (int i = 0; i < 8; i++)
        assert_int_equal(items[i].result, SQLQ_E_CANCELLED);
    stop_flag = 0;
}

static void test_retry_budget_spent_is_a_transient_network_error(void **state)
{
    fixture *f = *state;
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.retry.initial_ms = 50;
    o.retry.max_total_ms = 600;
    sqlq_queue_client *c = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_queue_client_create(f->account, &o, &c, &err), SQLQ_OK);
    double t0 = now_s();
    assert_int_equal(sqlq_queue_put(c, f->queue, "x", 1, NULL, NULL, &err), SQLQ_E_NETWORK);
    double took = now_s() - t0;
    assert_true(took >= 0.5 && took < 3.0);
    assert_true(err.transient);
    assert_int_equal(err.http_status, 0);
    assert_non_null(strstr(err.message, "gave up after"));
    assert_non_null(strstr(err.message, "no response from http://127.0.0.1:"));
    sqlq_queue_client_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_retry_survives_a_server_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_shutdown_interrupts_backoff,
                                        setup_nothing_listening, teardown),
        cmocka_unit_test_setup_teardown(test_retry_budget_spent_is_a_transient_network_error,
                                        setup_nothing_listening, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
