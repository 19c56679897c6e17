/* `sqlq bridge` publishing each database's own column types to Azurite, on the database
 * $SQLQ_TEST_DATABASE names: the rows of an insert and of an update arrive as docs/types.md says
 * (the common types every database shares: test_bridge_scenarios.c). What differs is the
 * database's entry in `databases` below: its table, its rows and the messages they give. */
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

/* A database's own types: table ty (key id) created, two rows inserted, one updated, and the
 * rows the messages carry (JSON objects). */
typedef struct database {
    const char *name;
    const char *create;
    const char *insert;   /* rows 1 and 2 */
    const char *want_1;   /* row 1 as inserted */
    const char *want_2;   /* row 2 (the NULLs) */
    const char *update;   /* a change of row 1 */
    const char *want_upd; /* row 1 after it */
} database;

static const database databases[] = {
    {"sqlite",
     /* dynamic types: the declared type and what the value is decide (docs/types.md, SQLite) */
     "CREATE TABLE ty (id INTEGER PRIMARY KEY, big INTEGER, r REAL, dt DATETIME, n NUMERIC, "
     "t TEXT, b BLOB)",
     "INSERT INTO ty VALUES (1, 4611686018427387904, 0.1 + 0.2, '2024-02-29 13:14:15.123', "
     "'12.5', 'text in '' quotes', x'00ff'), (2, NULL, NULL, NULL, NULL, NULL, NULL)",
     "{\"id\":1,\"big\":\"4611686018427387904\",\"r\":0.30000000000000004,"
     "\"dt\":\"2024-02-29T13:14:15.123\",\"n\":\"12.5\",\"t\":\"text in ' quotes\","
     "\"b\":{\"$base64\":\"AP8=\"}}",
     "{\"id\":2,\"big\":null,\"r\":null,\"dt\":null,\"n\":null,\"t\":null,\"b\":null}",
     "UPDATE ty SET big = 5, dt = 'not a date' WHERE id = 1",
     "{\"id\":1,\"big\":5,\"r\":0.30000000000000004,\"dt\":\"not a date\",\"n\":\"12.5\","
     "\"t\":\"text in ' quotes\",\"b\":{\"$base64\":\"AP8=\"}}"},
    {"postgres",
     /* numeric as exact text, timestamptz in UTC, date, uuid */
     "CREATE TABLE ty (id bigint PRIMARY KEY, n numeric(12,3), ts timestamptz, d date, u uuid)",
     "INSERT INTO ty VALUES (1, 12.345, '2024-05-01 12:00:00+00', '2024-05-01', "
     "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), (2, NULL, NULL, NULL, NULL)",
     "{\"id\":1,\"n\":\"12.345\",\"ts\":\"2024-05-01T12:00:00+00:00\",\"d\":\"2024-05-01\","
     "\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"}",
     "{\"id\":2,\"n\":null,\"ts\":null,\"d\":null,\"u\":null}",
     "UPDATE ty SET n = 0.5 WHERE id = 1",
     "{\"id\":1,\"n\":\"0.500\",\"ts\":\"2024-05-01T12:00:00+00:00\",\"d\":\"2024-05-01\","
     "\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"}"},
    {"mariadb",
     /* BIT(1) and TINYINT(1) booleans, TIMESTAMP in UTC, DATETIME, JSON as text, binary,
      * BIGINT UNSIGNED, ENUM, exact DECIMAL(30,10), utf8mb4 (a 4-byte character) */
     "CREATE TABLE ty (id int PRIMARY KEY, bt bit(1), b tinyint(1), n tinyint(1), t tinyint, "
     "ts timestamp(3) NULL, dt datetime(6), j json, vb varbinary(8), u bigint unsigned, "
     "e enum('a','b'), total decimal(30,10), note text) DEFAULT CHARSET=utf8mb4",
     "INSERT INTO ty VALUES (1, b'1', 1, 7, 1, '2024-05-01 12:00:00.5', "
     "'2024-02-29 23:59:59.123456', '{\"a\": [1, 2]}', 0x00FF10, 18446744073709551615, 'b', "
     "12345678901234567890.0123456789, 'a \xf0\x9f\x98\x80'), "
     "(2, b'0', 0, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL)",
     "{\"id\":1,\"bt\":true,\"b\":true,\"n\":7,\"t\":1,\"ts\":\"2024-05-01T12:00:00.500+00:00\","
     "\"dt\":\"2024-02-29T23:59:59.123456\",\"j\":\"{\\\"a\\\": [1, 2]}\","
     "\"vb\":{\"$base64\":\"AP8Q\"},\"u\":\"18446744073709551615\",\"e\":\"b\","
     "\"total\":\"12345678901234567890.0123456789\",\"note\":\"a \xf0\x9f\x98\x80\"}",
     "{\"id\":2,\"bt\":false,\"b\":false,\"n\":null,\"t\":0,\"ts\":null,\"dt\":null,\"j\":null,"
     "\"vb\":null,\"u\":0,\"e\":null,\"total\":null,\"note\":null}",
     "UPDATE ty SET total = 9.5 WHERE id = 1",
     "{\"id\":1,\"bt\":true,\"b\":true,\"n\":7,\"t\":1,\"ts\":\"2024-05-01T12:00:00.500+00:00\","
     "\"dt\":\"2024-02-29T23:59:59.123456\",\"j\":\"{\\\"a\\\": [1, 2]}\","
     "\"vb\":{\"$base64\":\"AP8Q\"},\"u\":\"18446744073709551615\",\"e\":\"b\","
     "\"total\":\"9.5000000000\",\"note\":\"a \xf0\x9f\x98\x80\"}"},
};

static const database *db_under_test;

static int setup(void **state)
{
    *state = bt_case_new(sqlq_test_create_db(db_under_test->name, "types"), "types");
    return 0;
}

/* The one message of key {"id":id} in by: its op is op and its row equals want (JSON). */
static void expect_row(json_t *by, int id, const char *op, const char *want)
{
    char key[32];
    snprintf(key, sizeof(key), "{\"id\":%d}", id);
    json_t *l = json_object_get(by, key);
    if (json_array_size(l) != 1)
        fail_msg("%zu messages for key %s", json_array_size(l), key);
    json_t *m = json_array_get(l, 0);
    assert_string_equal(json_string_value(json_object_get(m, "op")), op);
    json_t *want_row = json_loads(want, 0, NULL);
    assert_non_null(want_row);
    json_t *row = json_object_get(m, "row");
    if (!json_equal(row, want_row)) {
        char *got = json_dumps(row, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fail_msg("%s: key %s\n  got  %s\n  want %s", db_under_test->name, key, got, want);
    }
    json_decref(want_row);
}

static void test_bridge_own_column_types(void **state)
{
    bt_case *c = *state;
    const database *d = db_under_test;
    sqlq_db *db = bt_case_table(c, d->create, "ty");
    bt_exec(db, d->insert);
    bt_case_run_once(c, "ty", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    json_t *by = bt_by_key(msgs);
    expect_row(by, 1, "insert", d->want_1);
    expect_row(by, 2, "insert", d->want_2);
    json_decref(by);
    json_decref(msgs);

    bt_exec(db, d->update);
    bt_case_run_once(c, "ty", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 1);
    by = bt_by_key(msgs);
    expect_row(by, 1, "update", d->want_upd);
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bridge_own_column_types, setup, bt_case_teardown),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
