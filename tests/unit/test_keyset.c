/* keyset: tuple comparisons per dialect, column classes, checkpoint values, ISO 8601 parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "keyset.h"

#include <sql.h>
#include <sqlext.h>
#include <string.h>

static const sqlq_keyset_col cols3[] = {
    {"updated_at", "timestamptz", SQLQ_VALUE_TIMESTAMPTZ},
    {"tenant", "varchar", SQLQ_VALUE_TEXT},
    {"id", "int8", SQLQ_VALUE_INT},
};

static void expect_after(const sqlq_dialect *d, const sqlq_keyset_col *cols, size_t n,
                         const char *sql, const size_t *map, size_t nmap)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t got[16], ngot = 0;
    assert_int_equal(sqlq_keyset_after_sql(d, cols, n, &b, got, 16, &ngot), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), sql);
    assert_int_equal(ngot, nmap);
    for (size_t i = 0; i < nmap; i++)
        assert_int_equal(got[i], map[i]);
    sqlq_buf_free(&b);
}

static void test_keyset_row_values_postgres(void **state)
{
    (void)state;
    static const size_t map[] = {0, 1, 2};
    expect_after(&sqlq_dialect_postgres, cols3, 3,
                 "(\"updated_at\", \"tenant\", \"id\") > (CAST(? AS timestamptz), ?, ?)", map, 3);
}

static void test_keyset_row_values_sqlite(void **state)
{
    (void)state;
    static const size_t map[] = {0, 1, 2};
    expect_after(&sqlq_dialect_sqlite, cols3, 3, "(\"updated_at\", \"tenant\", \"id\") > (?, ?, ?)",
                 map, 3);
}

static void test_keyset_expanded_mssql(void **state)
{
    (void)state;
    static const sqlq_keyset_col ms[] = {
        {"c", "datetime2", SQLQ_VALUE_TIMESTAMP},
        {"pk1", "int", SQLQ_VALUE_INT},
        {"pk2", "nvarchar", SQLQ_VALUE_TEXT},
    };
    static const size_t map[] = {0, 0, 1, 1, 2};
    expect_after(&sqlq_dialect_mssql, ms, 3,
                 "([c] > CAST(? AS datetime2) OR ([c] = CAST(? AS datetime2) AND "
                 "([pk1] > ? OR ([pk1] = ? AND [pk2] > ?))))",
                 map, 5);
    static const size_t map2[] = {0, 0, 1};
    expect_after(&sqlq_dialect_mssql, ms, 2,
                 "([c] > CAST(? AS datetime2) OR ([c] = CAST(? AS datetime2) AND [pk1] > ?))", map2,
                 3);
}

static void test_keyset_single_column_everywhere(void **state)
{
    (void)state;
    static const size_t map[] = {0};
    static const sqlq_keyset_col id[] = {{"id", "integer", SQLQ_VALUE_INT}};
    expect_after(&sqlq_dialect_sqlite, id, 1, "\"id\" > ?", map, 1);
    expect_after(&sqlq_dialect_postgres, id, 1, "\"id\" > ?", map, 1);
    expect_after(&sqlq_dialect_mssql, id, 1, "[id] > ?", map, 1);
}

static void test_keyset_map_too_small_rejected(void **state)
{
    (void)state;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t map[4], n = 0;
    assert_int_equal(sqlq_keyset_after_sql(&sqlq_dialect_mssql, cols3, 3, &b, map, 4, &n),
                     SQLQ_E_INVALID);
    sqlq_buf_free(&b);
}

static void expect_value_sql(const sqlq_dialect *d, sqlq_keyset_col c, const char *value,
                             const char *param)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_keyset_value_sql(d, &c, &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), value);
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_keyset_param_sql(d, &c, &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), param);
    sqlq_buf_free(&b);
}

static void test_keyset_checkpoint_forms(void **state)
{
    (void)state;
    expect_value_sql(&sqlq_dialect_postgres,
                     (sqlq_keyset_col){"ts", "timestamp", SQLQ_VALUE_TIMESTAMP},
                     "to_char(\"ts\", 'YYYY-MM-DD\"T\"HH24:MI:SS.US')", "CAST(? AS timestamp)");
    expect_value_sql(&sqlq_dialect_postgres,
                     (sqlq_keyset_col){"ts", "timestamptz", SQLQ_VALUE_TIMESTAMPTZ},
                     "to_char(\"ts\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
                     "CAST(? AS timestamptz)");
    expect_value_sql(&sqlq_dialect_postgres,
                     (sqlq_keyset_col){"amount", "numeric(10,2)", SQLQ_VALUE_EXACT},
                     "CAST(\"amount\" AS text)", "CAST(? AS numeric)");
    expect_value_sql(&sqlq_dialect_postgres, (sqlq_keyset_col){"id", "int4", SQLQ_VALUE_INT},
                     "\"id\"", "?");
    expect_value_sql(&sqlq_dialect_sqlite,
                     (sqlq_keyset_col){"ts", "datetime", SQLQ_VALUE_TIMESTAMP},
                     "CAST(\"ts\" AS TEXT)", "?");
    expect_value_sql(&sqlq_dialect_mssql, (sqlq_keyset_col){"ts", "datetime", SQLQ_VALUE_TIMESTAMP},
                     "CONVERT(varchar(33), [ts], 126)", "CAST(? AS datetime)");
    expect_value_sql(
        &sqlq_dialect_mssql, (sqlq_keyset_col){"ts", "datetimeoffset", SQLQ_VALUE_TIMESTAMPTZ},
        "CONVERT(varchar(33), CAST(SWITCHOFFSET([ts], '+00:00') AS datetime2(7)), 126) "
        "+ 'Z'",
        "CAST(? AS datetimeoffset)");
    expect_value_sql(&sqlq_dialect_mssql,
                     (sqlq_keyset_col){"rv", "timestamp", SQLQ_VALUE_ROWVERSION},
                     "CAST([rv] AS bigint)", "CAST(? AS binary(8))");
    /* A type name that is not a plain word is never pasted into SQL. */
    expect_value_sql(&sqlq_dialect_postgres,
                     (sqlq_keyset_col){"x", "my\"type; drop", SQLQ_VALUE_EXACT},
                     "CAST(\"x\" AS text)", "?");
}

static sqlq_column col(const char *type, short sql_type)
{
    sqlq_column c;
    memset(&c, 0, sizeof(c));
    c.name = (char *)(uintptr_t) "c";
    c.type = (char *)(uintptr_t)type;
    c.sql_type = sql_type;
    return c;
}

static void test_keyset_classify(void **state)
{
    (void)state;
    sqlq_value_class v;
    const char *why = NULL;
    sqlq_column c = col("int8", SQL_BIGINT);
    assert_true(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    assert_int_equal(v, SQLQ_VALUE_INT);
    c = col("timestamptz", SQL_TYPE_TIMESTAMP);
    assert_true(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    assert_int_equal(v, SQLQ_VALUE_TIMESTAMPTZ);
    c = col("timestamp without time zone", SQL_TYPE_TIMESTAMP);
    assert_true(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    assert_int_equal(v, SQLQ_VALUE_TIMESTAMP);
    c = col("timestamp", SQL_BINARY);
    assert_true(sqlq_keyset_classify(&sqlq_dialect_mssql, &c, &v, &why));
    assert_int_equal(v, SQLQ_VALUE_ROWVERSION);
    assert_false(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    assert_non_null(strstr(why, "binary"));
    c = col("float8", SQL_DOUBLE);
    assert_false(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    assert_non_null(strstr(why, "floating-point"));
    c = col("jsonb", SQL_LONGVARCHAR);
    assert_false(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    c = col("uuid", SQL_VARCHAR);
    assert_true(sqlq_keyset_classify(&sqlq_dialect_postgres, &c, &v, &why));
    assert_int_equal(v, SQLQ_VALUE_EXACT);
}

static void test_keyset_params_from_checkpoint_values(void **state)
{
    (void)state;
    sqlq_keyset_col ic = {"id", "int8", SQLQ_VALUE_INT};
    sqlq_keyset_col tc = {"ts", "timestamp", SQLQ_VALUE_TIMESTAMP};
    sqlq_param p;
    json_t *big = json_string("9007199254740993"); /* beyond 2^53: JSON carries it as text */
    assert_int_equal(sqlq_keyset_param(&ic, big, &p, NULL), SQLQ_OK);
    assert_int_equal(p.type, SQLQ_PARAM_INT64);
    assert_true(p.i64 == 9007199254740993LL);
    json_t *ts = json_string("2024-05-01T12:00:00.123456");
    assert_int_equal(sqlq_keyset_param(&tc, ts, &p, NULL), SQLQ_OK);
    assert_int_equal(p.type, SQLQ_PARAM_TEXT);
    assert_string_equal(p.text, "2024-05-01T12:00:00.123456");
    sqlq_error e;
    sqlq_error_clear(&e);
    assert_int_equal(sqlq_keyset_param(&ic, ts, &p, &e), SQLQ_E_PARSE);
    char *t = sqlq_keyset_value_text(big);
    json_t *back = sqlq_keyset_value_json(&ic, t);
    assert_true(json_is_integer(back) && json_integer_value(back) == 9007199254740993LL);
    json_decref(back);
    free(t);
    json_decref(big);
    json_decref(ts);
}

static void test_keyset_parse_iso(void **state)
{
    (void)state;
    int64_t us = 0;
    assert_true(sqlq_keyset_parse_iso("1970-01-01T00:00:00Z", &us));
    assert_true(us == 0);
    assert_true(sqlq_keyset_parse_iso("2024-05-01 12:00:00.123456", &us));
    assert_true(us == 1714564800123456LL);
    assert_true(sqlq_keyset_parse_iso("2024-05-01T14:00:00.5+02:00", &us));
    assert_true(us == 1714564800500000LL);
    assert_true(sqlq_keyset_parse_iso("2024-05-01T12:00:00.1234567", &us)); /* 100 ns: cut */
    assert_true(us == 1714564800123456LL);
    assert_true(sqlq_keyset_parse_iso("1969-12-31T23:59:59", &us));
    assert_true(us == -1000000);
    assert_false(sqlq_keyset_parse_iso("2024-13-01", &us));
    assert_false(sqlq_keyset_parse_iso("yesterday", &us));
    assert_false(sqlq_keyset_parse_iso("2024-05-01T12:00:00.", &us));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keyset_row_values_postgres),
        cmocka_unit_test(test_keyset_row_values_sqlite),
        cmocka_unit_test(test_keyset_expanded_mssql),
        cmocka_unit_test(test_keyset_single_column_everywhere),
        cmocka_unit_test(test_keyset_map_too_small_rejected),
        cmocka_unit_test(test_keyset_checkpoint_forms),
        cmocka_unit_test(test_keyset_classify),
        cmocka_unit_test(test_keyset_params_from_checkpoint_values),
        cmocka_unit_test(test_keyset_parse_iso),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
