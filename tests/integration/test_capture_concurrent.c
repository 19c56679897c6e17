/* Change capture through ODBC with writers that commit out of order and run concurrently, on
 * the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb): a transaction that commits
 * late is not skipped; concurrent writers and two instances lose nothing and deliver nothing
 * twice. The capture algorithm case by case: test_capture.c. */
#include "capture.h"
#include "capture_support.h"
#include "db.h"
#include "testdb.h"
#include "testenv.h"

// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- PostgreSQL: a transaction that commits late is not skipped ------------------------------ */

/* ---- a transaction that commits late is not skipped -------------------------------------- */

/* A writes the log and stays open while B, later, writes and commits. Where an open writer
 * holds later versions back (PostgreSQL), nothing past A is read until A commits, then both in
 * version order; where the log is stamped at commit (MariaDB), B is read at once and A after its
 * commit with a larger version. Either way nothing is skipped. */
static void test_capture_late_commit(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    if (e.d->no_late_commit) {
        print_message("late commit on %s: %s\n", e.d->name, e.d->no_late_commit);
        capture_env_close(&e);
        skip();
    }
    bool holds_back = e.d->open_writer_holds_back;
    sqlq_test_db_exec(e.db, "CREATE TABLE lc (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "lc");
    sqlq_capture *cap = capture_open(e.db, "lc", "a", 60, 100);
    sqlq_db *ta = capture_connect(e.conn);
    sqlq_db *tb = capture_connect(e.conn);
    SQLQ_TEST_OK(sqlq_db_begin(ta, err));
    sqlq_test_db_exec(ta,
                      "INSERT INTO lc VALUES (1, 'from A')"); /* A wrote the log and stays open */
    SQLQ_TEST_OK(sqlq_db_begin(tb, err));
    sqlq_test_db_exec(tb, "INSERT INTO lc VALUES (2, 'from B')"); /* B's version is larger */
    SQLQ_TEST_OK(sqlq_db_commit(tb, err));
    sqlq_change_batch b;
    capture_poll_now(cap, &b);
    int64_t read_before = 0; /* the largest version read while A was open */
    if (holds_back) {
        /* B committed, but A (older version) still runs: nothing past A is read */
        assert_int_equal(b.count, 0);
        sqlq_change_batch_free(&b);
        assert_int_equal(capture_advance(cap), 0);
    } else {
        assert_int_equal(b.count, 1); /* B, at once; A's change is not stamped yet */
        assert_int_equal(capture_key_int(&b.items[0], "id"), 2);
        read_before = b.items[0].version;
        assert_int_equal(capture_release(cap, &b), 0);
        sqlq_change_batch_free(&b);
        assert_true(capture_advance(cap) >= read_before);
    }
    SQLQ_TEST_OK(sqlq_db_commit(ta, err));
    capture_poll(cap, &b);
    if (holds_back) {
        assert_int_equal(b.count, 2);
        assert_int_equal(capture_key_int(&b.items[0], "id"), 1); /* A's version is older */
        assert_int_equal(capture_key_int(&b.items[1], "id"), 2);
    } else {
        assert_int_equal(b.count, 1);
        assert_int_equal(capture_key_int(&b.items[0], "id"), 1);
        assert_true(b.items[0].version > read_before); /* past what the sync version passed */
    }
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    capture_advance(cap);

    /* and the other order: B commits first and is read, released, advanced past; then A commits */
    SQLQ_TEST_OK(sqlq_db_begin(ta, err));
    sqlq_test_db_exec(ta, "INSERT INTO lc VALUES (3, 'from A')");
    SQLQ_TEST_OK(sqlq_db_begin(tb, err));
    sqlq_test_db_exec(tb, "INSERT INTO lc VALUES (4, 'from B')");
    SQLQ_TEST_OK(sqlq_db_commit(tb, err));
    sqlq_db *other = capture_connect(e.conn);
    sqlq_test_db_exec(other, "INSERT INTO lc VALUES (5, 'autocommit')");
    capture_poll_now(cap, &b);
    if (holds_back) {
        assert_int_equal(b.count, 0); /* A holds the horizon */
    } else {
        assert_int_equal(b.count, 2); /* B and the autocommit, not A */
        for (size_t i = 0; i < b.count; i++) {
            assert_int_not_equal(capture_key_int(&b.items[i], "id"), 3);
            if (b.items[i].version > read_before)
                read_before = b.items[i].version;
        }
        assert_int_equal(capture_release(cap, &b), 0);
    }
    sqlq_change_batch_free(&b);
    capture_advance(cap);
    SQLQ_TEST_OK(sqlq_db_commit(ta, err));
    capture_poll(cap, &b);
    assert_int_equal(b.count, holds_back ? 3 : 1);
    assert_int_equal(capture_key_int(&b.items[0], "id"), 3);
    if (!holds_back)
        assert_true(b.items[0].version > read_before);
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    capture_advance(cap);
    assert_int_equal(capture_pending(cap), 0);
    sqlq_db_close(other);
    sqlq_db_close(ta);
    sqlq_db_close(tb);
    sqlq_capture_close(cap);
    capture_env_close(&e);
}

/* ---- concurrent writers and two instances: nothing lost, nothing delivered twice ----------- */

#define CC_KEYS 100
#define CC_TXNS 150

typedef struct cc_shared {
    const char *conn;
    const char *upsert_tail;
    pthread_mutex_t mu;
    int writers_running;
    bool touched[CC_KEYS];
    json_t *delivered; /* array of {"id", "version", "op", "v"} */
    int errors;
    int lost; /* releases that found a change another instance had re-leased */
} cc_shared;

static void *cc_writer(void *arg)
{
    cc_shared *sh = arg;
    sqlq_db *db = capture_connect(sh->conn);
    unsigned seed = (unsigned)(uintptr_t)&seed ^ (unsigned)getpid();
    for (int t = 0; t < CC_TXNS; t++) {
        sqlq_error err;
        sqlq_error_clear(&err);
        int touched[3], n = 1 + (int)(rand_r(&seed) % 3);
        sqlq_result r = sqlq_db_begin(db, &err);
        for (int i = 0; r == SQLQ_OK && i < n; i++) {
            int id = (int)(rand_r(&seed) % CC_KEYS), dice = (int)(rand_r(&seed) % 10);
            char sql[200];
            if (dice < 7)
                snprintf(sql, sizeof(sql), "INSERT INTO cc VALUES (%d, %d)%s", id, t * 10 + i,
                         sh->upsert_tail);
            else
                snprintf(sql, sizeof(sql), "DELETE FROM cc WHERE id = %d", id);
            long long affected = 0;
            r = sqlq_db_exec(db, sql, NULL, 0, &affected, &err);
            touched[i] = affected > 0 ? id : -1; /* deleting a missing row changes nothing */
            usleep((useconds_t)(rand_r(&seed) % 3000)); /* overlap with the other writer */
        }
        if (r == SQLQ_OK)
            r = sqlq_db_commit(db, &err);
        if (r != SQLQ_OK) {
            sqlq_db_rollback(db); /* deadlock or busy between the writers: not committed */
            continue;
        }
        pthread_mutex_lock(&sh->mu);
        for (int i = 0; i < n; i++)
            if (touched[i] >= 0)
                sh->touched[touched[i]] = true;
        pthread_mutex_unlock(&sh->mu);
        usleep((useconds_t)(rand_r(&seed) % 4000)); /* let the consumers in between */
    }
    sqlq_db_close(db);
    pthread_mutex_lock(&sh->mu);
    sh->writers_running--;
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

static void *cc_consumer(void *arg)
{
    cc_shared *sh = arg;
    sqlq_db *db = capture_connect(sh->conn);
    char instance[32];
    snprintf(instance, sizeof(instance), "cc-%p", (void *)&instance);
    sqlq_capture *cap = capture_open(db, "cc", instance, 60, 10);
    int empty_after_writers = 0;
    while (empty_after_writers < 3) {
        pthread_mutex_lock(&sh->mu);
        bool writing = sh->writers_running > 0;
        pthread_mutex_unlock(&sh->mu);
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_change_batch b;
        size_t lost = 0;
        int64_t v = 0;
        if (sqlq_capture_poll(cap, &b, &err) != SQLQ_OK ||
            sqlq_capture_release(cap, b.items, b.count, &lost, &err) != SQLQ_OK ||
            sqlq_capture_advance(cap, &v, &err) != SQLQ_OK) {
            pthread_mutex_lock(&sh->mu);
            if (!err.transient) {
                fprintf(stderr, "consumer: %s\n", err.message);
                sh->errors++;
            }
            pthread_mutex_unlock(&sh->mu);
            sqlq_change_batch_free(&b);
            usleep(20000);
            continue;
        }
        pthread_mutex_lock(&sh->mu);
        if (lost > 0) {
            fprintf(stderr, "consumer %s: %zu of %zu changes released were not its own\n",
                    instance, lost, b.count);
            sh->lost++;
        }
        for (size_t i = 0; i < b.count; i++) {
            json_t *row = b.items[i].row;
            json_array_append_new(sh->delivered,
                                  json_pack("{s:O, s:I, s:i, s:O}", "id",
                                            json_object_get(b.items[i].key, "id"), "version",
                                            (json_int_t)b.items[i].version, "op", b.items[i].op,
                                            "v", row ? json_object_get(row, "v") : json_null()));
        }
        pthread_mutex_unlock(&sh->mu);
        empty_after_writers = b.count == 0 && !writing ? empty_after_writers + 1 : 0;
        sqlq_change_batch_free(&b);
        if (empty_after_writers)
            usleep(50000);
    }
    sqlq_capture_close(cap);
    sqlq_db_close(db);
    return NULL;
}

static void test_capture_concurrent(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    sqlq_test_db_exec(e.db, "CREATE TABLE cc (id integer PRIMARY KEY, v integer)");
    sqlq_test_change_log_install(e.db, "cc");
    cc_shared sh = {.conn = e.conn, .upsert_tail = e.d->upsert_tail, .writers_running = 2,
                    .delivered = json_array()};
    pthread_mutex_init(&sh.mu, NULL);
    pthread_t w[2], c[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&c[i], NULL, cc_consumer, &sh), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&w[i], NULL, cc_writer, &sh), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i], NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(c[i], NULL);
    assert_int_equal(sh.errors, 0);
    if (sh.lost != 0)
        fail_msg("%d releases found changes the other instance had re-leased", sh.lost);
    /* latest delivered change per key, and no (key, version) twice */
    json_t *latest = json_object(), *seen = json_object();
    size_t i;
    json_t *d;
    json_array_foreach(sh.delivered, i, d) {
        char k[64], kv[96];
        snprintf(k, sizeof(k), "%lld", (long long)json_integer_value(json_object_get(d, "id")));
        snprintf(kv, sizeof(kv), "%s@%lld", k, (long long)json_integer_value(json_object_get(d, "version")));
        if (json_object_get(seen, kv))
            fail_msg("change %s delivered twice", kv);
        json_object_set_new(seen, kv, json_true());
        json_t *prev = json_object_get(latest, k);
        if (!prev || json_integer_value(json_object_get(prev, "version")) <=
                         json_integer_value(json_object_get(d, "version")))
            json_object_set(latest, k, d);
    }
    json_t *rows = NULL;
    SQLQ_TEST_OK(sqlq_db_query(e.db, "SELECT id, v FROM cc", NULL, 0, &rows, err));
    int checked = 0;
    for (int id = 0; id < CC_KEYS; id++) {
        if (!sh.touched[id])
            continue;
        char k[64];
        snprintf(k, sizeof(k), "%d", id);
        json_t *last = json_object_get(latest, k), *row = NULL, *r;
        json_array_foreach(rows, i, r)
            if (json_integer_value(json_object_get(r, "id")) == id)
                row = r;
        if (!last)
            fail_msg("key %d changed but nothing was delivered", id);
        int op = (int)json_integer_value(json_object_get(last, "op"));
        if (!row && op != SQLQ_OP_DELETE)
            fail_msg("key %d is deleted, the latest delivery says op %d", id, op);
        if (row && !json_equal(json_object_get(row, "v"), json_object_get(last, "v")))
            fail_msg("key %d: table v=%lld, latest delivery v=%lld", id,
                     (long long)json_integer_value(json_object_get(row, "v")),
                     (long long)json_integer_value(json_object_get(last, "v")));
        checked++;
    }
    fprintf(stderr, "concurrent %s: %zu deliveries, %d keys verified\n", e.d->name,
            json_array_size(sh.delivered), checked);
    assert_true(checked > CC_KEYS / 2);
    json_decref(rows);
    json_decref(latest);
    json_decref(seen);
    json_decref(sh.delivered);
    pthread_mutex_destroy(&sh.mu);
    capture_env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_late_commit),
        cmocka_unit_test(test_capture_concurrent),
    };
    return cmocka_run_group_tests_name(capture_db_under_test()->name, tests, NULL, NULL);
}
