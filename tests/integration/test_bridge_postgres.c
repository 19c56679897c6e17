/* `sqlq bridge` on PostgreSQL through psqlODBC, publishing to Azurite: what only PostgreSQL has
 * (the scenarios every database runs are in test_bridge_scenarios.c): its own column types, a
 * schema-qualified table with a composite key, writers committing out of order (a long
 * transaction holds an early transaction id while later ones commit), connections killed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_support.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef bt_case ctx;

static int setup(void **state)
{
    *state = bt_case_new(sqlq_test_pg_create_db("bridge"), "pg");
    return 0;
}

static const char *field_str(json_t *row, const char *k)
{
    const char *s = json_string_value(json_object_get(row, k));
    if (!s)
        fail_msg("column %s is not a string", k);
    return s;
}

/* The types only PostgreSQL has here (the common ones: test_bridge_scenarios.c): numeric as exact
 * text, timestamptz, date, uuid, and numeric after an update. */
static void test_bridge_pg_column_types(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(
        c, "CREATE TABLE items (id bigint PRIMARY KEY, n numeric(12,3), ts timestamptz, d date, u uuid)", "items");
    bt_exec(db, "INSERT INTO items VALUES (1, 12.345, '2024-05-01 12:00:00+00', '2024-05-01', "
                "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')");
    bt_exec(db, "INSERT INTO items (id) VALUES (2)");
    bt_case_run_once(c, "items", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    json_t *by = bt_by_key(msgs);
    json_t *l1 = json_object_get(by, "{\"id\":1}");
    assert_non_null(l1);
    json_t *row = json_object_get(json_array_get(l1, 0), "row");
    assert_string_equal(field_str(row, "n"), "12.345");
    assert_true(strncmp(field_str(row, "ts"), "2024-05-01", 10) == 0);
    assert_string_equal(field_str(row, "d"), "2024-05-01");
    assert_string_equal(field_str(row, "u"), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    json_t *row2 = json_object_get(json_array_get(json_object_get(by, "{\"id\":2}"), 0), "row");
    assert_true(json_is_null(json_object_get(row2, "n")));
    json_decref(by);
    json_decref(msgs);

    bt_exec(db, "UPDATE items SET n = 0.5 WHERE id = 1");
    bt_case_run_once(c, "items", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 1);
    json_t *u = json_array_get(msgs, 0);
    assert_string_equal(json_string_value(json_object_get(u, "op")), "update");
    assert_string_equal(field_str(json_object_get(u, "row"), "n"), "0.500");
    json_decref(msgs);
    sqlq_db_close(db);
}

static void test_bridge_pg_schema_composite_key(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE SCHEMA \"Sales Dept\"");
    bt_exec(db, "CREATE TABLE \"Sales Dept\".\"Order Lines\" (\"order\" int, line int, \"Qty\" int, "
                "PRIMARY KEY (\"order\", line))");
    const char *table = "\"Sales Dept\".\"Order Lines\"";
    bt_setup(c->conn, table);
    bt_exec(db, "INSERT INTO \"Sales Dept\".\"Order Lines\" VALUES (1, 1, 5), (1, 2, 6), (2, 1, 7)");
    bt_exec(db, "DELETE FROM \"Sales Dept\".\"Order Lines\" WHERE \"order\" = 1 AND line = 2");
    bt_case_run_once(c, table, NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *by = bt_by_key(msgs);
    json_t *m = json_array_get(json_object_get(by, "{\"line\":1,\"order\":2}"), 0);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "table")), table);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "row"), "Qty")), 7);
    json_t *d = json_array_get(json_object_get(by, "{\"line\":2,\"order\":1}"), 0);
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "op")), "delete");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* Collect messages until `want` distinct keys have arrived or max_ms passes. */
static json_t *collect_keys(ctx *c, size_t want, int max_ms, json_t *into)
{
    for (int waited = 0; waited < max_ms; waited += 300) {
        json_t *more = bt_drain(&c->q, c->queue, 300, 2000);
        json_array_extend(into, more);
        json_decref(more);
        json_t *by = bt_by_key(into);
        size_t n = json_object_size(by);
        json_decref(by);
        if (n >= want)
            break;
    }
    return into;
}

static void test_bridge_pg_out_of_order_commits_not_lost(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE ooo (id int PRIMARY KEY, v text)", "ooo");
    pid_t pid = bt_case_start(c, "ooo");

    /* The long transaction takes its transaction id first (the insert), then others commit. */
    sqlq_db *slow = bt_db(c->conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(slow, &err), SQLQ_OK);
    bt_exec(slow, "INSERT INTO ooo VALUES (1, 'early xid, late commit')");
    for (int i = 2; i <= 40; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "INSERT INTO ooo VALUES (%d, 'quick')", i);
        bt_exec(db, sql);
    }
    bt_exec(db, "UPDATE ooo SET v = 'quick, updated' WHERE id = 2");
    /* The bridge must not get ahead of the open transaction in a way that skips it later. */
    bt_sleep_ms(1500);
    assert_int_equal(sqlq_db_commit(slow, &err), SQLQ_OK);
    for (int i = 41; i <= 60; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "INSERT INTO ooo VALUES (%d, 'after')", i);
        bt_exec(db, sql);
    }
    json_t *msgs = collect_keys(c, 60, 30000, json_array());
    json_t *by = bt_by_key(msgs);
    assert_int_equal(json_object_size(by), 60);
    json_t *late = bt_latest(json_object_get(by, "{\"id\":1}"));
    assert_non_null(late);
    assert_string_equal(json_string_value(json_object_get(json_object_get(late, "row"), "v")), "early xid, late commit");
    json_t *two = bt_latest(json_object_get(by, "{\"id\":2}"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(two, "row"), "v")), "quick, updated");
    json_decref(by);
    json_decref(msgs);
    bt_bridge_stop(pid, c->log);
    sqlq_db_close(slow);
    sqlq_db_close(db);
}

/* The database drops the bridge's connections (pg_terminate_backend, as a failover or a restart
 * would): the bridge reconnects with back-off and resumes; nothing is lost. */
static void test_bridge_pg_connection_killed_reconnects(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE rc (id int PRIMARY KEY, v text)", "rc");
    pid_t pid = bt_case_start(c, "rc");
    char sql[256];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 20; i++) {
            snprintf(sql, sizeof(sql), "INSERT INTO rc VALUES (%d, 'round %d')", round * 100 + i, round);
            bt_exec(db, sql);
        }
        bt_sleep_ms(400);
        bt_exec(db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()");
    }
    json_t *msgs = collect_keys(c, 60, 30000, json_array());
    json_t *by = bt_by_key(msgs);
    size_t keys = json_object_size(by);
    if (keys != 60)
        bt_print_log(c->log);
    assert_int_equal(keys, 60);
    json_decref(by);
    json_decref(msgs);
    assert_int_equal(sqlq_test_sh("grep -q 'event=db_reconnected' '%s'", c->log), 0);
    bt_bridge_stop(pid, c->log);
    sqlq_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bridge_pg_column_types, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_pg_schema_composite_key, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_pg_out_of_order_commits_not_lost, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_pg_connection_killed_reconnects, setup,
                                        bt_case_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
