/* bridge_support: what the bridge integration tests share: run the real sqlq binary, set up
 * tables through the change log, and read every message back from Azurite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_support.h"

#include "capture.h"
#include "change_log.h"
#include "change_source.h"
#include "clock.h"
#include "codec.h"
#include "table.h"
#include "testdb.h"
#include "testenv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void bt_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void bt_queue_open(bt_queue *q, const char *conn)
{
    memset(q, 0, sizeof(*q));
    q->conn = conn ? strdup(conn) : sqlq_test_azurite_conn();
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_account_parse(q->conn, &q->account, &err) != SQLQ_OK)
        fail_msg("account: %s", err.message);
    sqlq_queue_options o;
    sqlq_queue_options_default(&o);
    o.timeout_ms = 10000;
    if (sqlq_queue_client_create(q->account, &o, &q->client, &err) != SQLQ_OK)
        fail_msg("queue client: %s", err.message);
}

void bt_queue_close(bt_queue *q)
{
    sqlq_queue_client_destroy(q->client);
    sqlq_account_destroy(q->account);
    free(q->conn);
    memset(q, 0, sizeof(*q));
}

void bt_queue_drop(bt_queue *q, const char *queue)
{
    char poison[80];
    snprintf(poison, sizeof(poison), "%s-poison", queue);
    const char *names[] = {queue, poison};
    for (int i = 0; i < 2; i++) {
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_result r = sqlq_queue_delete(q->client, names[i], &err);
        (void)r; /* NOT_FOUND is fine: the poison queue is created only when needed */
    }
}

void bt_log_path(const char *name, char *out, size_t size)
{
    const char *dir = getenv("SQLQ_TEST_ENV_DIR");
    char unique[128];
    sqlq_test_unique_name(name, unique, sizeof(unique));
    sqlq_test_sh("mkdir -p '%s/bridge-logs'", dir && *dir ? dir : "testenv");
    snprintf(out, size, "%s/bridge-logs/%s.log", dir && *dir ? dir : "testenv", unique);
}

pid_t bt_bridge_start(const char *queue_conn, const char *log_path, const char *const *args)
{
    const char *argv[64];
    size_t n = 0;
    argv[n++] = sqlq_test_bin();
    argv[n++] = "bridge";
    for (size_t i = 0; args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A failed assertion leaves the test without killing its bridges: they go with it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setenv("SQLQ_QUEUE_CONNECTION", queue_conn, 1);
        execv(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    return pid;
}

int bt_wait(pid_t pid, int timeout_ms)
{
    for (int waited = 0;; waited += 20) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0)
            return -2;
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        bt_sleep_ms(20);
    }
}

void bt_print_log(const char *log_path)
{
    fprintf(stderr, "---- %s (last 60 lines) ----\n", log_path);
    fflush(stderr);
    sqlq_test_sh("tail -n 60 '%s' >&2", log_path);
}

bool bt_log_has(const char *log_path, const char *text)
{
    FILE *f = fopen(log_path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
    if (s && n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n)
        s[0] = '\0';
    fclose(f);
    bool found = s && strstr(s, text) != NULL;
    free(s);
    return found;
}

int bt_bridge_run(const char *queue_conn, const char *log_path, const char *const *args, int timeout_ms,
                  int expect)
{
    int code = bt_wait(bt_bridge_start(queue_conn, log_path, args), timeout_ms);
    if (code != expect)
        bt_print_log(log_path);
    return code;
}

bt_case *bt_case_new(char *conn, const char *name)
{
    bt_case *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    bt_queue_open(&c->q, NULL);
    c->conn = conn;
    char prefix[48];
    snprintf(prefix, sizeof(prefix), "br-%s", name);
    sqlq_test_unique_name(prefix, c->queue, sizeof(c->queue));
    snprintf(prefix, sizeof(prefix), "bridge-%s", name);
    bt_log_path(prefix, c->log, sizeof(c->log));
    return c;
}

void bt_drop_slots(const char *conn)
{
    if (strcmp(sqlq_test_source(), "logical") != 0)
        return;
    sqlq_db *db = bt_db(conn);
    bt_exec(db, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE database = current_database() AND NOT active");
    sqlq_db_close(db);
}

void bt_case_free(bt_case *c)
{
    bt_drop_slots(c->conn);
    bt_queue_drop(&c->q, c->queue);
    bt_queue_close(&c->q);
    free(c->conn);
    free(c);
}

int bt_case_teardown(void **state)
{
    bt_case_free(*state);
    return 0;
}

void bt_case_run_once(bt_case *c, const char *table, const char *const *extra)
{
    const char *args[40] = {"--db", c->conn, "--table", table, "--queue", c->queue, "--once",
                            "--polling-interval-ms", "20", "--lease-s", "10"};
    size_t n = 11;
    for (size_t i = 0; extra && extra[i] && n < 38; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    assert_int_equal(bt_bridge_run(c->q.conn, c->log, args, 60000, 0), 0);
}

sqlq_db *bt_case_table(bt_case *c, const char *create, const char *table)
{
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, create);
    bt_setup(c->conn, table);
    return db;
}

void bt_case_expect_none(bt_case *c, const char *table, const char *const *extra)
{
    bt_case_run_once(c, table, extra);
    json_t *msgs = bt_drain(&c->q, c->queue, 300, 5000);
    assert_int_equal(json_array_size(msgs), 0);
    json_decref(msgs);
}

pid_t bt_case_start(bt_case *c, const char *table)
{
    const char *args[] = {"--db", c->conn, "--table", table, "--queue", c->queue, "--polling-interval-ms", "50",
                          "--lease-s", "10", NULL};
    return bt_bridge_start(c->q.conn, c->log, args);
}

void bt_bridge_stop(pid_t pid, const char *log_path)
{
    kill(pid, SIGTERM);
    int code = bt_wait(pid, 30000);
    if (code != 0)
        bt_print_log(log_path);
    assert_int_equal(code, 0);
}

sqlq_db *bt_db(const char *conn)
{
    return sqlq_test_db_open(conn);
}

void bt_exec(sqlq_db *db, const char *sql)
{
    sqlq_test_db_exec(db, sql);
}

/* `sqlq setup --source logical` of table for the bridge name "default": its publication and slot. */
static void bt_setup_logical(sqlq_db *db, const char *table)
{
    sqlq_capture_config cc;
    sqlq_capture_config_default(&cc);
    cc.table = table;
    cc.source = SQLQ_SOURCE_LOGICAL;
    sqlq_source_setup setup = {.cfg = &cc};
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_capture_install(db, &setup, &err);
    json_decref(setup.lines);
    if (r != SQLQ_OK)
        fail_msg("setup --source logical of %s: %s", table, err.message);
}

void bt_setup(const char *conn, const char *table)
{
    sqlq_db *db = bt_db(conn);
    if (strcmp(sqlq_test_source(), "logical") == 0) {
        bt_setup_logical(db, table);
        sqlq_db_close(db);
        return;
    }
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_table_name tn;
    sqlq_table *t = NULL;
    if (sqlq_table_name_parse(table, &tn, &err) != SQLQ_OK || sqlq_table_describe(db, &tn, &t, &err) != SQLQ_OK ||
        sqlq_change_log_install(db, t, &err) != SQLQ_OK)
        fail_msg("setup of %s: %s", table, err.message);
    sqlq_table_free(t);
    sqlq_db_close(db);
}

static json_t *decode(const sqlq_message *m)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_codec_decode(SQLQ_ENCODING_BASE64, m->text, m->text_len, &b, &err) != SQLQ_OK)
        fail_msg("message %s is not base64: %s", m->id, err.message);
    json_error_t jerr;
    json_t *j = json_loadb(b.data ? b.data : "", b.len, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("message %s is not JSON: %s: %.200s", m->id, jerr.text, b.data ? b.data : "");
    sqlq_buf_free(&b);
    return j;
}

json_t *bt_drain(bt_queue *q, const char *queue, int quiet_ms, int max_ms)
{
    json_t *all = json_array();
    uint64_t start = (uint64_t)sqlq_clock_wall_ms(), last = start;
    for (;;) {
        uint64_t now = (uint64_t)sqlq_clock_wall_ms();
        if (now - last > (uint64_t)quiet_ms || now - start > (uint64_t)max_ms)
            break;
        sqlq_message_list l = {0};
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_result r = sqlq_queue_get(q->client, queue, 32, 3600, &l, &err);
        if (r == SQLQ_E_NOT_FOUND) {
            bt_sleep_ms(100);
            continue;
        }
        if (r != SQLQ_OK)
            fail_msg("get %s: %s", queue, err.message);
        for (size_t i = 0; i < l.count; i++)
            json_array_append_new(all, decode(&l.items[i]));
        if (l.count > 0)
            last = (uint64_t)sqlq_clock_wall_ms();
        else
            bt_sleep_ms(100);
        sqlq_message_list_free(&l);
    }
    return all;
}

json_t *bt_receive(bt_queue *q, const char *queue, const char *log_path, size_t want)
{
    json_t *all = json_array();
    for (int waited = 0; waited < 30000 && json_array_size(all) < want; waited += 300) {
        json_t *more = bt_drain(q, queue, 300, 3000);
        json_array_extend(all, more);
        json_decref(more);
    }
    json_t *extra = bt_drain(q, queue, 500, 2000); /* nothing more than expected */
    json_array_extend(all, extra);
    json_decref(extra);
    if (json_array_size(all) != want) {
        bt_print_log(log_path);
        fail_msg("expected %zu messages, got %zu", want, json_array_size(all));
    }
    return all;
}

json_t *bt_flatten(json_t *messages)
{
    json_t *out = json_array();
    size_t i, j;
    json_t *m, *c;
    json_array_foreach(messages, i, m)
    {
        json_t *changes = json_object_get(m, "changes");
        if (json_is_array(changes))
            json_array_foreach(changes, j, c) json_array_append(out, c);
        else
            json_array_append(out, m);
    }
    return out;
}

json_t *bt_by_key(json_t *changes)
{
    json_t *idx = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(changes, i, c)
    {
        char *k = json_dumps(json_object_get(c, "key"), JSON_SORT_KEYS | JSON_COMPACT);
        assert_non_null(k);
        json_t *list = json_object_get(idx, k);
        if (!list) {
            list = json_array();
            json_object_set_new(idx, k, list);
        }
        json_array_append(list, c);
        free(k);
    }
    return idx;
}

json_t *bt_latest(json_t *changes)
{
    json_t *best = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(changes, i, c)
    {
        if (!best || json_integer_value(json_object_get(c, "version")) >
                         json_integer_value(json_object_get(best, "version")))
            best = c;
    }
    return best;
}

size_t bt_distinct_ids(json_t *changes)
{
    json_t *seen = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(changes, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        if (id)
            json_object_set_new(seen, id, json_true());
    }
    size_t n = json_object_size(seen);
    json_decref(seen);
    return n;
}

struct bt_writers {
    char *conn, *table;
    const char *upsert_v;
    int threads, nkeys, ops, pause_ms;
    pthread_t *tids;
    pthread_mutex_t mu;
    bool *touched;
    long committed;
    int finished;
    unsigned seq;
};

typedef struct writer_arg {
    bt_writers *w;
    unsigned seed;
} writer_arg;

static void *writer_main(void *p)
{
    writer_arg *a = p;
    bt_writers *w = a->w;
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_connect(w->conn, &db, &err) != SQLQ_OK) {
        fprintf(stderr, "writer: connect: %s\n", err.message);
        free(a);
        return NULL;
    }
    for (int i = 0; i < w->ops; i++) {
        int id = (int)(rand_r(&a->seed) % (unsigned)w->nkeys), dice = (int)(rand_r(&a->seed) % 100);
        pthread_mutex_lock(&w->mu);
        unsigned v = ++w->seq;
        pthread_mutex_unlock(&w->mu);
        char sql[256];
        if (dice < 60)
            snprintf(sql, sizeof(sql), "INSERT INTO %s (id, v) VALUES (%d, %u)%s", w->table, id, v,
                     w->upsert_v);
        else if (dice < 80)
            snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE id = %d", w->table, id);
        else
            snprintf(sql, sizeof(sql), "UPDATE %s SET v = %u WHERE id = %d", w->table, v, id);
        sqlq_error_clear(&err);
        long long rows = 0;
        if (sqlq_db_exec(db, sql, NULL, 0, &rows, &err) == SQLQ_OK) {
            pthread_mutex_lock(&w->mu);
            w->committed++;
            if (rows > 0)
                w->touched[id] = true;
            pthread_mutex_unlock(&w->mu);
        }
        if (w->pause_ms > 0)
            bt_sleep_ms(w->pause_ms);
    }
    sqlq_db_close(db);
    pthread_mutex_lock(&w->mu);
    w->finished++;
    pthread_mutex_unlock(&w->mu);
    free(a);
    return NULL;
}

bt_writers *bt_writers_start(const char *conn, const char *table, int threads, int nkeys, int ops_per_thread,
                             int pause_ms)
{
    bt_writers *w = calloc(1, sizeof(*w));
    w->conn = strdup(conn);
    w->table = strdup(table);
    w->upsert_v = sqlq_test_sql_under_test()->upsert_v;
    w->threads = threads;
    w->nkeys = nkeys;
    w->ops = ops_per_thread;
    w->pause_ms = pause_ms;
    w->tids = calloc((size_t)threads, sizeof(*w->tids));
    w->touched = calloc((size_t)nkeys, sizeof(bool));
    pthread_mutex_init(&w->mu, NULL);
    for (int i = 0; i < threads; i++) {
        writer_arg *a = malloc(sizeof(*a));
        a->w = w;
        a->seed = (unsigned)getpid() * 7919u + (unsigned)i * 104729u;
        assert_int_equal(pthread_create(&w->tids[i], NULL, writer_main, a), 0);
    }
    return w;
}

bool bt_writers_done(bt_writers *w)
{
    pthread_mutex_lock(&w->mu);
    bool done = w->finished == w->threads;
    pthread_mutex_unlock(&w->mu);
    return done;
}

long bt_writers_join(bt_writers *w)
{
    for (int i = 0; i < w->threads; i++)
        pthread_join(w->tids[i], NULL);
    w->threads = 0;
    return w->committed;
}

bool bt_writers_touched(const bt_writers *w, int id)
{
    return id >= 0 && id < w->nkeys && w->touched[id];
}

void bt_writers_free(bt_writers *w)
{
    if (!w)
        return;
    free(w->conn);
    free(w->table);
    free(w->tids);
    free(w->touched);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Whether the newest message of every written key matches the table; why says which does not. */
bool bt_final_state_reached(const char *conn, const char *table, const bt_writers *w, json_t *changes,
                            char *why, size_t why_size)
{
    sqlq_db *db = bt_db(conn);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT id, v FROM %s", table);
    json_t *rows = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_query(db, sql, NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("query: %s", err.message);
    json_t *now = json_object(); /* id → v */
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        char k[32];
        snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(r, "id")));
        json_object_set(now, k, json_object_get(r, "v"));
    }
    json_t *by = bt_by_key(changes);
    int checked = 0;
    why[0] = '\0';
    for (int id = 0; id < w->nkeys; id++) {
        if (!bt_writers_touched(w, id))
            continue;
        char canon[48], k[32];
        snprintf(canon, sizeof(canon), "{\"id\":%d}", id);
        snprintf(k, sizeof(k), "%d", id);
        json_t *latest = bt_latest(json_object_get(by, canon));
        if (!latest) {
            snprintf(why, why_size, "id %d was written but no message arrived", id);
            break;
        }
        json_t *v = json_object_get(now, k);
        const char *op = json_string_value(json_object_get(latest, "op"));
        if (!v) {
            if (strcmp(op, "delete") != 0) {
                snprintf(why, why_size, "id %d is deleted but the newest message says %s", id, op);
                break;
            }
        } else {
            json_t *mv = json_object_get(json_object_get(latest, "row"), "v");
            if (strcmp(op, "delete") == 0 || !json_equal(mv, v)) {
                snprintf(why, why_size, "id %d: table has v=%lld, newest message op=%s v=%lld", id,
                         (long long)json_integer_value(v), op, (long long)json_integer_value(mv));
                break;
            }
        }
        checked++;
    }
        if (!why[0])
        fprintf(stderr, "verified the final state of %d ids\n", checked);
    json_decref(by);
    json_decref(now);
    json_decref(rows);
    sqlq_db_close(db);
    return why[0] == '\0';
}

void bt_verify_final_state(const char *conn, const char *table, const bt_writers *w, json_t *changes)
{
    char why[256];
    if (!bt_final_state_reached(conn, table, w, changes, why, sizeof(why)))
        fail_msg("%s", why);
}

json_t *bt_drain_until_final(bt_queue *q, const char *queue, const char *conn, const char *table,
                             const bt_writers *w, int max_ms)
{
    json_t *all = json_array();
    uint64_t start = (uint64_t)sqlq_clock_wall_ms();
    char why[256];
    for (;;) {
        json_t *more = bt_drain(q, queue, 1500, max_ms);
        json_array_extend(all, more);
        json_decref(more);
        if (bt_final_state_reached(conn, table, w, all, why, sizeof(why)) ||
            (uint64_t)sqlq_clock_wall_ms() - start > (uint64_t)max_ms)
            return all;
        fprintf(stderr, "still waiting: %s\n", why);
    }
}
