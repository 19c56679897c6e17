/* cursor_query: the poll statement of the cursor source for each dialect. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cursor_query.h"

#include <string.h>

static const char *const columns[] = {"id", "tenant", "updated_at", "deleted_at"};

static void expect(const sqlq_cursor_query *q, const char *sql, const size_t *map, size_t nmap)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t got[16], ngot = 0;
    assert_int_equal(sqlq_cursor_query_sql(q, &b, got, 16, &ngot), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), sql);
    assert_int_equal(ngot, nmap);
    for (size_t i = 0; i < nmap; i++)
        assert_int_equal(got[i], map[i]);
    sqlq_buf_free(&b);
}

static void test_cursor_query_postgres_timestamptz_composite_key(void **state)
{
    (void)state;
    sqlq_table_name t = {"sales", "orders"};
    sqlq_keyset_col order[] = {{"updated_at", "timestamptz", SQLQ_VALUE_TIMESTAMPTZ},
                               {"tenant", "text", SQLQ_VALUE_TEXT},
                               {"id", "int4", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {&sqlq_dialect_postgres,
                           &t,
                           columns,
                           4,
                           NULL,
                           order,
                           3,
                           5000,
                           false,
                           true,
                           false,
                           false,
                           100};
    static const size_t map[] = {0, 1, 2};
    expect(&q,
           "SELECT \"id\", \"tenant\", \"updated_at\", \"deleted_at\", "
           "to_char(\"updated_at\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS "
           "\"__sqlq_v0\", \"tenant\" AS \"__sqlq_v1\", \"id\" AS \"__sqlq_v2\" "
           "FROM \"sales\".\"orders\" "
           "WHERE \"updated_at\" < clock_timestamp() - interval '5000 milliseconds' "
           "AND (\"updated_at\", \"tenant\", \"id\") > (CAST(? AS timestamptz), ?, ?) "
           "ORDER BY \"updated_at\", \"tenant\", \"id\" LIMIT 100",
           map, 3);
    /* First poll: no checkpoint yet, only the lag bound. */
    q.after = false;
    expect(&q,
           "SELECT \"id\", \"tenant\", \"updated_at\", \"deleted_at\", "
           "to_char(\"updated_at\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS "
           "\"__sqlq_v0\", \"tenant\" AS \"__sqlq_v1\", \"id\" AS \"__sqlq_v2\" "
           "FROM \"sales\".\"orders\" "
           "WHERE \"updated_at\" < clock_timestamp() - interval '5000 milliseconds' "
           "ORDER BY \"updated_at\", \"tenant\", \"id\" LIMIT 100",
           NULL, 0);
}

static void test_cursor_query_postgres_naive_timestamp_uses_local_time(void **state)
{
    (void)state;
    sqlq_keyset_col c = {"ts", "timestamp", SQLQ_VALUE_TIMESTAMP};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_cursor_bound_sql(&sqlq_dialect_postgres, &c, 0, &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b),
                        "\"ts\" < CAST(clock_timestamp() AS timestamp) - interval '0 milliseconds'");
    sqlq_buf_free(&b);
}

static void test_cursor_query_mssql_expanded_and_top(void **state)
{
    (void)state;
    sqlq_table_name t = {"dbo", "orders"};
    sqlq_keyset_col order[] = {{"updated_at", "datetime2", SQLQ_VALUE_TIMESTAMP},
                               {"tenant", "nvarchar", SQLQ_VALUE_TEXT},
                               {"id", "int", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {
        &sqlq_dialect_mssql, &t, columns, 4, NULL, order, 3, 2000, false, true, false, false, 50};
    static const size_t map[] = {0, 0, 1, 1, 2};
    expect(&q,
           "SELECT TOP (50) [id], [tenant], [updated_at], [deleted_at], "
           "CONVERT(varchar(33), [updated_at], 126) AS [__sqlq_v0], [tenant] AS [__sqlq_v1], "
           "[id] AS [__sqlq_v2] FROM [dbo].[orders] "
           "WHERE [updated_at] < DATEADD(millisecond, -2000, SYSDATETIME()) "
           "AND ([updated_at] > CAST(? AS datetime2) OR ([updated_at] = CAST(? AS datetime2) AND "
           "([tenant] > ? OR ([tenant] = ? AND [id] > ?)))) "
           "ORDER BY [updated_at], [tenant], [id]",
           map, 5);
}

static void test_cursor_query_mssql_rowversion_is_bounded_exactly(void **state)
{
    (void)state;
    sqlq_table_name t = {"dbo", "orders"};
    sqlq_keyset_col order[] = {{"rv", "timestamp", SQLQ_VALUE_ROWVERSION},
                               {"id", "int", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {
        &sqlq_dialect_mssql, &t, columns, 1, NULL, order, 2, 0, false, true, false, false, 10};
    static const size_t map[] = {0, 0, 1};
    expect(&q,
           "SELECT TOP (10) [id], CAST([rv] AS bigint) AS [__sqlq_v0], [id] AS [__sqlq_v1] "
           "FROM [dbo].[orders] WHERE [rv] < MIN_ACTIVE_ROWVERSION() "
           "AND ([rv] > CAST(? AS binary(8)) OR ([rv] = CAST(? AS binary(8)) AND [id] > ?)) "
           "ORDER BY [rv], [id]",
           map, 3);
}

static void test_cursor_query_sqlite_timestamp(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "orders"};
    sqlq_keyset_col order[] = {{"updated_at", "datetime", SQLQ_VALUE_TIMESTAMP},
                               {"id", "integer", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {
        &sqlq_dialect_sqlite, &t, columns, 1, NULL, order, 2, 1500, false, true, false, false, 500};
    static const size_t map[] = {0, 1};
    expect(&q,
           "SELECT \"id\", CAST(\"updated_at\" AS TEXT) AS \"__sqlq_v0\", \"id\" AS \"__sqlq_v1\" "
           "FROM \"orders\" WHERE julianday(\"updated_at\") < julianday('now', '-1.500 seconds') "
           "AND (\"updated_at\", \"id\") > (?, ?) ORDER BY \"updated_at\", \"id\" LIMIT 500",
           map, 2);
}

static void test_cursor_query_integer_watermark_and_plain(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "events"};
    sqlq_keyset_col order[] = {{"seq", "integer", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {
        &sqlq_dialect_sqlite, &t, columns, 1, NULL, order, 1, 3000, true, true, false, false, 20};
    static const size_t map[] = {SQLQ_CURSOR_PARAM_WATERMARK, 0};
    expect(&q,
           "SELECT \"id\", \"seq\" AS \"__sqlq_v0\" FROM \"events\" WHERE \"seq\" <= ? AND "
           "\"seq\" > ? ORDER BY \"seq\" LIMIT 20",
           map, 2);
    q.watermark = false; /* no lag: no bound at all */
    static const size_t map1[] = {0};
    expect(&q,
           "SELECT \"id\", \"seq\" AS \"__sqlq_v0\" FROM \"events\" WHERE \"seq\" > ? "
           "ORDER BY \"seq\" LIMIT 20",
           map1, 1);
    q.after = false;
    expect(&q, "SELECT \"id\", \"seq\" AS \"__sqlq_v0\" FROM \"events\" ORDER BY \"seq\" LIMIT 20",
           NULL, 0);
}

static void test_cursor_query_last_row_and_count(void **state)
{
    (void)state;
    sqlq_table_name t = {"public", "orders"};
    sqlq_keyset_col order[] = {{"updated_at", "timestamptz", SQLQ_VALUE_TIMESTAMPTZ},
                               {"id", "int4", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {
        &sqlq_dialect_postgres, &t, NULL, 0, NULL, order, 2, 0, false, false, true, false, 1};
    expect(&q,
           "SELECT to_char(\"updated_at\" AT TIME ZONE 'UTC', "
           "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS \"__sqlq_v0\", \"id\" AS \"__sqlq_v1\" "
           "FROM \"public\".\"orders\" WHERE \"updated_at\" < clock_timestamp() - interval "
           "'0 milliseconds' ORDER BY \"updated_at\" DESC, \"id\" DESC LIMIT 1",
           NULL, 0);
    q.descending = false;
    q.count = true;
    q.after = true;
    static const size_t map[] = {0, 1};
    expect(&q,
           "SELECT count(*) FROM \"public\".\"orders\" WHERE \"updated_at\" < clock_timestamp() - "
           "interval '0 milliseconds' AND (\"updated_at\", \"id\") > (CAST(? AS timestamptz), ?)",
           map, 2);
}

static void test_cursor_query_rejects_bad_input(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "x"};
    sqlq_keyset_col order[] = {{"id", "integer", SQLQ_VALUE_INT}};
    sqlq_cursor_query q = {
        &sqlq_dialect_sqlite, &t, columns, 1, NULL, order, 1, 0, false, false, false, false, 0};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t map[4], n = 0;
    assert_int_equal(sqlq_cursor_query_sql(&q, &b, map, 4, &n), SQLQ_E_INVALID); /* limit 0 */
    sqlq_keyset_col txt = {"name", "text", SQLQ_VALUE_TEXT};
    assert_int_equal(sqlq_cursor_bound_sql(&sqlq_dialect_postgres, &txt, 0, &b), SQLQ_E_INVALID);
    sqlq_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_query_postgres_timestamptz_composite_key),
        cmocka_unit_test(test_cursor_query_postgres_naive_timestamp_uses_local_time),
        cmocka_unit_test(test_cursor_query_mssql_expanded_and_top),
        cmocka_unit_test(test_cursor_query_mssql_rowversion_is_bounded_exactly),
        cmocka_unit_test(test_cursor_query_sqlite_timestamp),
        cmocka_unit_test(test_cursor_query_integer_watermark_and_plain),
        cmocka_unit_test(test_cursor_query_last_row_and_count),
        cmocka_unit_test(test_cursor_query_rejects_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
