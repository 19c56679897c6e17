/* backfill: the page query for each dialect, with and without the user's filter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backfill.h"

#include <sql.h>
#include <sqlext.h>
#include <string.h>

static sqlq_column cols[] = {
    {(char *)(uintptr_t) "tenant", (char *)(uintptr_t) "varchar", SQL_VARCHAR, false, true, 1},
    {(char *)(uintptr_t) "id", (char *)(uintptr_t) "int8", SQL_BIGINT, false, true, 2},
    {(char *)(uintptr_t) "body", (char *)(uintptr_t) "text", SQL_LONGVARCHAR, true, false, 0},
};
static size_t key[] = {0, 1};

static sqlq_table table(const char *schema)
{
    sqlq_table t;
    memset(&t, 0, sizeof(t));
    snprintf(t.name.schema, sizeof(t.name.schema), "%s", schema);
    snprintf(t.name.name, sizeof(t.name.name), "orders");
    t.columns = cols;
    t.ncolumns = 3;
    t.key = key;
    t.nkey = 2;
    return t;
}

static const char *version_sql; /* NULL: the query selects 0 */

/* SQLite: the exact text of a REAL the integer column may hold, read just before it. */
#define EXACT_ID "CASE WHEN typeof(\"id\") = 'real' THEN quote(\"id\") END AS \"__sqlq_exact\", "

static void expect(const sqlq_dialect *d, const char *schema, const char *where, bool after,
                   const char *sql, const size_t *map, size_t nmap)
{
    sqlq_table t = table(schema);
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t got[8], ngot = 0;
    assert_int_equal(sqlq_backfill_page_sql(d, &t, where, version_sql, after, 500, &b, got, 8, &ngot, NULL), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), sql);
    assert_int_equal(ngot, nmap);
    for (size_t i = 0; i < nmap; i++)
        assert_int_equal(got[i], map[i]);
    sqlq_buf_free(&b);
}

static void test_backfill_sql_postgres(void **state)
{
    (void)state;
    static const size_t map[] = {0, 1};
    expect(&sqlq_dialect_postgres, "public", NULL, false,
           "SELECT \"tenant\", \"id\", \"body\", \"tenant\" AS \"__sqlq_v0\", \"id\" AS "
           "\"__sqlq_v1\", 0 AS \"__sqlq_version\" "
           "FROM \"public\".\"orders\" ORDER BY \"tenant\", \"id\" LIMIT 500",
           NULL, 0);
    expect(&sqlq_dialect_postgres, "public", "created_at > now() - interval '1 day' -- recent",
           true,
           "SELECT \"tenant\", \"id\", \"body\", \"tenant\" AS \"__sqlq_v0\", \"id\" AS "
           "\"__sqlq_v1\", 0 AS \"__sqlq_version\" "
           "FROM \"public\".\"orders\" WHERE (\ncreated_at > now() - interval '1 day' -- recent\n) "
           "AND (\"tenant\", \"id\") > (?, ?) ORDER BY \"tenant\", \"id\" LIMIT 500",
           map, 2);
}

static void test_backfill_sql_sqlite(void **state)
{
    (void)state;
    static const size_t map[] = {0, 1};
    expect(
        &sqlq_dialect_sqlite, "", NULL, true,
        "SELECT \"tenant\", " EXACT_ID "\"id\", \"body\", \"tenant\" AS \"__sqlq_v0\", \"id\" AS "
                                       "\"__sqlq_v1\", 0 AS \"__sqlq_version\" "
        "FROM \"orders\" WHERE (\"tenant\", \"id\") > (?, ?) ORDER BY \"tenant\", \"id\" LIMIT 500",
        map, 2);
}

static void test_backfill_sql_mssql_expanded(void **state)
{
    (void)state;
    static const size_t map[] = {0, 0, 1};
    expect(&sqlq_dialect_mssql, "dbo", "region = 'EU'", true,
           "SELECT TOP (500) [tenant], [id], [body], [tenant] AS [__sqlq_v0], [id] AS [__sqlq_v1], "
           "0 AS [__sqlq_version] "
           "FROM [dbo].[orders] WHERE (\nregion = 'EU'\n) AND ([tenant] > ? OR ([tenant] = ? AND "
           "[id] > ?)) ORDER BY [tenant], [id]",
           map, 3);
}

/* The version expression (the change log's version of the key) goes in as the last column. */
static void test_backfill_sql_version_column(void **state)
{
    (void)state;
    version_sql = "COALESCE((SELECT l.sqlq_version FROM \"sqlq_log_orders\" l WHERE l.\"id\" = "
                  "\"orders\".\"id\"), 0)";
    expect(
        &sqlq_dialect_sqlite, "", NULL, false,
        "SELECT \"tenant\", " EXACT_ID
        "\"id\", \"body\", \"tenant\" AS \"__sqlq_v0\", \"id\" AS \"__sqlq_v1\", "
        "COALESCE((SELECT l.sqlq_version FROM \"sqlq_log_orders\" l WHERE l.\"id\" = "
        "\"orders\".\"id\"), 0) AS \"__sqlq_version\" FROM \"orders\" ORDER BY \"tenant\", \"id\" "
        "LIMIT 500",
        NULL, 0);
    version_sql = NULL;
}

static void test_backfill_sql_refuses_binary_key(void **state)
{
    (void)state;
    sqlq_column bin[] = {
        {(char *)(uintptr_t) "h", (char *)(uintptr_t) "bytea", SQL_VARBINARY, false, true, 1}};
    size_t k[] = {0};
    sqlq_table t;
    memset(&t, 0, sizeof(t));
    snprintf(t.name.name, sizeof(t.name.name), "blobs");
    t.columns = bin;
    t.ncolumns = 1;
    t.key = k;
    t.nkey = 1;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    size_t map[4], n = 0;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_backfill_page_sql(&sqlq_dialect_postgres, &t, NULL, NULL, false, 10, &b,
                                            map, 4, &n, &err),
                     SQLQ_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "binary"));
    sqlq_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backfill_sql_postgres),
        cmocka_unit_test(test_backfill_sql_sqlite),
        cmocka_unit_test(test_backfill_sql_mssql_expanded),
        cmocka_unit_test(test_backfill_sql_version_column),
        cmocka_unit_test(test_backfill_sql_refuses_binary_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
