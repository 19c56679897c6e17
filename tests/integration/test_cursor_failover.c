/* Two cursor pollers (separate processes, tests/integration/cursor_poller.c) on one table,
 * publishing to Azurite, on the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb):
 *  - one works, the other stands by; kill -9 the active one: the standby takes over after the
 *    lease and every row arrives;
 *  - SIGSTOP the active one past its lease while it holds a batch, let the standby take over and
 *    commit, SIGCONT: the stale commit is rejected (lease_lost) and the checkpoint stays. */
#include "bridge_support.h"
#include "db.h"
#include "log.h"
#include "testdb.h"
#include "testenv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct child {
    pid_t pid;
    int fd;
    char name[16];
    char out[262144]; /* everything it printed */
    size_t len;
} child;

static child A, B; /* static: teardown kills what a failed test left running */

static void child_start(child *c, const char *name, const char *db, const char *queue,
                        const char *instance, const char *lease_s, const char *batch,
                        const char *hold_ms)
{
    const char *poller = getenv("SQLQ_CURSOR_POLLER");
    if (!poller)
        fail_msg("SQLQ_CURSOR_POLLER is not set (run through ctest)");
    char *qconn = sqlq_test_azurite_conn();
    int p[2];
    assert_int_equal(pipe(p), 0);
    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(poller, poller, db, qconn, queue, "t", "updated_at", instance, lease_s, batch, hold_ms,
              (char *)NULL);
        _exit(127);
    }
    free(qconn);
    close(p[1]);
    c->fd = p[0];
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
}

/* Read what is available, waiting up to wait_ms for something. */
static void child_read(child *c, int wait_ms)
{
    struct pollfd pfd = {c->fd, POLLIN, 0};
    if (poll(&pfd, 1, wait_ms) <= 0)
        return;
    for (;;) {
        if (c->len + 1 >= sizeof(c->out))
            return;
        ssize_t n = read(c->fd, c->out + c->len, sizeof(c->out) - c->len - 1);
        if (n <= 0)
            return;
        c->len += (size_t)n;
        c->out[c->len] = '\0';
    }
}

static size_t count_of(const child *c, const char *needle)
{
    size_t n = 0;
    for (const char *p = c->out; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void wait_for(child *c, const char *needle, size_t times, int timeout_ms)
{
    uint64_t end = (uint64_t)sqlq_clock_wall_ms() + (uint64_t)timeout_ms;
    while (count_of(c, needle) < times && (uint64_t)sqlq_clock_wall_ms() < end)
        child_read(c, 50);
    if (count_of(c, needle) < times)
        fail_msg("%s did not print '%s' x%zu within %d ms; it printed:\n%s", c->name, needle, times,
                 timeout_ms, c->out);
}

static void child_stop(child *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGCONT);
        kill(c->pid, SIGTERM);
        if (bt_wait(c->pid, 10000) != 0)
            fprintf(stderr, "%s did not exit cleanly; output:\n%s\n", c->name, c->out);
        c->pid = 0;
    }
    if (c->fd > 0)
        close(c->fd);
    c->fd = 0;
}

static int teardown(void **state)
{
    (void)state;
    child *all[] = {&A, &B};
    for (size_t i = 0; i < 2; i++) {
        if (all[i]->pid > 0) {
            kill(all[i]->pid, SIGKILL);
            waitpid(all[i]->pid, NULL, 0);
            all[i]->pid = 0;
        }
        if (all[i]->fd > 0)
            close(all[i]->fd);
        all[i]->fd = 0;
    }
    return 0;
}

/* The NOT NULL timestamp type of each database. */
typedef struct database {
    const char *name;
    const char *ts_type;
} database;

static const database databases[] = {
    {"sqlite", "TIMESTAMP"},
    {"postgres", "timestamptz"},
    {"mariadb", "datetime(6)"},
};

/* Table t: ids 1..n, timestamps in tie groups of 10 rows (UTC: every session's time zone). */
static void make_table(const char *conn, int n)
{
    const database *d = SQLQ_TEST_DATABASE_ENTRY(databases);
    sqlq_db *db = bt_db(conn);
    sqlq_test_db_execf(db, "CREATE TABLE t (id integer PRIMARY KEY, name varchar(50) NOT NULL, "
                           "updated_at %s NOT NULL)",
                       d->ts_type);
    SQLQ_TEST_OK(sqlq_db_begin(db, err));
    for (int i = 1; i <= n; i++)
        sqlq_test_db_execf(db, "INSERT INTO t VALUES (%d, 'n%d', '2024-01-01 00:%02d:%02d')", i, i,
                           i / 10 / 60, i / 10 % 60);
    SQLQ_TEST_OK(sqlq_db_commit(db, err));
    sqlq_db_close(db);
}

static void make_queue(bt_queue *q, char *name, size_t size)
{
    bt_queue_open(q, NULL);
    sqlq_test_unique_name("cursor-failover", name, size);
    sqlq_error err;
    sqlq_error_clear(&err);
    bool created = false;
    if (sqlq_queue_create(q->client, name, &created, &err) != SQLQ_OK)
        fail_msg("create queue: %s", err.message);
}

/* Every id 1..n arrived at least once; returns how many messages came. */
static size_t expect_all_ids(bt_queue *q, const char *queue, int n)
{
    json_t *drained = bt_drain(q, queue, 1500, 60000);
    json_t *changes = bt_flatten(drained); /* holds its own references */
    json_decref(drained);
    char *seen = calloc((size_t)n + 1, 1);
    size_t i;
    json_t *c;
    json_array_foreach(changes, i, c)
    {
        json_int_t id = json_integer_value(json_object_get(json_object_get(c, "key"), "id"));
        assert_string_equal(json_string_value(json_object_get(c, "op")), "update");
        if (id >= 1 && id <= n)
            seen[id] = 1;
    }
    for (int id = 1; id <= n; id++)
        if (!seen[id])
            fail_msg("row %d never arrived (%zu messages)", id, json_array_size(changes));
    size_t count = json_array_size(changes);
    free(seen);
    json_decref(changes);
    return count;
}

static json_t *read_state(const char *conn)
{
    const sqlq_test_sql *d = sqlq_test_sql_under_test();
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT batch_id, cursor_value, key_json, lease_token FROM "
             "%scursor_state WHERE table_name LIKE '%%t'%s", d->sqlq, d->this_database);
    sqlq_db *db = bt_db(conn);
    json_t *rows = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_query(db, sql, NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("state: %s", err.message);
    sqlq_db_close(db);
    assert_int_equal(json_array_size(rows), 1);
    json_t *row = json_incref(json_array_get(rows, 0));
    json_decref(rows);
    return row;
}

static void kill9_takeover(const char *conn)
{
    const int n = 300;
    make_table(conn, n);
    bt_queue q;
    char queue[64];
    make_queue(&q, queue, sizeof(queue));
    child *a = &A, *b = &B;
    child_start(a, "poller-a", conn, queue, "inst-a", "2", "25", "150");
    wait_for(a, "committed", 2, 20000);
    child_start(b, "poller-b", conn, queue, "inst-b", "2", "25", "0");
    wait_for(b, "standby", 1, 10000);
    child_read(b, 500);
    assert_int_equal(count_of(b, "polled"), 0); /* one works, the other stands by */
    assert_int_equal(kill(a->pid, SIGKILL), 0);
    waitpid(a->pid, NULL, 0);
    a->pid = 0;
    uint64_t killed = (uint64_t)sqlq_clock_wall_ms();
    wait_for(b, "leader", 1, 8000);
    uint64_t took_over = (uint64_t)sqlq_clock_wall_ms() - killed;
    wait_for(b, "idle", 1, 30000);
    child_stop(b);
    child_stop(a);
    size_t messages = expect_all_ids(&q, queue, n);
    fprintf(stderr, "kill -9: standby took over after %llu ms; %zu messages for %d rows\n",
            (unsigned long long)took_over, messages, n);
    json_t *st = read_state(conn);
    assert_int_equal(json_integer_value(json_object_get(st, "lease_token")), 2);
    json_decref(st);
    bt_queue_drop(&q, queue);
    bt_queue_close(&q);
}

static void sigstop_stale_commit(const char *conn)
{
    const int n = 100;
    make_table(conn, n);
    bt_queue q;
    char queue[64];
    make_queue(&q, queue, sizeof(queue));
    child *a = &A, *b = &B;
    child_start(a, "poller-a", conn, queue, "inst-a", "1", "10", "600");
    wait_for(a, "polled", 1, 20000);
    assert_int_equal(kill(a->pid, SIGSTOP), 0); /* holding its first batch, uncommitted */
    child_start(b, "poller-b", conn, queue, "inst-b", "1", "10", "0");
    wait_for(b, "leader", 1, 8000);
    wait_for(b, "idle", 1, 30000);
    json_t *before = read_state(conn);
    assert_int_equal(json_integer_value(json_object_get(before, "batch_id")), n / 10);
    assert_int_equal(kill(a->pid, SIGCONT), 0);
    wait_for(a, "lease_lost", 1, 8000);
    assert_int_equal(count_of(a, "committed"), 0);
    json_t *after = read_state(conn);
    if (!json_equal(before, after))
        fail_msg("checkpoint moved after the stale commit: %s -> %s", json_dumps(before, 0),
                 json_dumps(after, 0));
    child_stop(a);
    child_stop(b);
    expect_all_ids(&q, queue, n);
    json_decref(before);
    json_decref(after);
    bt_queue_drop(&q, queue);
    bt_queue_close(&q);
}

static void test_cursor_failover_kill9(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(sqlq_test_database(), "cur_kill9");
    kill9_takeover(conn);
    free(conn);
}

static void test_cursor_failover_sigstop(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(sqlq_test_database(), "cur_stop");
    sigstop_stale_commit(conn);
    free(conn);
}

int main(void)
{
    sqlq_log_set_level(SQLQ_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cursor_failover_kill9, teardown),
        cmocka_unit_test_teardown(test_cursor_failover_sigstop, teardown),
    };
    return cmocka_run_group_tests_name(sqlq_test_database(), tests, NULL, NULL);
}
