/* Change capture through ODBC on the database $SQLQ_TEST_DATABASE names (sqlite, postgres,
 * mariadb): change log install/drop, captured operations, leases, fencing, advance, attempts,
 * pending counts. Writers that commit out of order and run concurrently: test_capture_concurrent.c. */
#include "capture.h"
#include "capture_support.h"
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- install, drop ----------------------------------------------------------------------- */

static void test_capture_install_drop(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
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
    assert_int_equal(capture_count_sqlq(&e, n.log_table, NULL), 1);
    sqlq_capture *cap = capture_open(e.db, "orders", "a", 60, 10);
    sqlq_capture_close(cap);
    size_t forgotten = 0;
    SQLQ_TEST_OK(sqlq_capture_forget(e.db, "orders", NULL, &forgotten, err));
    assert_int_equal(forgotten, 1);
    SQLQ_TEST_OK(sqlq_change_log_drop(e.db, t, NULL, err));
    SQLQ_TEST_OK(sqlq_change_log_installed(e.db, t, &on, err));
    assert_false(on);
    assert_int_equal(e.d->objects(&e, &n), 0);
    sqlq_test_db_exec(
        e.db, "INSERT INTO orders VALUES (2, 'b')"); /* the table works without the triggers */
    SQLQ_TEST_OK(sqlq_change_log_drop(e.db, t, NULL, err)); /* and dropping twice is fine */
    sqlq_table_free(t);
    capture_env_close(&e);
}

/* ---- operations ---------------------------------------------------------------------------- */

static void test_capture_operations(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    sqlq_test_db_exec(e.db, "CREATE TABLE items (id integer PRIMARY KEY, name text, qty integer)");
    sqlq_test_change_log_install(e.db, "items");
    sqlq_capture *cap = capture_open(e.db, "items", "a", 60, 100);
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (1, 'one', 1)");
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (2, 'two', 2)");
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (3, 'three', 3)");
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 20 WHERE id = 2");
    sqlq_test_db_exec(e.db,
                      "UPDATE items SET qty = 21 WHERE id = 2"); /* several changes → one, latest */
    sqlq_test_db_exec(e.db, "DELETE FROM items WHERE id = 3");
    assert_int_equal(capture_pending(cap), 3);
    sqlq_change_batch b;
    capture_poll(cap, &b);
    assert_int_equal(b.count, 3);
    assert_false(b.full);
    /* order: versions; 1 (insert), then 2 (last update), then 3 (delete). op is what change
     * tracking says: 2 was created since the last delivery, so it is an insert whatever
     * followed; 3 was created and deleted in between: one delete */
    assert_int_equal(capture_key_int(&b.items[0], "id"), 1);
    assert_int_equal(b.items[0].op, SQLQ_OP_INSERT);
    assert_string_equal(capture_row_str(&b.items[0], "name"), "one");
    assert_int_equal(capture_key_int(&b.items[1], "id"), 2);
    assert_int_equal(b.items[1].op, SQLQ_OP_INSERT);
    assert_int_equal(json_integer_value(json_object_get(b.items[1].row, "qty")), 21);
    assert_int_equal(capture_key_int(&b.items[2], "id"), 3);
    assert_int_equal(b.items[2].op, SQLQ_OP_DELETE);
    assert_null(b.items[2].row);
    for (size_t i = 0; i < b.count; i++) {
        assert_int_equal(b.items[i].attempts, 1);
        assert_true(b.items[i].lease_token > 0);
    }
    assert_true(b.items[0].version < b.items[1].version || !e.d->ordered_versions);
    assert_int_equal(capture_pending(cap), 3); /* leased, not yet delivered: still pending */
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    assert_true(capture_advance(cap) > 0);
    capture_poll_now(cap, &b);
    assert_int_equal(b.count, 0);
    sqlq_change_batch_free(&b);

    /* a key update: delete of the old key, insert of the new */
    sqlq_test_db_exec(e.db, "UPDATE items SET id = 10 WHERE id = 1");
    /* a row changed, then deleted before the poll: the log says delete */
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (4, 'four', 4)");
    sqlq_test_db_exec(e.db, "DELETE FROM items WHERE id = 4");
    capture_poll(cap, &b);
    assert_int_equal(b.count, 3);
    int seen = 0;
    for (size_t i = 0; i < b.count; i++) {
        long long id = capture_key_int(&b.items[i], "id");
        if (id == 1 && b.items[i].op == SQLQ_OP_DELETE)
            seen |= 1;
        if (id == 10 && b.items[i].op == SQLQ_OP_INSERT &&
            strcmp(capture_row_str(&b.items[i], "name"), "one") == 0)
            seen |= 2;
        if (id == 4 && b.items[i].op == SQLQ_OP_DELETE && !b.items[i].row)
            seen |= 4;
    }
    assert_int_equal(seen, 7);
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    /* delivered keys: an update is an update, also when the sync version has not moved past
     * the delivery yet (its released lease says what was delivered) */
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 22 WHERE id = 2");
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 11 WHERE id = 10");
    capture_poll(cap, &b);
    assert_int_equal(b.count, 2);
    for (size_t i = 0; i < b.count; i++)
        assert_int_equal(b.items[i].op, SQLQ_OP_UPDATE);
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    /* deleted, then inserted again before the poll: the row is new since the last delivery */
    sqlq_test_db_exec(e.db, "DELETE FROM items WHERE id = 2");
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (2, 'two again', 2)");
    sqlq_test_db_exec(e.db, "UPDATE items SET qty = 23 WHERE id = 2");
    capture_poll(cap, &b);
    assert_int_equal(b.count, 1);
    assert_int_equal(b.items[0].op, SQLQ_OP_INSERT);
    assert_string_equal(capture_row_str(&b.items[0], "name"), "two again");
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    capture_advance(cap);
    sqlq_test_db_exec(e.db, "INSERT INTO items VALUES (5, 'five', 5)");
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    assert_int_equal(st.pending, 1);
    sqlq_capture_status_free(&st);
    sqlq_capture_close(cap);
    capture_env_close(&e);
}

/* ---- composite keys and odd identifiers ----------------------------------------------------- */

static void test_capture_odd_names(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    char create[256];
    snprintf(create, sizeof(create),
             "CREATE TABLE \"Odd \"\"tbl\"\" ü\" (\"key one\" %s NOT NULL, \"k\"\"2\" integer "
             "NOT NULL, \"välue\" text, PRIMARY KEY (\"key one\", \"k\"\"2\"))",
             e.d->key_text);
    capture_exec_quoted(&e, create);
    char *name = capture_quoted(&e, "\"Odd \"\"tbl\"\" ü\"");
    sqlq_test_change_log_install(e.db, name);
    sqlq_capture *cap = capture_open(e.db, name, "a", 60, 10);
    capture_exec_quoted(&e,
                        "INSERT INTO \"Odd \"\"tbl\"\" ü\" VALUES ('x y', 1, 'é'), ('x y', 2, 'ß')");
    capture_exec_quoted(&e,
                        "UPDATE \"Odd \"\"tbl\"\" ü\" SET \"välue\" = 'ok' WHERE \"k\"\"2\" = 2");
    sqlq_change_batch b;
    capture_poll(cap, &b);
    assert_int_equal(b.count, 2);
    for (size_t i = 0; i < b.count; i++) {
        assert_string_equal(json_string_value(json_object_get(b.items[i].key, "key one")), "x y");
        assert_int_equal(json_object_size(b.items[i].key), 2);
    }
    const sqlq_change *two = capture_key_int(&b.items[0], "k\"2") == 2 ? &b.items[0] : &b.items[1];
    assert_string_equal(capture_row_str(two, "välue"), "ok");
    assert_int_equal(capture_release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    capture_advance(cap);
    assert_int_equal(capture_pending(cap), 0);
    sqlq_capture_close(cap);
    free(name);
    capture_env_close(&e);
}

/* ---- 1000 changes, batches of 100, exactly once --------------------------------------------- */

static void test_capture_thousand(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    sqlq_test_db_exec(e.db, "CREATE TABLE bulk (id integer PRIMARY KEY, v integer)");
    sqlq_test_change_log_install(e.db, "bulk");
    sqlq_capture *cap = capture_open(e.db, "bulk", "a", 60, 100);
    sqlq_test_db_exec(e.db, e.d->bulk_1000);
    assert_int_equal(capture_pending(cap), 1000);
    char *seen = calloc(1001, 1);
    size_t total = 0;
    for (int round = 0; round < 20; round++) {
        sqlq_change_batch b;
        capture_poll(cap, &b);
        if (b.count == 0) {
            sqlq_change_batch_free(&b);
            break;
        }
        assert_true(b.count <= 100);
        for (size_t i = 0; i < b.count; i++) {
            long long id = capture_key_int(&b.items[i], "id");
            assert_true(id >= 1 && id <= 1000);
            assert_int_equal(seen[id], 0);
            seen[id] = 1;
        }
        total += b.count;
        assert_int_equal(capture_release(cap, &b), 0);
        sqlq_change_batch_free(&b);
        capture_advance(cap);
    }
    assert_int_equal(total, 1000);
    free(seen);
    assert_int_equal(capture_pending(cap), 0);
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    SQLQ_TEST_OK(sqlq_catalog_lookup(e.db, "bulk", "default", &t, &n, err));
    sqlq_table_free(t);
    /* released rows at or below the sync version go */
    assert_int_equal(capture_count_sqlq(&e, n.leases_table, NULL), 0);
    /* the log was trimmed up to the sync version of the only bridge */
    assert_true(capture_count_sqlq(&e, n.log_table, NULL) < 1000);
    sqlq_capture_close(cap);
    capture_env_close(&e);
}

/* ---- one large version: resumed polls and advance scans ------------------------------------ */

/* Index of a (region, id) key of the one_version table: regions r0..r9, ids 1..100. */
static int ov_index(const sqlq_change *c)
{
    const char *region = json_string_value(json_object_get(c->key, "region"));
    assert_non_null(region);
    assert_true(region[0] == 'r' && region[1] >= '0' && region[1] <= '9' && !region[2]);
    long long id = capture_key_int(c, "id");
    assert_true(id >= 1 && id <= 100);
    return (region[1] - '0') * 100 + (int)(id - 1);
}

/* 1000 changes written by one statement (one transaction),
 * keyed by (text, integer): polls resume after the last change they leased and advance scans
 * after the first unprocessed change they found. Nothing behind those positions is lost: a
 * change abandoned mid-sweep comes back at once, and the changes of an instance whose leases
 * expired come back once the sweep ends. The sync version cannot pass them meanwhile. */
static void test_capture_one_version(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    sqlq_db *db_b = capture_connect(e.conn);
    sqlq_test_db_execf(e.db,
                       "CREATE TABLE one_version (region %s NOT NULL, id integer NOT NULL, "
                       "v integer, PRIMARY KEY (region, id))",
                       e.d->key_text);
    sqlq_test_change_log_install(e.db, "one_version");
    sqlq_capture *a = capture_open(e.db, "one_version", "a", 60, 100);
    sqlq_capture *b = capture_open(db_b, "one_version", "b", 1, 100);
    sqlq_test_db_exec(e.db, e.d->one_version);
    int delivered[1000] = {0};
    sqlq_change_batch bb, ba;
    capture_poll(b, &bb); /* B leases the first 100 for 1 s and is never heard of again */
    assert_int_equal(bb.count, 100);
    capture_poll(a, &ba); /* A: the next 100; its next poll resumes after them */
    assert_int_equal(ba.count, 100);
    assert_int_equal(ov_index(&ba.items[0]), 100);
    for (size_t i = 0; i < ba.count; i++)
        delivered[ov_index(&ba.items[i])]++;
    assert_int_equal(capture_release(a, &ba), 0);
    sqlq_change_batch_free(&ba);
    int64_t sync0 = capture_advance(a); /* B's changes hold the sync version back */
    /* A change abandoned mid-sweep is polled again at once, not after the sweep. */
    capture_poll(a, &ba);
    assert_int_equal(ov_index(&ba.items[0]), 200);
    SQLQ_TEST_OK(sqlq_capture_abandon(a, ba.items, ba.count, true, err));
    sqlq_change_batch_free(&ba);
    capture_poll(a, &ba);
    assert_int_equal(ov_index(&ba.items[0]), 200);
    assert_int_equal(ba.items[0].attempts, 2);
    for (size_t i = 0; i < ba.count; i++)
        delivered[ov_index(&ba.items[i])]++;
    assert_int_equal(capture_release(a, &ba), 0);
    sqlq_change_batch_free(&ba);
    assert_int_equal(capture_advance(a), sync0);
    usleep(1300 * 1000); /* B's leases expire behind A's position */
    int rounds = 0, retaken = 0;
    for (; rounds < 40; rounds++) {
        capture_poll_now(a, &ba);
        for (size_t i = 0; i < ba.count; i++) {
            int k = ov_index(&ba.items[i]);
            delivered[k]++;
            if (k < 100) {
                assert_int_equal(ba.items[i].attempts, 2);
                retaken++;
            }
        }
        size_t n = ba.count;
        assert_int_equal(capture_release(a, &ba), 0);
        sqlq_change_batch_free(&ba);
        int64_t v = capture_advance(a);
        if (retaken < 100)
            assert_int_equal(v, sync0); /* never past B's changes while they are out */
        if (n == 0 && retaken == 100)
            break;
    }
    assert_true(rounds < 40);
    for (int k = 0; k < 1000; k++)
        assert_int_equal(delivered[k], 1);
    assert_int_equal(capture_pending(a), 0);
    assert_true(capture_advance(a) > sync0);
    assert_int_equal(capture_release(b, &bb), 100); /* fenced off: A delivered them */
    sqlq_change_batch_free(&bb);
    capture_poll_now(a, &ba);
    assert_int_equal(ba.count, 0);
    sqlq_change_batch_free(&ba);
    sqlq_capture_close(a);
    sqlq_capture_close(b);
    sqlq_db_close(db_b);
    capture_env_close(&e);
}

/* ---- fencing ------------------------------------------------------------------------------ */

static void test_capture_fencing(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    sqlq_db *db_b = capture_connect(e.conn);
    sqlq_test_db_exec(e.db, "CREATE TABLE f (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "f");
    sqlq_test_db_exec(e.db, "INSERT INTO f VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    sqlq_capture *a = capture_open(e.db, "f", "instance-a", 1, 2);
    sqlq_capture *b = capture_open(db_b, "f", "instance-b", 60, 10);
    sqlq_change_batch ba, bb;
    capture_poll(a, &ba); /* A leases two changes for 1 s */
    assert_int_equal(ba.count, 2);
    capture_poll(b, &bb); /* B sees only the third while A's leases hold */
    assert_int_equal(bb.count, 1);
    assert_int_equal(capture_key_int(&bb.items[0], "id"), 3);
    assert_int_equal(capture_release(b, &bb), 0);
    sqlq_change_batch_free(&bb);
    usleep(1300 * 1000); /* A's leases expire */
    capture_poll(b, &bb);        /* B takes them over: attempt 2 */
    assert_int_equal(bb.count, 2);
    for (size_t i = 0; i < bb.count; i++)
        assert_int_equal(bb.items[i].attempts, 2);
    /* A wakes up: its release touches nothing, every change is counted lost */
    assert_int_equal(capture_release(a, &ba), 2);
    SQLQ_TEST_OK(sqlq_capture_renew(a, ba.items, ba.count, err));
    size_t lost = 0;
    SQLQ_TEST_OK(sqlq_capture_renew_owned(a, ba.items, ba.count, &lost, err));
    assert_int_equal(lost, 2);
    SQLQ_TEST_OK(sqlq_capture_abandon(a, ba.items, ba.count, true, err));
    /* and A cannot move the sync version past B's unprocessed work */
    int64_t before = capture_advance(a);
    assert_int_equal(capture_pending(a), 2); /* B holds them, not delivered yet: pending */
    sqlq_change_batch_free(&ba);
    capture_poll_now(a, &ba);
    assert_int_equal(ba.count, 0); /* B's leases hold (A's abandon did not free them) */
    sqlq_change_batch_free(&ba);
    int64_t unprocessed_min = bb.items[0].version;
    assert_true(before < unprocessed_min);
    /* B releases: now the sync version moves past everything */
    assert_int_equal(capture_release(b, &bb), 0);
    int64_t after = capture_advance(a);
    assert_true(after >= bb.items[1].version);
    assert_true(capture_advance(b) == after); /* never backwards */
    sqlq_change_batch_free(&bb);
    sqlq_capture_close(a);
    sqlq_capture_close(b);
    sqlq_db_close(db_b);
    capture_env_close(&e);
}

/* ---- attempts -------------------------------------------------------------------------------- */

static void test_capture_attempts(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
    sqlq_test_db_exec(e.db, "CREATE TABLE p (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "p");
    sqlq_capture *cap = capture_open(e.db, "p", "a", 60, 10);
    sqlq_test_db_exec(e.db, "INSERT INTO p VALUES (1, 'poison')");
    sqlq_change_batch b;
    for (int i = 1; i <= 5; i++) {
        capture_poll(cap, &b);
        assert_int_equal(b.count, 1);
        assert_int_equal(b.items[0].attempts, i);
        SQLQ_TEST_OK(sqlq_capture_abandon(cap, b.items, 1, true, err));
        /* not counting (a transient failure) leaves the count where it was */
        sqlq_change_batch_free(&b);
        capture_poll(cap, &b);
        assert_int_equal(b.items[0].attempts, i + 1 > 5 ? 6 : i + 1);
        SQLQ_TEST_OK(sqlq_capture_abandon(cap, b.items, 1, false, err));
        sqlq_change_batch_free(&b);
        assert_int_equal(capture_pending(cap), 1);
    }
    capture_poll(cap, &b); /* over max_attempts: handed back flagged for poison, not dropped */
    assert_int_equal(b.count, 1);
    assert_int_equal(b.items[0].attempts, 6);
    assert_int_equal(capture_release(cap, &b), 0); /* the bridge poisoned it */
    sqlq_change_batch_free(&b);
    capture_advance(cap);
    assert_int_equal(capture_pending(cap), 0);
    /* a new change of the same key starts counting again */
    sqlq_test_db_exec(e.db, "UPDATE p SET v = 'fixed' WHERE id = 1");
    capture_poll(cap, &b);
    assert_int_equal(b.count, 1);
    assert_int_equal(b.items[0].attempts, 1);
    sqlq_change_batch_free(&b);
    sqlq_capture_close(cap);
    capture_env_close(&e);
}

/* ---- start_from now, two bridges ------------------------------------------------------------ */

static void test_capture_start_now(void **state)
{
    (void)state;
    capture_env e;
    capture_env_open(&e, "capture");
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
    sqlq_capture *early = capture_open(e.db, "s", "y", 60, 10);
    sqlq_test_db_exec(e.db, "INSERT INTO s VALUES (3)");
    sqlq_change_batch b;
    capture_poll(late, &b);
    assert_true(b.count == 1 && capture_key_int(&b.items[0], "id") == 3);
    sqlq_change_batch_free(&b);
    capture_poll(early, &b);
    assert_int_equal(b.count, 3); /* bridges are independent */
    sqlq_change_batch_free(&b);
    sqlq_capture_close(late);
    /* reopening does not move the start again */
    SQLQ_TEST_OK(sqlq_capture_open(e.db, &cfg, &late, err));
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(late, &st, err));
    assert_true(st.leased == 1 && json_integer_value(json_object_get(st.owners, "x")) == 1);
    sqlq_capture_status_free(&st);
    sqlq_capture_close(late);
    sqlq_capture_close(early);
    capture_env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_install_drop),
        cmocka_unit_test(test_capture_operations),
        cmocka_unit_test(test_capture_odd_names),
        cmocka_unit_test(test_capture_thousand),
        cmocka_unit_test(test_capture_one_version),
        cmocka_unit_test(test_capture_fencing),
        cmocka_unit_test(test_capture_attempts),
        cmocka_unit_test(test_capture_start_now),
    };
    return cmocka_run_group_tests_name(capture_db_under_test()->name, tests, NULL, NULL);
}
