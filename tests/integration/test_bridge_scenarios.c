/* `sqlq bridge` scenarios written once and run against every database ($SQLQ_TEST_DATABASE
 * names it: sqlite, postgres, mariadb), publishing to Azurite: content of the common column types,
 * updates and deletes, op as change tracking reports it, collapsing, composite keys (one that
 * changes) and odd identifiers, formats, oversized rows, a permanent failure going to poison while the table
 * keeps flowing, SIGTERM, the cursor source. A new database adds one entry to `databases`
 * below (and one sqlq_test_database line in tests/CMakeLists.txt). What only one database
 * has stays in its own file: test_bridge_postgres.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_support.h"
#include "testdb.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A database the scenarios run on: its kind (sqlq_test_create_db makes a fresh one), and the
 * statements that differ. */
typedef struct database {
    const char *name;
    const char *types_columns; /* id, name, qty, weight, paid, data, big, note: see test 1 */
    const char *binary_open;   /* a binary literal is binary_open, hex digits, binary_close */
    const char *binary_close;
    const char *long_text;     /* a text type that holds 100 kB */
    bool backticks;            /* identifiers are quoted `so` (MariaDB), not "so" */
} database;

static const database databases[] = {
    {"sqlite",
     "id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, weight REAL, paid BOOLEAN, data BLOB, big "
     "INTEGER, "
     "note VARCHAR(20)",
     "x'", "'", "TEXT", false},
    {"postgres",
     "id bigint PRIMARY KEY, name text, qty int, weight double precision, paid boolean, data "
     "bytea, "
     "big bigint, note varchar(20)",
     "'\\x", "'::bytea", "text", false},
    {"mariadb",
     "id bigint PRIMARY KEY, name text, qty int, weight double, paid boolean, data blob, "
     "big bigint, note varchar(20)",
     "x'", "'", "longtext", true},
};

static const database *db_under_test;

/* sql written with standard quoted identifiers ("x"), in the quoting of the database under
 * test (malloc'd). */
static char *quoted(const char *sql)
{
    if (db_under_test->backticks)
        return sqlq_test_backticks(sql);
    char *out = strdup(sql);
    assert_non_null(out);
    return out;
}

typedef bt_case ctx;

static int setup(void **state)
{
    *state = bt_case_new(sqlq_test_create_db(db_under_test->name, "bridge"), db_under_test->name);
    return 0;
}

/* Execute head, a text literal of n '0' characters, tail: the same long value on every database. */
static void exec_with_zeros(sqlq_db *db, const char *head, size_t n, const char *tail)
{
    size_t h = strlen(head), t = strlen(tail);
    char *sql = malloc(h + n + t + 3);
    assert_non_null(sql);
    memcpy(sql, head, h);
    sql[h] = '\'';
    memset(sql + h + 1, '0', n);
    sql[h + 1 + n] = '\'';
    memcpy(sql + h + 2 + n, tail, t + 1);
    bt_exec(db, sql);
    free(sql);
}

static json_t *find_key(json_t *by_key, const char *canon)
{
    json_t *l = json_object_get(by_key, canon);
    if (!l)
        fail_msg("no message for key %s", canon);
    return l;
}

/* Three rows of the common column types (text with non-ASCII and quotes, integer, floating
 * point, boolean, binary, a bigint past 2^53, a NULL): their content as docs/types.md says. */
static json_int_t insert_common_types(ctx *c, sqlq_db *db)
{
    const char *bo = db_under_test->binary_open, *bc = db_under_test->binary_close;
    sqlq_test_db_execf(db, "CREATE TABLE orders (%s)", db_under_test->types_columns);
    bt_setup(c->conn, "orders");
    sqlq_test_db_execf(db, "INSERT INTO orders VALUES (1, 'caf\xc3\xa9 \"q\" ''s''', 3, 2.5, TRUE, %s00ff10%s, "
                           "1152921504606846976, NULL)", bo, bc);
    bt_exec(db, "INSERT INTO orders VALUES (2, 'two', -7, -0.25, FALSE, NULL, 5, 'n')");
    sqlq_test_db_execf(db, "INSERT INTO orders VALUES (3, '', 0, 0, FALSE, %s%s, 0, '')", bo, bc);
    bt_case_run_once(c, "orders", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *by = bt_by_key(msgs);
    json_t *m1 = json_array_get(find_key(by, "{\"id\":1}"), 0);
    assert_string_equal(json_string_value(json_object_get(m1, "op")), "insert");
    assert_string_equal(json_string_value(json_object_get(m1, "table")), "orders");
    assert_string_equal(json_string_value(json_object_get(m1, "bridge")), "default");
    assert_int_equal(strlen(json_string_value(json_object_get(m1, "id"))), 32);
    json_t *row = json_object_get(m1, "row");
    assert_int_equal(json_integer_value(json_object_get(row, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(row, "name")), "caf\xc3\xa9 \"q\" 's'");
    assert_int_equal(json_integer_value(json_object_get(row, "qty")), 3);
    assert_true(json_real_value(json_object_get(row, "weight")) == 2.5);
    assert_true(json_is_true(json_object_get(row, "paid")) ||
                json_integer_value(json_object_get(row, "paid")) == 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(row, "data"), "$base64")), "AP8Q");
    assert_string_equal(json_string_value(json_object_get(row, "big")), "1152921504606846976");
    assert_true(json_is_null(json_object_get(row, "note")));
    json_t *row2 = json_object_get(json_array_get(find_key(by, "{\"id\":2}"), 0), "row");
    assert_int_equal(json_integer_value(json_object_get(row2, "qty")), -7);
    json_t *paid2 = json_object_get(row2, "paid");
    assert_true(json_is_false(paid2) || (json_is_integer(paid2) && json_integer_value(paid2) == 0));
    assert_true(json_is_null(json_object_get(row2, "data")));
    assert_string_equal(json_string_value(json_object_get(row2, "note")), "n");
    json_int_t first_version = json_integer_value(json_object_get(m1, "version"));
    json_decref(by);
    json_decref(msgs);
    return first_version;
}

static void test_bridge_types_inserts_updates_deletes(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    json_int_t first_version = insert_common_types(c, db);

    bt_exec(db, "UPDATE orders SET name = 'one', qty = 4 WHERE id = 1");
    bt_exec(db, "DELETE FROM orders WHERE id = 2");
    bt_case_run_once(c, "orders", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    json_t *by = bt_by_key(msgs);
    json_t *u = json_array_get(find_key(by, "{\"id\":1}"), 0);
    assert_string_equal(json_string_value(json_object_get(u, "op")), "update");
    assert_string_equal(json_string_value(json_object_get(json_object_get(u, "row"), "name")), "one");
    assert_true(json_integer_value(json_object_get(u, "version")) > first_version);
    json_t *d = json_array_get(find_key(by, "{\"id\":2}"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "op")), "delete");
    assert_true(json_is_null(json_object_get(d, "row")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "key"), "id")), 2);
    json_decref(by);
    json_decref(msgs);

    /* Nothing new: nothing published. */
    bt_case_expect_none(c, "orders", NULL);
    sqlq_db_close(db);
}

/* The change log collapses a key's changes between two polls into one message; the logical
 * source collapses one transaction's (docs/logical-source.md, Versions) and publishes each later
 * transaction's state with its own, greater version. A case that counts a poll's collapse is
 * skipped under it. */
static void needs_poll_collapse(void)
{
    if (strcmp(sqlq_test_source(), "logical") == 0) {
        print_message("skipped: the logical source collapses a transaction's changes, not a poll's\n");
        skip();
    }
}

/* op is what change tracking reports: a row created since the last delivery is an
 * insert whatever followed, one created and deleted in between is one delete, a delivered row
 * updated is an update. */
static void test_bridge_op_as_change_tracking(void **state)
{
    needs_poll_collapse();
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE ops (id int PRIMARY KEY, v text)", "ops");
    bt_exec(db, "INSERT INTO ops VALUES (1, 'a')");
    bt_exec(db, "UPDATE ops SET v = 'b' WHERE id = 1");
    bt_exec(db, "INSERT INTO ops VALUES (2, 'x')");
    bt_exec(db, "DELETE FROM ops WHERE id = 2");
    bt_case_run_once(c, "ops", NULL);
    bt_exec(db, "UPDATE ops SET v = 'c' WHERE id = 1");
    bt_case_run_once(c, "ops", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *by = bt_by_key(msgs);
    json_t *l1 = json_object_get(by, "{\"id\":1}");
    assert_int_equal(json_array_size(l1), 2);
    json_t *first = json_array_get(l1, 0), *second = json_array_get(l1, 1);
    if (json_integer_value(json_object_get(first, "version")) >
        json_integer_value(json_object_get(second, "version"))) {
        json_t *t = first;
        first = second;
        second = t;
    }
    assert_string_equal(json_string_value(json_object_get(first, "op")), "insert");
    assert_string_equal(json_string_value(json_object_get(json_object_get(first, "row"), "v")), "b");
    assert_string_equal(json_string_value(json_object_get(second, "op")), "update");
    json_t *l2 = json_object_get(by, "{\"id\":2}");
    assert_int_equal(json_array_size(l2), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(l2, 0), "op")), "delete");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

static void test_bridge_changes_between_polls_collapse(void **state)
{
    needs_poll_collapse();
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)", "t");
    bt_exec(db, "INSERT INTO t VALUES (1, 'a')");
    bt_exec(db, "UPDATE t SET v = 'b' WHERE id = 1");
    bt_exec(db, "UPDATE t SET v = 'c' WHERE id = 1");
    bt_exec(db, "INSERT INTO t VALUES (2, 'x')");
    bt_exec(db, "DELETE FROM t WHERE id = 2");
    bt_case_run_once(c, "t", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    json_t *by = bt_by_key(msgs);
    json_t *l1 = find_key(by, "{\"id\":1}");
    assert_int_equal(json_array_size(l1), 1);
    json_t *m = json_array_get(l1, 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "row"), "v")), "c");
    /* created since the last delivery: an insert whatever followed (as change tracking says) */
    assert_string_equal(json_string_value(json_object_get(m, "op")), "insert");
    json_t *l2 = find_key(by, "{\"id\":2}");
    assert_int_equal(json_array_size(l2), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(l2, 0), "op")), "delete");
    assert_int_equal(json_array_size(msgs), 2);
    json_decref(by);
    json_decref(msgs);
    /* delivered rows: an update is an update; deleted and created again: an insert */
    bt_exec(db, "UPDATE t SET v = 'd' WHERE id = 1");
    bt_exec(db, "INSERT INTO t VALUES (3, 'y')");
    bt_case_run_once(c, "t", NULL);
    bt_exec(db, "UPDATE t SET v = 'z' WHERE id = 3");
    bt_exec(db, "DELETE FROM t WHERE id = 3");
    bt_exec(db, "INSERT INTO t VALUES (3, 'again')");
    bt_case_run_once(c, "t", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    by = bt_by_key(msgs);
    l1 = find_key(by, "{\"id\":1}");
    assert_string_equal(json_string_value(json_object_get(json_array_get(l1, 0), "op")), "update");
    json_t *l3 = find_key(by, "{\"id\":3}");
    assert_int_equal(json_array_size(l3), 2);
    json_t *last = bt_latest(l3);
    assert_string_equal(json_string_value(json_object_get(last, "op")), "insert");
    assert_string_equal(json_string_value(json_object_get(json_object_get(last, "row"), "v")), "again");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* A composite key that changes: the old key is deleted and the new one born; a key created and
 * changed since the last run is one delete of the old key (op as change tracking reports it). */
static void test_bridge_composite_key_changes(void **state)
{
    needs_poll_collapse();
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE kc (region varchar(8) NOT NULL, id int NOT NULL, "
                                   "total int, note varchar(20), PRIMARY KEY (region, id))",
                                "kc");
    bt_exec(db, "INSERT INTO kc VALUES ('eu', 1, 1, 'a'), ('eu', 2, 2, NULL), ('us', 1, 3, 'x')");
    bt_exec(db, "UPDATE kc SET total = 9 WHERE region = 'eu' AND id = 2");
    bt_exec(db, "UPDATE kc SET id = 5 WHERE region = 'eu' AND id = 1");
    bt_exec(db, "DELETE FROM kc WHERE region = 'us'");
    bt_case_run_once(c, "kc", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 4);
    json_t *by = bt_by_key(msgs);
    static const char *const deleted[] = {"{\"id\":1,\"region\":\"eu\"}", "{\"id\":1,\"region\":\"us\"}"};
    for (size_t i = 0; i < 2; i++) {
        json_t *d = json_array_get(find_key(by, deleted[i]), 0);
        assert_string_equal(json_string_value(json_object_get(d, "op")), "delete");
        assert_true(json_is_null(json_object_get(d, "row")));
    }
    json_t *two = json_array_get(find_key(by, "{\"id\":2,\"region\":\"eu\"}"), 0);
    assert_string_equal(json_string_value(json_object_get(two, "op")), "insert");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(two, "row"), "total")), 9);
    assert_true(json_is_null(json_object_get(json_object_get(two, "row"), "note")));
    json_t *five = json_array_get(find_key(by, "{\"id\":5,\"region\":\"eu\"}"), 0);
    assert_string_equal(json_string_value(json_object_get(five, "op")), "insert");
    assert_string_equal(json_string_value(json_object_get(json_object_get(five, "row"), "note")), "a");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

static void test_bridge_composite_key_odd_identifiers(void **state)
{
    needs_poll_collapse();
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    const char *ansi[] = {
        "CREATE TABLE \"Odd \"\"Tbl\"\" name\" (\"a b\" VARCHAR(20) NOT NULL, \"K\xc3\xa9y\" INTEGER NOT NULL, "
        "\"x\"\"y\" TEXT, \"select\" INTEGER, PRIMARY KEY (\"a b\", \"K\xc3\xa9y\"))",
        "\"Odd \"\"Tbl\"\" name\"",
        "INSERT INTO \"Odd \"\"Tbl\"\" name\" VALUES ('p', 1, 'one', 1), ('p', 2, 'two', 2), ('q', 1, 'three', 3)",
        "UPDATE \"Odd \"\"Tbl\"\" name\" SET \"x\"\"y\" = 'TWO' WHERE \"a b\" = 'p' AND \"K\xc3\xa9y\" = 2",
        "DELETE FROM \"Odd \"\"Tbl\"\" name\" WHERE \"a b\" = 'q'"};
    char *sql[5];
    for (size_t i = 0; i < 5; i++)
        sql[i] = quoted(ansi[i]);
    const char *table = sql[1];
    bt_exec(db, sql[0]);
    bt_setup(c->conn, table);
    bt_exec(db, sql[2]);
    bt_exec(db, sql[3]);
    bt_exec(db, sql[4]);
    bt_case_run_once(c, table, NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *by = bt_by_key(msgs);
    json_t *m = json_array_get(find_key(by, "{\"K\xc3\xa9y\":2,\"a b\":\"p\"}"), 0);
    assert_string_equal(json_string_value(json_object_get(m, "table")), table);
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "row"), "x\"y")), "TWO");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "row"), "select")), 2);
    json_t *d = json_array_get(find_key(by, "{\"K\xc3\xa9y\":1,\"a b\":\"q\"}"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "op")), "delete");
    json_decref(by);
    json_decref(msgs);
    for (size_t i = 0; i < 5; i++)
        free(sql[i]);
    sqlq_db_close(db);
}

static void insert_many(sqlq_db *db, const char *table, int from, int to, int pad)
{
    char sql[1024];
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    for (int i = from; i < to; i++) {
        snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (%d, '%0*d')", table, i, pad, i);
        bt_exec(db, sql);
    }
    assert_int_equal(sqlq_db_commit(db, &err), SQLQ_OK);
}

static void test_bridge_batch_and_functions_formats(void **state)
{
    needs_poll_collapse();
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE f (id INTEGER PRIMARY KEY, v TEXT)", "f");
    insert_many(db, "f", 0, 250, 600);
    bt_exec(db, "DELETE FROM f WHERE id = 7");
    const char *batch[] = {"--format", "batch", "--max-batch-size", "100", NULL};
    bt_case_run_once(c, "f", batch);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_true(json_array_size(msgs) >= 3 && json_array_size(msgs) < 20); /* packed, ~100 per poll */
    json_t *flat = bt_flatten(msgs);
    assert_int_equal(json_array_size(flat), 250);
    assert_int_equal(bt_distinct_ids(flat), 250);
    json_decref(flat);
    json_decref(msgs);

    /* The same changes on another table, in the functions shape. (A bridge name that joins
     * later replays only what the change log still holds: the first one trimmed it.) */
    bt_exec(db, "CREATE TABLE f2 (id INTEGER PRIMARY KEY, v TEXT)");
    bt_setup(c->conn, "f2");
    insert_many(db, "f2", 0, 250, 600);
    bt_exec(db, "DELETE FROM f2 WHERE id = 7");
    const char *fn[] = {"--format", "functions", NULL};
    bt_case_run_once(c, "f2", fn);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    size_t total = 0, deletes = 0;
    size_t i, j;
    json_t *m, *e;
    json_array_foreach(msgs, i, m)
    {
        assert_true(json_is_array(m));
        json_array_foreach(m, j, e)
        {
            json_int_t op = json_integer_value(json_object_get(e, "Operation"));
            json_t *item = json_object_get(e, "Item");
            assert_true(json_is_object(item));
            if (op == 2) {
                deletes++;
                assert_int_equal(json_object_size(item), 1); /* key fields only */
                assert_int_equal(json_integer_value(json_object_get(item, "id")), 7);
            } else {
                assert_int_equal(op, 0);
                assert_int_equal(strlen(json_string_value(json_object_get(item, "v"))), 600);
            }
            total++;
        }
    }
    assert_int_equal(total, 250);
    assert_int_equal(deletes, 1);
    json_decref(msgs);
    sqlq_db_close(db);
}

static void test_bridge_oversize_truncate_and_poison(void **state)
{
    ctx *c = *state;
    char ddl[128];
    snprintf(ddl, sizeof(ddl), "CREATE TABLE big (id INTEGER PRIMARY KEY, v %s)", db_under_test->long_text);
    sqlq_db *db = bt_case_table(c, ddl, "big");
    exec_with_zeros(db, "INSERT INTO big VALUES (1, 'small'), (2, ", 100000, "), (3, 'small too')");
    bt_case_run_once(c, "big", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *by = bt_by_key(msgs);
    json_t *t = json_array_get(find_key(by, "{\"id\":2}"), 0);
    assert_true(json_is_true(json_object_get(t, "truncated")));
    assert_null(json_object_get(t, "row"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(find_key(by, "{\"id\":3}"), 0),
                                                                          "row"), "v")), "small too");
    json_decref(by);
    json_decref(msgs);

    snprintf(ddl, sizeof(ddl), "CREATE TABLE big2 (id INTEGER PRIMARY KEY, v %s)", db_under_test->long_text);
    bt_exec(db, ddl);
    bt_setup(c->conn, "big2");
    bt_exec(db, "INSERT INTO big2 SELECT * FROM big");
    const char *poison[] = {"--oversize", "poison", NULL};
    bt_case_run_once(c, "big2", poison);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2); /* 1 and 3 */
    json_decref(msgs);
    char pq[80];
    snprintf(pq, sizeof(pq), "%s-poison", c->queue);
    msgs = bt_drain(&c->q, pq, 500, 20000);
    assert_int_equal(json_array_size(msgs), 1);
    json_t *p = json_array_get(msgs, 0);
    assert_non_null(strstr(json_string_value(json_object_get(p, "reason")), "too large"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(p, "message"), "key"), "id")), 2);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* A permanent publish failure for one row only: --max-message-bytes above the service limit lets
 * a 60 KB row through the envelope, and the queue (client or Azurite) refuses it for good with
 * MessageTooLarge. That row must go to poison after max_attempts while the others flow. */
static void test_bridge_permanent_failure_goes_to_poison(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE pf (id INTEGER PRIMARY KEY, v TEXT)", "pf");
    insert_many(db, "pf", 0, 30, 10);
    exec_with_zeros(db, "INSERT INTO pf VALUES (1000, ", 60000, ")");
    insert_many(db, "pf", 30, 60, 10);
    const char *extra[] = {"--max-message-bytes", "200000", "--max-batch-size", "25", NULL};
    bt_case_run_once(c, "pf", extra);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 60);
    json_decref(msgs);
    char pq[80];
    snprintf(pq, sizeof(pq), "%s-poison", c->queue);
    msgs = bt_drain(&c->q, pq, 500, 20000);
    assert_int_equal(json_array_size(msgs), 1);
    json_t *p = json_array_get(msgs, 0);
    const char *reason = json_string_value(json_object_get(p, "reason"));
    assert_non_null(strstr(reason, "publish failed 5 times"));
    json_t *orig = json_object_get(p, "message");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(orig, "key"), "id")), 1000);
    json_decref(msgs);
    /* Released after poisoning: a second run publishes nothing. */
    bt_case_expect_none(c, "pf", extra);
    sqlq_db_close(db);
}

static void test_bridge_sigterm_finishes_and_exits_0(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE s (id INTEGER PRIMARY KEY, v TEXT)", "s");
    pid_t pid = bt_case_start(c, "s");
    insert_many(db, "s", 0, 200, 10);
    json_t *msgs = json_array();
    for (int i = 0; i < 100 && json_array_size(msgs) < 200; i++) {
        json_t *more = bt_drain(&c->q, c->queue, 200, 2000);
        json_array_extend(msgs, more);
        json_decref(more);
    }
    assert_int_equal(json_array_size(msgs), 200);
    json_decref(msgs);
    bt_bridge_stop(pid, c->log);
    sqlq_db_close(db);
}

/* The read-only cursor source: no setup, no triggers; a monotonic column and a soft-delete
 * column. Every row arrives as an update (a cursor cannot tell inserts), soft deletes as deletes. */
static void test_bridge_cursor_source(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE TABLE cur (id INTEGER PRIMARY KEY, v TEXT, ver INTEGER NOT NULL, deleted INTEGER)");
    bt_exec(db, "INSERT INTO cur VALUES (1, 'a', 1, NULL), (2, 'b', 2, NULL), (3, 'c', 3, NULL)");
    /* Safety lag 0: every row at once (SQLite's default; PostgreSQL's waits 10 s for late commits). */
    const char *extra[] = {"--source", "cursor", "--cursor-column", "ver", "--soft-delete-column", "deleted",
                           "--safety-lag-ms", "0", NULL};
    bt_case_run_once(c, "cur", extra);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_decref(msgs);
    bt_exec(db, "UPDATE cur SET v = 'A', ver = 4 WHERE id = 1");
    bt_exec(db, "UPDATE cur SET deleted = 1, ver = 5 WHERE id = 2");
    bt_case_run_once(c, "cur", extra);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    json_t *by = bt_by_key(msgs);
    json_t *u = json_array_get(find_key(by, "{\"id\":1}"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(u, "row"), "v")), "A");
    assert_int_equal(json_integer_value(json_object_get(u, "version")), 4);
    json_t *d = json_array_get(find_key(by, "{\"id\":2}"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "op")), "delete");
    json_decref(by);
    json_decref(msgs);
    /* Without --cursor-column the settings are refused (exit 2). */
    const char *bad[] = {"--db", c->conn, "--table", "cur", "--queue", c->queue, "--once", "--source", "cursor", NULL};
    assert_int_equal(bt_bridge_run(c->q.conn, c->log, bad, 30000, 2), 2);
    sqlq_db_close(db);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bridge_types_inserts_updates_deletes, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_op_as_change_tracking, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_changes_between_polls_collapse, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_composite_key_changes, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_composite_key_odd_identifiers, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_batch_and_functions_formats, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_oversize_truncate_and_poison, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_permanent_failure_goes_to_poison, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_sigterm_finishes_and_exits_0, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_cursor_source, setup, bt_case_teardown),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
