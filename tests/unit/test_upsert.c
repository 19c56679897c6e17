/* The text of the sink's upsert and delete statements in each dialect. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "upsert.h"
#include "version_guard.h"

#include <string.h>

static const char *const cols[] = {"region", "id", "total", "note"};
static const char *const key[] = {"region", "id"};

static void check(sqlq_result r, sqlq_buf *b, const char *want)
{
    assert_int_equal(r, SQLQ_OK);
    assert_string_equal(sqlq_buf_str(b), want);
    sqlq_buf_free(b);
}

static void test_upsert_postgres_on_conflict(void **state)
{
    (void)state;
    sqlq_table_name t = {"sales", "orders"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_sql(&sqlq_dialect_postgres, &t, cols, 4, key, 2, &b, NULL), &b,
          "INSERT INTO \"sales\".\"orders\" (\"region\", \"id\", \"total\", \"note\") VALUES "
          "(?, ?, ?, ?) ON CONFLICT (\"region\", \"id\") DO UPDATE SET \"total\" = "
          "EXCLUDED.\"total\", \"note\" = EXCLUDED.\"note\"");
}

static void test_upsert_sqlite_on_conflict(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "orders"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_sql(&sqlq_dialect_sqlite, &t, cols, 3, key, 2, &b, NULL), &b,
          "INSERT INTO \"orders\" (\"region\", \"id\", \"total\") VALUES (?, ?, ?) ON CONFLICT "
          "(\"region\", \"id\") DO UPDATE SET \"total\" = excluded.\"total\"");
}

static void test_upsert_mssql_merge(void **state)
{
    (void)state;
    sqlq_table_name t = {"dbo", "orders"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_sql(&sqlq_dialect_mssql, &t, cols, 3, key, 2, &b, NULL), &b,
          "MERGE INTO [dbo].[orders] WITH (HOLDLOCK) AS [target] USING (SELECT ? AS [region], "
          "? AS [id], ? AS [total]) AS [source] ON ([target].[region] = [source].[region] AND "
          "[target].[id] = [source].[id]) WHEN MATCHED THEN UPDATE SET [target].[total] = "
          "[source].[total] WHEN NOT MATCHED THEN INSERT ([region], [id], [total]) VALUES "
          "([source].[region], [source].[id], [source].[total]);");
}

static void test_upsert_only_key_columns(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "tags"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_sql(&sqlq_dialect_postgres, &t, key, 2, key, 2, &b, NULL), &b,
          "INSERT INTO \"tags\" (\"region\", \"id\") VALUES (?, ?) ON CONFLICT (\"region\", "
          "\"id\") DO NOTHING");
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_sql(&sqlq_dialect_mssql, &t, key, 2, key, 2, &b, NULL), &b,
          "MERGE INTO [tags] WITH (HOLDLOCK) AS [target] USING (SELECT ? AS [region], ? AS [id]) "
          "AS [source] ON ([target].[region] = [source].[region] AND [target].[id] = "
          "[source].[id]) WHEN NOT MATCHED THEN INSERT ([region], [id]) VALUES "
          "([source].[region], [source].[id]);");
}

static void test_upsert_quotes_odd_names(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "my \"table\""};
    const char *const c[] = {"id", "we\"ird]"};
    const char *const k[] = {"id"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_sql(&sqlq_dialect_postgres, &t, c, 2, k, 1, &b, NULL), &b,
          "INSERT INTO \"my \"\"table\"\"\" (\"id\", \"we\"\"ird]\") VALUES (?, ?) ON CONFLICT "
          "(\"id\") DO UPDATE SET \"we\"\"ird]\" = EXCLUDED.\"we\"\"ird]\"");
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_delete_sql(&sqlq_dialect_mssql, &t, c + 1, 1, &b, NULL), &b,
          "DELETE FROM [my \"table\"] WHERE [we\"ird]]] = ?");
}

static void test_upsert_delete_by_composite_key(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "orders"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_upsert_delete_sql(&sqlq_dialect_sqlite, &t, key, 2, &b, NULL), &b,
          "DELETE FROM \"orders\" WHERE \"region\" = ? AND \"id\" = ?");
}

static void test_upsert_rejects_missing_key_value(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "orders"};
    const char *const c[] = {"id", "total"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_upsert_sql(&sqlq_dialect_postgres, &t, c, 2, key, 2, &b, &err),
                     SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "region"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_upsert_delete_sql(&sqlq_dialect_postgres, &t, key, 0, &b, &err),
                     SQLQ_E_INVALID);
    sqlq_buf_free(&b);
}

static void test_upsert_version_guard_claim(void **state)
{
    (void)state;
    sqlq_table_name t = {"", "sqlq_sink_versions"};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    check(sqlq_version_guard_claim_sql(&sqlq_dialect_postgres, &t, &b, NULL), &b,
          "INSERT INTO \"sqlq_sink_versions\" AS cur (target_table, key_hash, version, key_json) "
          "VALUES (?, ?, ?, ?) ON CONFLICT (target_table, key_hash) DO UPDATE SET version = "
          "excluded.version, key_json = COALESCE(cur.key_json, excluded.key_json) WHERE "
          "cur.version < excluded.version");
    sqlq_table_name m = {"dbo", "sqlq_sink_versions"};
    sqlq_buf_init(&b, 0);
    check(sqlq_version_guard_claim_sql(&sqlq_dialect_mssql, &m, &b, NULL), &b,
          "MERGE INTO [dbo].[sqlq_sink_versions] WITH (HOLDLOCK) AS cur USING (SELECT ? AS "
          "target_table, ? AS key_hash, ? AS version, ? AS key_json) AS src ON "
          "(cur.target_table = src.target_table AND cur.key_hash = src.key_hash) WHEN MATCHED "
          "AND cur.version < src.version THEN UPDATE SET version = src.version, key_json = "
          "COALESCE(cur.key_json, src.key_json) WHEN NOT MATCHED THEN INSERT (target_table, "
          "key_hash, version, key_json) VALUES (src.target_table, src.key_hash, src.version, "
          "src.key_json);");
    char hash[65];
    sqlq_version_guard_key_hash("{\"id\":1}", hash);
    assert_int_equal(strlen(hash), 64);
    /* printf '{"id":1}' | sha256sum */
    assert_string_equal(hash, "037c9214eef74cc3887f3a4f085b4e17d76280dafd273b0ee160c09c4ba1cfd4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsert_postgres_on_conflict),
        cmocka_unit_test(test_upsert_sqlite_on_conflict),
        cmocka_unit_test(test_upsert_mssql_merge),
        cmocka_unit_test(test_upsert_only_key_columns),
        cmocka_unit_test(test_upsert_quotes_odd_names),
        cmocka_unit_test(test_upsert_delete_by_composite_key),
        cmocka_unit_test(test_upsert_rejects_missing_key_value),
        cmocka_unit_test(test_upsert_version_guard_claim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
