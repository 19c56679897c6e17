/* Every column type of the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb), read
 * through the real ODBC drivers, maps to JSON as docs/types.md says. Each database's types are
 * its own case below (`databases` picks it). */
#include "db.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The query's rows equal the expected JSON array (exactly: keys, types and values). */
static void expect_rows(sqlq_db *db, const char *sql, const char *expected_json)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    if (sqlq_db_query(db, sql, NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("%s: %s", sql, err.message);
    json_error_t jerr;
    json_t *want = json_loads(expected_json, 0, &jerr);
    if (!want)
        fail_msg("bad expected JSON: %s", jerr.text);
    if (!json_equal(rows, want)) {
        char *got = json_dumps(rows, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fail_msg("%s\n got: %s\nwant: %s", sql, got, expected_json);
    }
    json_decref(rows);
    json_decref(want);
}

static void test_sql_types_sqlite(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("sqlite", "types");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, "CREATE TABLE types (id INTEGER PRIMARY KEY, b BOOLEAN, i INTEGER, big BIGINT, "
                "n NUMERIC(38,10), r REAL, t TEXT, bad TEXT, bl BLOB, dt DATE, tm TIME, "
                "ts TIMESTAMP, u UUID, j JSON, small INTEGER, untyped)");
    sqlq_test_db_exec(db, "INSERT INTO types VALUES (1, 1, 4611686018427387904, -9223372036854775808, "
                "'1234.5', 2.5, 'žluťoučký kůň 🐴', CAST(X'61FF62' AS TEXT), X'00FF10', "
                "'2024-02-29', '13:14:15.250', '2024-02-29 13:14:15.123', "
                "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": [1, 2]}', -42, 7)");
    sqlq_test_db_exec(db, "INSERT INTO types (id, b, r) VALUES (2, 0, -1e300)");
    sqlq_test_db_exec(db, "INSERT INTO types (id) VALUES (3)");
    expect_rows(
        db, "SELECT * FROM types ORDER BY id",
        "[{\"id\": 1, \"b\": true, \"i\": \"4611686018427387904\","
        " \"big\": \"-9223372036854775808\", \"n\": \"1234.5\", \"r\": 2.5,"
        " \"t\": \"žluťoučký kůň 🐴\", \"bad\": {\"$base64\": \"Yf9i\"},"
        " \"bl\": {\"$base64\": \"AP8Q\"}, \"dt\": \"2024-02-29\", \"tm\": \"13:14:15.250\","
        " \"ts\": \"2024-02-29T13:14:15.123\", \"u\": \"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\","
        " \"j\": \"{\\\"a\\\": [1, 2]}\", \"small\": -42, \"untyped\": 7},"
        " {\"id\": 2, \"b\": false, \"i\": null, \"big\": null, \"n\": null, \"r\": -1e300,"
        " \"t\": null, \"bad\": null, \"bl\": null, \"dt\": null, \"tm\": null, \"ts\": null,"
        " \"u\": null, \"j\": null, \"small\": null, \"untyped\": null},"
        " {\"id\": 3, \"b\": null, \"i\": null, \"big\": null, \"n\": null, \"r\": null,"
        " \"t\": null, \"bad\": null, \"bl\": null, \"dt\": null, \"tm\": null, \"ts\": null,"
        " \"u\": null, \"j\": null, \"small\": null, \"untyped\": null}]");
    /* Expressions have no declared type: sqliteodbc guesses from the value. */
    expect_rows(
        db,
        "SELECT 1 AS one, 'x' AS s, 2.5 AS f, X'00' AS b, NULL AS n, "
        "4611686018427387904 AS big",
        "[{\"one\": 1, \"s\": \"x\", \"f\": 2.5, \"b\": {\"$base64\": \"AA==\"}, \"n\": null,"
        " \"big\": \"4611686018427387904\"}]");
    /* Dynamic typing: whatever a column holds comes out as what it is. */
    sqlq_test_db_exec(db, "INSERT INTO types (id, i, r) VALUES (4, 'not a number', 'text in real')");
    expect_rows(db, "SELECT i, r FROM types WHERE id = 4",
                "[{\"i\": \"not a number\", \"r\": \"text in real\"}]");
    sqlq_db_close(db);
    free(conn);
}

static void test_sql_types_postgres(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("postgres", "types");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, "CREATE TABLE types (id int PRIMARY KEY, b boolean, i2 smallint, i4 integer, "
                "i8 bigint, n numeric(38,10), r real, d double precision, t text, vc varchar(20), "
                "by bytea, dt date, tm time, tmtz timetz, ts timestamp, tstz timestamptz, u uuid, "
                "j json, jb jsonb, iv interval)");
    sqlq_test_db_exec(db, "INSERT INTO types VALUES (1, true, -32768, 2147483647, 4611686018427387904, "
                "1234567890123456789012345678.1234567891, 2.5, 0.1, 'žluťoučký kůň 🐴', 'abc', "
                "'\\x00ff10', '2024-02-29', '13:14:15.25', '13:14:15+02', "
                "'2024-02-29 13:14:15.123456', '2024-02-29 15:14:15.5+02', "
                "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{\"a\": [1, 2]}', '{\"a\": [1, 2]}', "
                "'1 day 2 hours')");
    sqlq_test_db_exec(db, "INSERT INTO types (id, b, i8, n, d) VALUES (2, false, -9223372036854775808, "
                "-0.0000000001, 1e300)");
    sqlq_test_db_exec(db, "INSERT INTO types (id) VALUES (3)");
    expect_rows(
        db, "SELECT * FROM types ORDER BY id",
        "[{\"id\": 1, \"b\": true, \"i2\": -32768, \"i4\": 2147483647,"
        " \"i8\": \"4611686018427387904\", \"n\": \"1234567890123456789012345678.1234567891\","
        " \"r\": 2.5, \"d\": 0.1, \"t\": \"žluťoučký kůň 🐴\", \"vc\": \"abc\","
        " \"by\": {\"$base64\": \"AP8Q\"}, \"dt\": \"2024-02-29\", \"tm\": \"13:14:15.25\","
        " \"tmtz\": \"13:14:15+02\", \"ts\": \"2024-02-29T13:14:15.123456\","
        " \"tstz\": \"2024-02-29T13:14:15.5+00:00\","
        " \"u\": \"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\", \"j\": \"{\\\"a\\\": [1, 2]}\","
        " \"jb\": \"{\\\"a\\\": [1, 2]}\", \"iv\": \"1 day 02:00:00\"},"
        " {\"id\": 2, \"b\": false, \"i2\": null, \"i4\": null, \"i8\": \"-9223372036854775808\","
        " \"n\": \"-0.0000000001\", \"r\": null, \"d\": 1e300, \"t\": null, \"vc\": null,"
        " \"by\": null, \"dt\": null, \"tm\": null, \"tmtz\": null, \"ts\": null, \"tstz\": null,"
        " \"u\": null, \"j\": null, \"jb\": null, \"iv\": null},"
        " {\"id\": 3, \"b\": null, \"i2\": null, \"i4\": null, \"i8\": null, \"n\": null,"
        " \"r\": null, \"d\": null, \"t\": null, \"vc\": null, \"by\": null, \"dt\": null,"
        " \"tm\": null, \"tmtz\": null, \"ts\": null, \"tstz\": null, \"u\": null, \"j\": null,"
        " \"jb\": null, \"iv\": null}]");
    /* A bytea and a text far larger than one SQLGetData piece arrive whole. */
    expect_rows(db,
                "SELECT length(repeat('žluť', 30000)) AS n, "
                "md5(repeat('žluť', 30000)) = md5(x) AS same "
                "FROM (SELECT repeat('žluť', 30000) AS x) s",
                "[{\"n\": 120000, \"same\": true}]");
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    assert_int_equal(sqlq_db_query(db,
                                   "SELECT repeat('žluť', 30000) AS t, "
                                   "decode(repeat('00ff', 30000), 'hex') AS b",
                                   NULL, 0, &rows, &err),
                     SQLQ_OK);
    json_t *row = json_array_get(rows, 0);
    assert_int_equal(strlen(json_string_value(json_object_get(row, "t"))), 180000);
    const char *b64 = json_string_value(json_object_get(json_object_get(row, "b"), "$base64"));
    assert_int_equal(strlen(b64), 80000);
    assert_memory_equal(b64, "AP8A/wD/", 8);
    json_decref(rows);
    sqlq_db_close(db);
    free(conn);
}

static void test_sql_types_mariadb(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("mariadb", "types");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, "CREATE TABLE types (id int PRIMARY KEY, bt bit(1), b tinyint(1), "
                          "i2 smallint, i4 int, i8 bigint, u8 bigint unsigned, n decimal(38,10), "
                          "r float, d double, t text, vc varchar(20), vb varbinary(16), dt date, "
                          "tm time(2), ts datetime(6), tz timestamp(6) NULL, j json, "
                          "e enum('a','b'), y year) DEFAULT CHARSET=utf8mb4");
    sqlq_test_db_exec(db, "INSERT INTO types VALUES (1, b'1', 1, -32768, 2147483647, "
                          "4611686018427387904, 18446744073709551615, "
                          "1234567890123456789012345678.1234567891, 2.5, 0.1, "
                          "'žluťoučký kůň 🐴', 'abc', 0x00FF10, '2024-02-29', '13:14:15.25', "
                          "'2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.5', "
                          "'{\"a\": [1, 2]}', 'b', 2024)");
    sqlq_test_db_exec(db, "INSERT INTO types (id, bt, b, i8, n, d) VALUES (2, b'0', 0, "
                          "-9223372036854775808, -0.0000000001, 1e300)");
    sqlq_test_db_exec(db, "INSERT INTO types (id) VALUES (3)");
    /* TINYINT(1) read here is the number it holds (change, cursor and backfill messages make 0
     * and 1 true and false: test_bridge_types.c). */
    expect_rows(
        db, "SELECT * FROM types ORDER BY id",
        "[{\"id\": 1, \"bt\": true, \"b\": 1, \"i2\": -32768, \"i4\": 2147483647,"
        " \"i8\": \"4611686018427387904\", \"u8\": \"18446744073709551615\","
        " \"n\": \"1234567890123456789012345678.1234567891\", \"r\": 2.5, \"d\": 0.1,"
        " \"t\": \"žluťoučký kůň 🐴\", \"vc\": \"abc\", \"vb\": {\"$base64\": \"AP8Q\"},"
        " \"dt\": \"2024-02-29\", \"tm\": \"13:14:15.25\", \"ts\": \"2024-02-29T13:14:15.123456\","
        " \"tz\": \"2024-02-29T13:14:15.500000+00:00\", \"j\": \"{\\\"a\\\": [1, 2]}\","
        " \"e\": \"b\", \"y\": 2024},"
        " {\"id\": 2, \"bt\": false, \"b\": 0, \"i2\": null, \"i4\": null,"
        " \"i8\": \"-9223372036854775808\", \"u8\": null, \"n\": \"-0.0000000001\", \"r\": null,"
        " \"d\": 1e300, \"t\": null, \"vc\": null, \"vb\": null, \"dt\": null, \"tm\": null,"
        " \"ts\": null, \"tz\": null, \"j\": null, \"e\": null, \"y\": null},"
        " {\"id\": 3, \"bt\": null, \"b\": null, \"i2\": null, \"i4\": null, \"i8\": null,"
        " \"u8\": null, \"n\": null, \"r\": null, \"d\": null, \"t\": null, \"vc\": null,"
        " \"vb\": null, \"dt\": null, \"tm\": null, \"ts\": null, \"tz\": null, \"j\": null,"
        " \"e\": null, \"y\": null}]");
    /* A blob and a text far larger than one SQLGetData piece arrive whole. */
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    assert_int_equal(sqlq_db_query(db,
                                   "SELECT REPEAT('žluť', 30000) AS t, "
                                   "UNHEX(REPEAT('00ff', 30000)) AS b",
                                   NULL, 0, &rows, &err),
                     SQLQ_OK);
    json_t *row = json_array_get(rows, 0);
    assert_int_equal(strlen(json_string_value(json_object_get(row, "t"))), 180000);
    const char *b64 = json_string_value(json_object_get(json_object_get(row, "b"), "$base64"));
    assert_int_equal(strlen(b64), 80000);
    assert_memory_equal(b64, "AP8A/wD/", 8);
    json_decref(rows);
    sqlq_db_close(db);
    free(conn);
}

/* Each database's case. */
typedef struct database {
    const char *name;
    CMUnitTestFunction test;
} database;

static const database databases[] = {
    {"sqlite", test_sql_types_sqlite},
    {"postgres", test_sql_types_postgres},
    {"mariadb", test_sql_types_mariadb},
};

int main(void)
{
    const database *d = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        {d->name, d->test, NULL, NULL, NULL},
    };
    return cmocka_run_group_tests_name(d->name, tests, NULL, NULL);
}
