/* cursor_column: which columns may serve as a cursor, and why not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cursor_column.h"

#include <sql.h>
#include <sqlext.h>
#include <string.h>

static sqlq_column col(const char *type, short sql_type, bool nullable, bool in_key)
{
    sqlq_column c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)(uintptr_t) "c";
    c.type = (char *)(uintptr_t)type;
    c.sql_type = sql_type;
    c.nullable = nullable;
    c.in_key = in_key;
    return c;
}

static void expect_refused(const sqlq_dialect *d, sqlq_column c, const char *fragment)
{
    sqlq_value_class v;
    const char *why = sqlq_cursor_column_unsafe(d, &c, &v);
    assert_non_null(why);
    assert_non_null(strstr(why, fragment));
}

static void expect_ok(const sqlq_dialect *d, sqlq_column c, sqlq_value_class cls)
{
    sqlq_value_class v;
    assert_null(sqlq_cursor_column_unsafe(d, &c, &v));
    assert_int_equal(v, cls);
}

static void test_cursor_column_safe_types(void **state)
{
    (void)state;
    expect_ok(&sqlq_dialect_postgres, col("int8", SQL_BIGINT, false, false), SQLQ_VALUE_INT);
    expect_ok(&sqlq_dialect_postgres, col("timestamptz", SQL_TYPE_TIMESTAMP, false, false),
              SQLQ_VALUE_TIMESTAMPTZ);
    expect_ok(&sqlq_dialect_mssql, col("datetime2", SQL_TYPE_TIMESTAMP, false, false),
              SQLQ_VALUE_TIMESTAMP);
    expect_ok(&sqlq_dialect_mssql, col("timestamp", SQL_BINARY, false, false),
              SQLQ_VALUE_ROWVERSION);
    /* SQLite reports INTEGER PRIMARY KEY as nullable, but the rowid cannot be NULL. */
    expect_ok(&sqlq_dialect_sqlite, col("integer", SQL_INTEGER, true, true), SQLQ_VALUE_INT);
}

static void test_cursor_column_unsafe_types(void **state)
{
    (void)state;
    expect_refused(&sqlq_dialect_postgres, col("timestamptz", SQL_TYPE_TIMESTAMP, true, false),
                   "nullable");
    expect_refused(&sqlq_dialect_postgres, col("float8", SQL_DOUBLE, false, false),
                   "floating-point");
    expect_refused(&sqlq_dialect_sqlite, col("real", SQL_REAL, false, false), "floating-point");
    expect_refused(&sqlq_dialect_postgres, col("text", SQL_LONGVARCHAR, false, false), "collation");
    expect_refused(&sqlq_dialect_postgres, col("date", SQL_TYPE_DATE, false, false), "time of day");
    expect_refused(&sqlq_dialect_postgres, col("numeric", SQL_NUMERIC, false, false), "bigint");
    expect_refused(&sqlq_dialect_postgres, col("bytea", SQL_VARBINARY, false, false), "binary");
    /* A SQLite text primary key may hold NULL. */
    expect_refused(&sqlq_dialect_sqlite, col("datetime", SQL_TYPE_TIMESTAMP, true, true),
                   "nullable");
}

static void test_cursor_column_soft_deleted_values(void **state)
{
    (void)state;
    json_t *v[] = {json_null(),      json_false(),    json_integer(0),        json_string("0"),
                   json_string(""),  json_string("f"), json_true(),           json_integer(1),
                   json_string("2024-05-01T00:00:00"), json_string("t")};
    bool want[] = {false, false, false, false, false, false, true, true, true, true};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(sqlq_cursor_column_soft_deleted(v[i]), want[i]);
        json_decref(v[i]);
    }
    assert_false(sqlq_cursor_column_soft_deleted(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_column_safe_types),
        cmocka_unit_test(test_cursor_column_unsafe_types),
        cmocka_unit_test(test_cursor_column_soft_deleted_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
