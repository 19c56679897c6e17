/* Change capture on real SQLite and PostgreSQL through ODBC: change log install/drop, captured
 * operations, leases, fencing, advance, attempts, pending counts. */
#include "capture.h"
#include "catalog.h"
#include "change_log.h"
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

enum { SQLITE = 0, PG = 1 };

typedef struct env {
    int kind;
    char *conn;
    sqlq_db *db;
} env;

static sqlq_db *connect_db(const char *conn)
{
    sqlq_db *db = NULL;
    SQLQ_TEST_OK(sqlq_db_connect(conn, &db, err));
    return db;
}

static void env_open(env *e, int kind)
{
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    if (kind == SQLITE) {
        char path[1024];
        e->conn = sqlq_test_sqlite_db("capture", path, sizeof(path));
    } else {
        e->conn = sqlq_test_pg_create_db("capture");
    }
    e->db = connect_db(e->conn);
}

static void env_close(env *e)
{
    sqlq_db_close(e->db);
    free(e->conn);
}

static sqlq_capture *open_cap(sqlq_db *db, const char *table, const char *instance, int lease_s,
                              int batch)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = table;
    cfg.instance_id = instance;
    cfg.lease_s = lease_s;
    cfg.max_batch_size = batch;
    cfg.max_attempts = 5;
    sqlq_capture *cap = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(db, &cfg, &cap, err));
    return cap;
}

/* One poll, taking whatever is there (for checks that nothing is). */
static void poll_now(sqlq_capture *cap, sqlq_change_batch *b)
{
    SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
}

/* A poll that expects changes (waits up to 5 s for them: a concurrent writer of the same log,
 * such as the concurrent-writers test's, holds later versions back until it ends). */
static void poll(sqlq_capture *cap, sqlq_change_batch *b)
{
    for (int i = 0; i < 50; i++) {
        SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
        if (b->count > 0)
            return;
        sqlq_change_batch_free(b);
        usleep(100 * 1000);
    }
    SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
}

static size_t release(sqlq_capture *cap, const sqlq_change_batch *b)
{
    size_t lost = 99;
    SQLQ_TEST_OK(sqlq_capture_release(cap, b->items, b->count, &lost, err));
    return lost;
}

static int64_t advance(sqlq_capture *cap)
{
    int64_t v = -1;
    SQLQ_TEST_OK(sqlq_capture_advance(cap, &v, err));
    return v;
}

static long long pending(sqlq_capture *cap)
{
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    long long p = st.pending;
    sqlq_capture_status_free(&st);
    return p;
}

static long long key_int(const sqlq_change *c, const char *col)
{
    json_t *v = json_object_get(c->key, col);
    assert_true(json_is_integer(v));
    return (long long)json_integer_value(v);
}

static const char *row_str(const sqlq_change *c, const char *col)
{
    assert_non_null(c->row);
    return json_string_value(json_object_get(c->row, col));
}

/* ---- install, drop ----------------------------------------------------------------------- */

static long long sqlq_objects(env *e)
{
    if (e->kind == SQLITE)
        return sqlq_test_db_int(e->db,
                                "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlq%'");
    return sqlq_test_db_int(e->db,
                            "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'sqlq') + "
                            "(SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'sqlq%')");
}

static void run_install_drop(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(e.db, "CREATE TABLE orders (id integer PRIMARY KEY, item text)");
    sqlq_test_change_log_install(e.db, "orders");
    sqlq_test_change_log_install(e.db, "orders"); /* idempotent */
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    SQLQ_TEST_OK(sqlq_catalog_lookup(e.db, "orders", NULL, &t, &n, err));
    bool on = false;
    SQLQ_TEST_OK(sqlq_change_log_installed(e.db, t, &on, err));
    assert_true(on);
    sqlq_test_db_exec(e.db, "INSERT INTO orders VALUES (1, 'a')");
    const char *log = kind == SQLITE ? "SELECT count(*) FROM sqlq_log_orders"
                                     : "SELECT count(*) FROM sqlq.log_orders";
    assert_int_equal(sqlq_test_db_int(e.db, log), 1);
    sqlq_capture *cap = open_cap(e.db, "orders", "a", 60, 10);
    sqlq_capture_close(cap);
    size_t forgotten = 0;
    SQLQ_TEST_OK(sqlq_capture_forget(e.db, "orders", NULL, &forgotten, err));
    assert_int_equal(forgotten, 1);
    SQLQ_TEST_OK(sqlq_change_log_drop(e.db, t, NULL, err));
    SQLQ_TEST_OK(sqlq_change_log_installed(e.db, t, &on, err));
    assert_false(on);
    assert_int_equal(sqlq_objects(&e), 0);
    sqlq_test_db_exec(
        e.db, "INSERT INTO orders VALUES (2, 'b')"); /* the table works without the triggers */
    SQLQ_TEST_OK(sqlq_change_log_drop(e.db, t, NULL, err)); /* and dropping twice is fine */
    sqlq_table_free(t);
    env_close(&e);
}

static void test_capture_sqlite_install_drop(void **s) { (void)s; run_install_drop(SQLITE); }
static void test_capture_pg_install_drop(void **s) { (void)s; run_install_drop(PG); }

/* ---- operations ---------------------------------------------------------------------------- */

static void run_operations(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(e.db, "CREATE TABLE items (id integer PRIMARY KEY, name text, qty integer)");
    sqlq_test_change_log_install(e.db, "items");
    sqlq_capture *cap = open_cap(e.db, "items", "a", 60, 100);
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (1, 'one', 1)");
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (2, 'two', 2)");
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (3, 'three', 3)");
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 20 WHERE id = 2");
    sqlq_test_db_exec(e.db,
                      "UPDATE items SET qty = 21 WHERE id = 2"); /* several changes → one, latest */
    sqlq_test_db_exec(e.db, "DELETE FROM items WHERE id = 3");
    assert_int_equal(pending(cap), 3);
    sqlq_change_batch b;
    poll(cap, &b);
    assert_int_equal(b.count, 3);
    assert_false(b.full);
    /* order: versions; 1 (insert), then 2 (last update), then 3 (delete). op is what change
     * tracking says: 2 was created since the last delivery, so it is an insert whatever
     * followed; 3 was created and deleted in between: one delete (issue 11.5) */
    assert_int_equal(key_int(&b.items[0], "id"), 1);
    assert_int_equal(b.items[0].op, SQLQ_OP_INSERT);
    assert_string_equal(row_str(&b.items[0], "name"), "one");
    assert_int_equal(key_int(&b.items[1], "id"), 2);
    assert_int_equal(b.items[1].op, SQLQ_OP_INSERT);
    assert_int_equal(json_integer_value(json_object_get(b.items[1].row, "qty")), 21);
    assert_int_equal(key_int(&b.items[2], "id"), 3);
    assert_int_equal(b.items[2].op, SQLQ_OP_DELETE);
    assert_null(b.items[2].row);
    for (size_t i = 0; i < b.count; i++) {
        assert_int_equal(b.items[i].attempts, 1);
        assert_true(b.items[i].lease_token > 0);
    }
    assert_true(b.items[0].version < b.items[1].version || kind == PG);
    assert_int_equal(pending(cap), 3); /* leased, not yet delivered: still pending (issue 14.5) */
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    assert_true(advance(cap) > 0);
    poll_now(cap, &b);
    assert_int_equal(b.count, 0);
    sqlq_change_batch_free(&b);

    /* a key update: delete of the old key, insert of the new */
    sqlq_test_db_exec(e.db, "UPDATE items SET id = 10 WHERE id = 1");
    /* a row changed, then deleted before the poll: the log says delete */
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (4, 'four', 4)");
    sqlq_test_db_exec(e.db, "DELETE FROM items WHERE id = 4");
    poll(cap, &b);
    assert_int_equal(b.count, 3);
    int seen = 0;
    for (size_t i = 0; i < b.count; i++) {
        long long id = key_int(&b.items[i], "id");
        if (id == 1 && b.items[i].op == SQLQ_OP_DELETE)
            seen |= 1;
        if (id == 10 && b.items[i].op == SQLQ_OP_INSERT &&
            strcmp(row_str(&b.items[i], "name"), "one") == 0)
            seen |= 2;
        if (id == 4 && b.items[i].op == SQLQ_OP_DELETE && !b.items[i].row)
            seen |= 4;
    }
    assert_int_equal(seen, 7);
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    /* delivered keys: an update is an update, also when the sync version has not moved past
     * the delivery yet (its released lease says what was delivered) */
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 22 WHERE id = 2");
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 11 WHERE id = 10");
    poll(cap, &b);
    assert_int_equal(b.count, 2);
    for (size_t i = 0; i < b.count; i++)
        assert_int_equal(b.items[i].op, SQLQ_OP_UPDATE);
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    /* deleted, then inserted again before the poll: the row is new since the last delivery */
    sqlq_test_db_exec(e.db, "DELETE FROM items WHERE id = 2");
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (2, 'two again', 2)");
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 23 WHERE id = 2");
    poll(cap, &b);
    assert_int_equal(b.count, 1);
    assert_int_equal(b.items[0].op, SQLQ_OP_INSERT);
    assert_string_equal(row_str(&b.items[0], "name"), "two again");
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    advance(cap);
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (5, 'five', 5)");
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    assert_int_equal(st.pending, 1);
    sqlq_capture_status_free(&st);
    sqlq_capture_close(cap);
    env_close(&e);
}

static void test_capture_sqlite_operations(void **s) { (void)s; run_operations(SQLITE); }
static void test_capture_pg_operations(void **s) { (void)s; run_operations(PG); }

/* ---- composite keys and odd identifiers ----------------------------------------------------- */

static void run_odd_names(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(
        e.db, "CREATE TABLE \"Odd \"\"tbl\"\" ü\" (\"key one\" text NOT NULL, \"k\"\"2\" integer "
              "NOT NULL, \"välue\" text, PRIMARY KEY (\"key one\", \"k\"\"2\"))");
    const char *name = "\"Odd \"\"tbl\"\" ü\"";
    sqlq_test_change_log_install(e.db, name);
    sqlq_capture *cap = open_cap(e.db, name, "a", 60, 10);
    sqlq_test_db_exec(e.db,
                      "INSERT INTO \"Odd \"\"tbl\"\" ü\" VALUES ('x y', 1, 'é'), ('x y', 2, 'ß')");
    sqlq_test_db_exec(e.db,
                      "UPDATE \"Odd \"\"tbl\"\" ü\" SET \"välue\" = 'ok' WHERE \"k\"\"2\" = 2");
    sqlq_change_batch b;
    poll(cap, &b);
    assert_int_equal(b.count, 2);
    for (size_t i = 0; i < b.count; i++) {
        assert_string_equal(json_string_value(json_object_get(b.items[i].key, "key one")), "x y");
        assert_int_equal(json_object_size(b.items[i].key), 2);
    }
    const sqlq_change *two = key_int(&b.items[0], "k\"2") == 2 ? &b.items[0] : &b.items[1];
    assert_string_equal(row_str(two, "välue"), "ok");
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    advance(cap);
    assert_int_equal(pending(cap), 0);
    sqlq_capture_close(cap);
    env_close(&e);
}

static void test_capture_sqlite_odd_names(void **s) { (void)s; run_odd_names(SQLITE); }
static void test_capture_pg_odd_names(void **s) { (void)s; run_odd_names(PG); }

/* ---- 1000 changes, batches of 100, exactly once --------------------------------------------- */

static void run_thousand(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(e.db, "CREATE TABLE bulk (id integer PRIMARY KEY, v integer)");
    sqlq_test_change_log_install(e.db, "bulk");
    sqlq_capture *cap = open_cap(e.db, "bulk", "a", 60, 100);
    sqlq_test_db_exec(e.db, kind == SQLITE
                                ? "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                                  "WHERE i < 1000) INSERT INTO bulk SELECT i, i FROM n"
                                : "INSERT INTO bulk SELECT i, i FROM generate_series(1, 1000) i");
    assert_int_equal(pending(cap), 1000);
    char *seen = calloc(1001, 1);
    size_t total = 0;
    for (int round = 0; round < 20; round++) {
        sqlq_change_batch b;
        poll(cap, &b);
        if (b.count == 0) {
            sqlq_change_batch_free(&b);
            break;
        }
        assert_true(b.count <= 100);
        for (size_t i = 0; i < b.count; i++) {
            long long id = key_int(&b.items[i], "id");
            assert_true(id >= 1 && id <= 1000);
            assert_int_equal(seen[id], 0);
            seen[id] = 1;
        }
        total += b.count;
        assert_int_equal(release(cap, &b), 0);
        sqlq_change_batch_free(&b);
        advance(cap);
    }
    assert_int_equal(total, 1000);
    free(seen);
    assert_int_equal(pending(cap), 0);
    const char *q = kind == SQLITE ? "SELECT count(*) FROM sqlq_leases_%s"
                                   : "SELECT count(*) FROM sqlq.leases_%s";
    (void)q;
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    SQLQ_TEST_OK(sqlq_catalog_lookup(e.db, "bulk", "default", &t, &n, err));
    sqlq_table_free(t);
    char sql[256];
    snprintf(sql, sizeof(sql), kind == SQLITE ? "SELECT count(*) FROM sqlq_%s"
                                              : "SELECT count(*) FROM sqlq.%s",
             n.leases_table);
    assert_int_equal(sqlq_test_db_int(e.db, sql),
                     0); /* released rows at or below the sync version go */
    /* the log was trimmed up to the sync version of the only bridge */
    assert_true(sqlq_test_db_int(e.db, kind == SQLITE
                                           ? "SELECT count(*) FROM sqlq_log_bulk"
                                           : "SELECT count(*) FROM sqlq.log_bulk") < 1000);
    sqlq_capture_close(cap);
    env_close(&e);
}

static void test_capture_sqlite_thousand(void **s) { (void)s; run_thousand(SQLITE); }
static void test_capture_pg_thousand(void **s) { (void)s; run_thousand(PG); }

/* ---- one large version: resumed polls and advance scans ------------------------------------ */

/* Index of a (region, id) key of the one_version table: regions r0..r9, ids 1..100. */
static int ov_index(const sqlq_change *c)
{
    const char *region = json_string_value(json_object_get(c->key, "region"));
    assert_non_null(region);
    assert_true(region[0] == 'r' && region[1] >= '0' && region[1] <= '9' && !region[2]);
    long long id = key_int(c, "id");
    assert_true(id >= 1 && id <= 100);
    return (region[1] - '0') * 100 + (int)(id - 1);
}

/* 1000 changes written by one statement (one transaction),
 * keyed by (text, integer): polls resume after the last change they leased and advance scans
 * after the first unprocessed change they found. Nothing behind those positions is lost: a
 * change abandoned mid-sweep comes back at once, and the changes of an instance whose leases
 * expired come back once the sweep ends. The sync version cannot pass them meanwhile. */
static void run_one_version(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_db *db_b = connect_db(e.conn);
    sqlq_test_db_exec(
        e.db, "CREATE TABLE one_version (region text NOT NULL, id integer NOT NULL, v integer, "
              "PRIMARY KEY (region, id))");
    sqlq_test_change_log_install(e.db, "one_version");
    sqlq_capture *a = open_cap(e.db, "one_version", "a", 60, 100);
    sqlq_capture *b = open_cap(db_b, "one_version", "b", 1, 100);
    sqlq_test_db_exec(
        e.db, kind == SQLITE
                  ? "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE "
                    "i < 999) INSERT INTO one_version SELECT 'r' || (i / 100), i % 100 + 1, i "
                    "FROM n"
                  : "INSERT INTO one_version SELECT 'r' || (i / 100), i % 100 + 1, i FROM "
                    "generate_series(0, 999) i");
    int delivered[1000] = {0};
    sqlq_change_batch bb, ba;
    poll(b, &bb); /* B leases the first 100 for 1 s and is never heard of again */
    assert_int_equal(bb.count, 100);
    poll(a, &ba); /* A: the next 100; its next poll resumes after them */
    assert_int_equal(ba.count, 100);
    assert_int_equal(ov_index(&ba.items[0]), 100);
    for (size_t i = 0; i < ba.count; i++)
        delivered[ov_index(&ba.items[i])]++;
    assert_int_equal(release(a, &ba), 0);
    sqlq_change_batch_free(&ba);
    int64_t sync0 = advance(a); /* B's changes hold the sync version back */
    /* A change abandoned mid-sweep is polled again at once, not after the sweep. */
    poll(a, &ba);
    assert_int_equal(ov_index(&ba.items[0]), 200);
    SQLQ_TEST_OK(sqlq_capture_abandon(a, ba.items, ba.count, true, err));
    sqlq_change_batch_free(&ba);
    poll(a, &ba);
    assert_int_equal(ov_index(&ba.items[0]), 200);
    assert_int_equal(ba.items[0].attempts, 2);
    for (size_t i = 0; i < ba.count; i++)
        delivered[ov_index(&ba.items[i])]++;
    assert_int_equal(release(a, &ba), 0);
    sqlq_change_batch_free(&ba);
    assert_int_equal(advance(a), sync0);
    usleep(1300 * 1000); /* B's leases expire behind A's position */
    int rounds = 0, retaken = 0;
    for (; rounds < 40; rounds++) {
        poll_now(a, &ba);
        for (size_t i = 0; i < ba.count; i++) {
            int k = ov_index(&ba.items[i]);
            delivered[k]++;
            if (k < 100) {
                assert_int_equal(ba.items[i].attempts, 2);
                retaken++;
            }
        }
        size_t n = ba.count;
        assert_int_equal(release(a, &ba), 0);
        sqlq_change_batch_free(&ba);
        int64_t v = advance(a);
        if (retaken < 100)
            assert_int_equal(v, sync0); /* never past B's changes while they are out */
        if (n == 0 && retaken == 100)
            break;
    }
    assert_true(rounds < 40);
    for (int k = 0; k < 1000; k++)
        assert_int_equal(delivered[k], 1);
    assert_int_equal(pending(a), 0);
    assert_true(advance(a) > sync0);
    assert_int_equal(release(b, &bb), 100); /* fenced off: A delivered them */
    sqlq_change_batch_free(&bb);
    poll_now(a, &ba);
    assert_int_equal(ba.count, 0);
    sqlq_change_batch_free(&ba);
    sqlq_capture_close(a);
    sqlq_capture_close(b);
    sqlq_db_close(db_b);
    env_close(&e);
}

static void test_capture_sqlite_one_version(void **s) { (void)s; run_one_version(SQLITE); }
static void test_capture_pg_one_version(void **s) { (void)s; run_one_version(PG); }

/* ---- fencing ------------------------------------------------------------------------------ */

static void run_fencing(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_db *db_b = connect_db(e.conn);
    sqlq_test_db_exec(e.db, "CREATE TABLE f (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "f");
    sqlq_test_db_exec(e.db, "INSERT INTO f VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    sqlq_capture *a = open_cap(e.db, "f", "instance-a", 1, 2);
    sqlq_capture *b = open_cap(db_b, "f", "instance-b", 60, 10);
    sqlq_change_batch ba, bb;
    poll(a, &ba); /* A leases two changes for 1 s */
    assert_int_equal(ba.count, 2);
    poll(b, &bb); /* B sees only the third while A's leases hold */
    assert_int_equal(bb.count, 1);
    assert_int_equal(key_int(&bb.items[0], "id"), 3);
    assert_int_equal(release(b, &bb), 0);
    sqlq_change_batch_free(&bb);
    usleep(1300 * 1000); /* A's leases expire */
    poll(b, &bb);        /* B takes them over: attempt 2 */
    assert_int_equal(bb.count, 2);
    for (size_t i = 0; i < bb.count; i++)
        assert_int_equal(bb.items[i].attempts, 2);
    /* A wakes up: its release touches nothing, every change is counted lost */
    assert_int_equal(release(a, &ba), 2);
    SQLQ_TEST_OK(sqlq_capture_renew(a, ba.items, ba.count, err));
    size_t lost = 0;
    SQLQ_TEST_OK(sqlq_capture_renew_owned(a, ba.items, ba.count, &lost, err));
    assert_int_equal(lost, 2);
    SQLQ_TEST_OK(sqlq_capture_abandon(a, ba.items, ba.count, true, err));
    /* and A cannot move the sync version past B's unprocessed work */
    int64_t before = advance(a);
    assert_int_equal(pending(a), 2); /* B holds them, not delivered yet: pending (issue 14.5) */
    sqlq_change_batch_free(&ba);
    poll_now(a, &ba);
    assert_int_equal(ba.count, 0); /* B's leases hold (A's abandon did not free them) */
    sqlq_change_batch_free(&ba);
    int64_t unprocessed_min = bb.items[0].version;
    assert_true(before < unprocessed_min);
    /* B releases: now the sync version moves past everything */
    assert_int_equal(release(b, &bb), 0);
    int64_t after = advance(a);
    assert_true(after >= bb.items[1].version);
    assert_true(advance(b) == after); /* never backwards */
    sqlq_change_batch_free(&bb);
    sqlq_capture_close(a);
    sqlq_capture_close(b);
    sqlq_db_close(db_b);
    env_close(&e);
}

static void test_capture_sqlite_fencing(void **s) { (void)s; run_fencing(SQLITE); }
static void test_capture_pg_fencing(void **s) { (void)s; run_fencing(PG); }

/* ---- attempts -------------------------------------------------------------------------------- */

static void run_attempts(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(e.db, "CREATE TABLE p (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "p");
    sqlq_capture *cap = open_cap(e.db, "p", "a", 60, 10);
    sqlq_test_db_exec(e.db, "INSERT INTO p VALUES (1, 'poison')");
    sqlq_change_batch b;
    for (int i = 1; i <= 5; i++) {
        poll(cap, &b);
        assert_int_equal(b.count, 1);
        assert_int_equal(b.items[0].attempts, i);
        SQLQ_TEST_OK(sqlq_capture_abandon(cap, b.items, 1, true, err));
        /* not counting (a transient failure) leaves the count where it was */
        sqlq_change_batch_free(&b);
        poll(cap, &b);
        assert_int_equal(b.items[0].attempts, i + 1 > 5 ? 6 : i + 1);
        SQLQ_TEST_OK(sqlq_capture_abandon(cap, b.items, 1, false, err));
        sqlq_change_batch_free(&b);
        assert_int_equal(pending(cap), 1);
    }
    poll(cap, &b); /* over max_attempts: handed back flagged for poison, not dropped */
    assert_int_equal(b.count, 1);
    assert_int_equal(b.items[0].attempts, 6);
    assert_int_equal(release(cap, &b), 0); /* the bridge poisoned it */
    sqlq_change_batch_free(&b);
    advance(cap);
    assert_int_equal(pending(cap), 0);
    /* a new change of the same key starts counting again */
    sqlq_test_db_exec(e.db, "UPDATE p SET v = 'fixed' WHERE id = 1");
    poll(cap, &b);
    assert_int_equal(b.count, 1);
    assert_int_equal(b.items[0].attempts, 1);
    sqlq_change_batch_free(&b);
    sqlq_capture_close(cap);
    env_close(&e);
}

static void test_capture_sqlite_attempts(void **s) { (void)s; run_attempts(SQLITE); }
static void test_capture_pg_attempts(void **s) { (void)s; run_attempts(PG); }

/* ---- start_from now, two bridges ------------------------------------------------------------ */

static void run_start_now(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(e.db, "CREATE TABLE s (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "s");
    sqlq_test_db_exec(e.db, "INSERT INTO s VALUES (1), (2)");
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = "s";
    cfg.bridge_name = "late";
    cfg.instance_id = "x";
    cfg.start_from = SQLQ_START_NOW;
    sqlq_capture *late = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(e.db, &cfg, &late, err));
    sqlq_capture *early = open_cap(e.db, "s", "y", 60, 10);
    sqlq_test_db_exec(e.db, "INSERT INTO s VALUES (3)");
    sqlq_change_batch b;
    poll(late, &b);
    assert_int_equal(b.count, 1);
    assert_int_equal(key_int(&b.items[0], "id"), 3);
    sqlq_change_batch_free(&b);
    poll(early, &b);
    assert_int_equal(b.count, 3); /* bridges are independent */
    sqlq_change_batch_free(&b);
    sqlq_capture_close(late);
    /* reopening does not move the start again */
    SQLQ_TEST_OK(sqlq_capture_open(e.db, &cfg, &late, err));
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(late, &st, err));
    assert_int_equal(st.leased, 1);
    assert_int_equal(json_integer_value(json_object_get(st.owners, "x")), 1);
    sqlq_capture_status_free(&st);
    sqlq_capture_close(late);
    sqlq_capture_close(early);
    env_close(&e);
}

static void test_capture_sqlite_start_now(void **s) { (void)s; run_start_now(SQLITE); }
static void test_capture_pg_start_now(void **s) { (void)s; run_start_now(PG); }

/* ---- PostgreSQL: a transaction that commits late is not skipped ------------------------------ */

static void test_capture_pg_late_commit(void **s)
{
    (void)s;
    env e;
    env_open(&e, PG);
    sqlq_test_db_exec(e.db, "CREATE TABLE lc (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "lc");
    sqlq_capture *cap = open_cap(e.db, "lc", "a", 60, 100);
    sqlq_db *ta = connect_db(e.conn);
    sqlq_db *tb = connect_db(e.conn);
    SQLQ_TEST_OK(sqlq_db_begin(ta, err));
    sqlq_test_db_exec(ta,
                      "INSERT INTO lc VALUES (1, 'from A')"); /* A wrote the log and stays open */
    SQLQ_TEST_OK(sqlq_db_begin(tb, err));
    sqlq_test_db_exec(tb, "INSERT INTO lc VALUES (2, 'from B')"); /* B's version is larger */
    SQLQ_TEST_OK(sqlq_db_commit(tb, err));
    sqlq_change_batch b;
    poll_now(cap, &b); /* B committed, but A (older version) still runs: nothing past A is read */
    assert_int_equal(b.count, 0);
    sqlq_change_batch_free(&b);
    assert_int_equal(advance(cap), 0);
    SQLQ_TEST_OK(sqlq_db_commit(ta, err));
    poll(cap, &b);
    assert_int_equal(b.count, 2);
    assert_int_equal(key_int(&b.items[0], "id"), 1); /* A's version is older */
    assert_int_equal(key_int(&b.items[1], "id"), 2);
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    advance(cap);

    /* and the other order: B commits first and is read, released, advanced past; then A commits */
    SQLQ_TEST_OK(sqlq_db_begin(ta, err));
    sqlq_test_db_exec(ta, "INSERT INTO lc VALUES (3, 'from A')");
    SQLQ_TEST_OK(sqlq_db_begin(tb, err));
    sqlq_test_db_exec(tb, "INSERT INTO lc VALUES (4, 'from B')");
    SQLQ_TEST_OK(sqlq_db_commit(tb, err));
    sqlq_db *other = connect_db(e.conn);
    sqlq_test_db_exec(other, "INSERT INTO lc VALUES (5, 'autocommit')");
    poll_now(cap, &b);
    assert_int_equal(b.count, 0); /* A holds the horizon */
    sqlq_change_batch_free(&b);
    advance(cap);
    SQLQ_TEST_OK(sqlq_db_commit(ta, err));
    poll(cap, &b);
    assert_int_equal(b.count, 3);
    assert_int_equal(key_int(&b.items[0], "id"), 3);
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    advance(cap);
    assert_int_equal(pending(cap), 0);
    sqlq_db_close(other);
    sqlq_db_close(ta);
    sqlq_db_close(tb);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* ---- concurrent writers and two instances: nothing lost, nothing delivered twice ----------- */

#define CC_KEYS 100
#define CC_TXNS 150

typedef struct cc_shared {
    const char *conn;
    int kind;
    pthread_mutex_t mu;
    int writers_running;
    bool touched[CC_KEYS];
    json_t *delivered; /* array of {"id", "version", "op", "v"} */
    int errors;
} cc_shared;

static void *cc_writer(void *arg)
{
    cc_shared *sh = arg;
    sqlq_db *db = connect_db(sh->conn);
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
                snprintf(sql, sizeof(sql), "INSERT INTO cc VALUES (%d, %d) ON CONFLICT (id) DO "
                         "UPDATE SET v = excluded.v", id, t * 10 + i);
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
    sqlq_db *db = connect_db(sh->conn);
    char instance[32];
    snprintf(instance, sizeof(instance), "cc-%p", (void *)&instance);
    sqlq_capture *cap = open_cap(db, "cc", instance, 60, 10);
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
        sh->errors += lost > 0;
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

static void run_concurrent(int kind)
{
    env e;
    env_open(&e, kind);
    sqlq_test_db_exec(e.db, "CREATE TABLE cc (id integer PRIMARY KEY, v integer)");
    sqlq_test_change_log_install(e.db, "cc");
    cc_shared sh = {.conn = e.conn, .kind = kind, .writers_running = 2, .delivered = json_array()};
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
    fprintf(stderr, "concurrent %s: %zu deliveries, %d keys verified\n",
            kind == SQLITE ? "sqlite" : "postgres", json_array_size(sh.delivered), checked);
    assert_true(checked > CC_KEYS / 2);
    json_decref(rows);
    json_decref(latest);
    json_decref(seen);
    json_decref(sh.delivered);
    pthread_mutex_destroy(&sh.mu);
    env_close(&e);
}

static void test_capture_sqlite_concurrent(void **s) { (void)s; run_concurrent(SQLITE); }
static void test_capture_pg_concurrent(void **s) { (void)s; run_concurrent(PG); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_sqlite_install_drop),
        cmocka_unit_test(test_capture_pg_install_drop),
        cmocka_unit_test(test_capture_sqlite_operations),
        cmocka_unit_test(test_capture_pg_operations),
        cmocka_unit_test(test_capture_sqlite_odd_names),
        cmocka_unit_test(test_capture_pg_odd_names),
        cmocka_unit_test(test_capture_sqlite_thousand),
        cmocka_unit_test(test_capture_pg_thousand),
        cmocka_unit_test(test_capture_sqlite_one_version),
        cmocka_unit_test(test_capture_pg_one_version),
        cmocka_unit_test(test_capture_sqlite_fencing),
        cmocka_unit_test(test_capture_pg_fencing),
        cmocka_unit_test(test_capture_sqlite_attempts),
        cmocka_unit_test(test_capture_pg_attempts),
        cmocka_unit_test(test_capture_sqlite_start_now),
        cmocka_unit_test(test_capture_pg_start_now),
        cmocka_unit_test(test_capture_pg_late_commit),
        cmocka_unit_test(test_capture_sqlite_concurrent),
        cmocka_unit_test(test_capture_pg_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
