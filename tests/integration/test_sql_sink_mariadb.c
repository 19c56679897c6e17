/* The --sql sink against a real MariaDB through Connector/ODBC (INSERT … ON DUPLICATE KEY
 * UPDATE): row, batch and Functions shapes on a composite key with DECIMAL, TINYINT(1)
 * boolean, utf8mb4 text with a 4-byte character, VARBINARY ($base64) and DATETIME(3) values
 * give the expected rows, applying everything again changes nothing; the version guard skips
 * an older change delivered late and keeps a delete from being undone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "db.h"
#include "sql_sink.h"
#include "testdb.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const messages[] = {
    "{\"id\":\"a1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":\"eu\",\"id\":1},"
    "\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"19.90\",\"paid\":true,"
    "\"note\":\"it's \\\"quoted\\\" \\\\ ; DROP TABLE orders; --\",\"data\":{\"$base64\":\"AAEC/w==\"},"
    "\"placed\":\"2024-05-01T12:00:00.123Z\"},\"version\":1,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"id\":\"a2\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":\"us\",\"id\":1},"
    "\"row\":{\"region\":\"us\",\"id\":1,\"total\":\"1.00\",\"paid\":0,\"note\":null,"
    "\"data\":null,\"placed\":null},\"version\":2,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"id\":\"a3\",\"op\":\"update\",\"table\":\"orders\",\"key\":{\"region\":\"eu\",\"id\":1},"
    "\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
    "\"note\":\"\\u017dlu\\u0165ou\\u010dk\\u00fd \\ud83d\\ude00\",\"data\":{\"$base64\":\"AAEC/w==\"},"
    "\"placed\":\"2024-05-01T12:00:00.123Z\"},\"version\":3,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"changes\":[{\"id\":\"b1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":"
    "\"eu\",\"id\":2},\"row\":{\"region\":\"eu\",\"id\":2,\"total\":\"3.50\",\"paid\":true,"
    "\"note\":\"two\",\"data\":null,\"placed\":null},\"version\":4,\"bridge\":\"default\","
    "\"ts\":\"x\"},{\"id\":\"b2\",\"op\":\"delete\",\"table\":\"orders\",\"key\":{\"region\":"
    "\"us\",\"id\":1},\"row\":null,\"version\":5,\"bridge\":\"default\",\"ts\":\"x\"}]}",
    "[{\"Operation\":0,\"Item\":{\"region\":\"eu\",\"id\":3,\"total\":\"9.99\",\"paid\":true,"
    "\"note\":\"three\",\"data\":null,\"placed\":null}},"
    "{\"Operation\":1,\"Item\":{\"total\":\"5.50\",\"id\":2,\"region\":\"eu\",\"paid\":0,"
    "\"note\":\"two again\",\"data\":null,\"placed\":null}},"
    "{\"Operation\":2,\"Item\":{\"region\":\"eu\",\"id\":3}}]",
};
#define NMESSAGES (sizeof(messages) / sizeof(messages[0]))

static void exec_sql(const char *conn, const char *sql)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, sql);
    sqlq_db_close(db);
}

static char *rows_text(const char *conn, const char *select)
{
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    assert_int_equal(sqlq_db_connect(conn, &db, &err), SQLQ_OK);
    if (sqlq_db_query(db, select, NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("%s: %s", select, err.message);
    sqlq_db_close(db);
    char *s = json_dumps(rows, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rows);
    return s;
}

static void apply(sqlq_sql_sink *s, const char *msg)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_apply_once(s, msg, strlen(msg), &err) != SQLQ_OK)
        fail_msg("%s: %s (sqlstate %s)", msg, err.message, err.sqlstate);
}

static void test_sql_sink_mariadb_rows(void **state)
{
    (void)state;
    char *conn = sqlq_test_maria_create_db("sink");
    exec_sql(conn, "CREATE TABLE orders (region varchar(8), id int, total decimal(10,2), "
                   "paid tinyint(1), note text, data varbinary(16), placed datetime(3), "
                   "PRIMARY KEY (region, id)) DEFAULT CHARSET=utf8mb4");
    static const char select[] =
        "SELECT region, id, CAST(total AS CHAR) AS total, paid, note, HEX(data) AS data, "
        "CAST(placed AS CHAR) AS placed FROM orders ORDER BY region, id";
    static const char want[] =
        "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
        "\"note\":\"\\u017dlu\\u0165ou\\u010dk\\u00fd \\ud83d\\ude00\",\"data\":\"000102FF\","
        "\"placed\":\"2024-05-01 12:00:00.123\"},"
        "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":0,"
        "\"note\":\"two again\",\"data\":null,\"placed\":null}]";
    json_t *want_rows = json_loads(want, 0, NULL);
    assert_non_null(want_rows);
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_create(conn, "orders", "sqlq_sink_versions", &s, &err) != SQLQ_OK)
        fail_msg("create: %s", err.message);
    for (int round = 0; round < 2; round++) { /* the second round changes nothing */
        for (size_t i = 0; i < NMESSAGES; i++)
            apply(s, messages[i]);
        char *got = rows_text(conn, select);
        json_t *got_rows = json_loads(got, 0, NULL);
        if (!json_equal(got_rows, want_rows))
            fail_msg("round %d: rows\n  got  %s\n  want %s", round, got, want);
        json_decref(got_rows);
        free(got);
    }
    /* the quoted note of the first message survived as text (no backslash escapes) */
    exec_sql(conn, "DELETE FROM sqlq_sink_versions");
    apply(s, messages[0]);
    char *first = rows_text(conn, "SELECT note FROM orders WHERE region = 'eu' AND id = 1");
    assert_string_equal(first, "[{\"note\":\"it's \\\"quoted\\\" \\\\ ; DROP TABLE orders; --\"}]");
    free(first);
    sqlq_sql_sink_destroy(s);
    json_decref(want_rows);
    free(conn);
}

/* Out of order: an older update arriving late is skipped, a delete is not undone by a late
 * insert (version guard); the same version again is not newer. */
static void test_sql_sink_mariadb_version_guard(void **state)
{
    (void)state;
    char *conn = sqlq_test_maria_create_db("sinkver");
    exec_sql(conn, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_create(conn, "t", "sqlq_sink_versions", &s, &err) != SQLQ_OK)
        fail_msg("create: %s", err.message);
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"new\"},\"version\":10}");
    apply(s, "{\"op\":\"update\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"old\"},\"version\":5}");
    apply(s, "{\"op\":\"update\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"same\"},\"version\":10}");
    char *got = rows_text(conn, "SELECT v FROM t");
    assert_string_equal(got, "[{\"v\":\"new\"}]");
    free(got);
    apply(s, "{\"op\":\"delete\",\"key\":{\"id\":1},\"row\":null,\"version\":11}");
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"late\"},\"version\":9}");
    got = rows_text(conn, "SELECT v FROM t");
    assert_string_equal(got, "[]");
    free(got);
    sqlq_sql_sink_destroy(s);
    free(conn);
}

/* ISO 8601 times with an offset land as their UTC wall time (MariaDB refuses offsets): across
 * a leap day and a year; a time without an offset is taken as it is. */
static void test_sql_sink_mariadb_time_offsets(void **state)
{
    (void)state;
    char *conn = sqlq_test_maria_create_db("sinktime");
    exec_sql(conn, "CREATE TABLE ts (id int PRIMARY KEY, at datetime(6))");
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_create(conn, "ts", NULL, &s, &err) != SQLQ_OK)
        fail_msg("create: %s", err.message);
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":{\"id\":1,"
             "\"at\":\"2024-03-01T01:30:00.5+02:00\"},\"version\":1}");
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":2},\"row\":{\"id\":2,"
             "\"at\":\"2023-12-31T23:00:00-0130\"},\"version\":2}");
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":3},\"row\":{\"id\":3,"
             "\"at\":\"2024-05-01 12:00:00.123456\"},\"version\":3}");
    char *got = rows_text(conn, "SELECT id, CAST(at AS CHAR) AS at FROM ts ORDER BY id");
    assert_string_equal(got, "[{\"id\":1,\"at\":\"2024-02-29 23:30:00.500000\"},"
                             "{\"id\":2,\"at\":\"2024-01-01 00:30:00.000000\"},"
                             "{\"id\":3,\"at\":\"2024-05-01 12:00:00.123456\"}]");
    free(got);
    sqlq_sql_sink_destroy(s);
    free(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sql_sink_mariadb_rows),
        cmocka_unit_test(test_sql_sink_mariadb_version_guard),
        cmocka_unit_test(test_sql_sink_mariadb_time_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
