/* sql/dialect and the SQL text of sql/table: quoting, table-name parsing, catalog queries. */
#include "cursor_query.h"
#include "dialect.h"
#include "table.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sqlext.h>

#include <cmocka.h>

static char *quoted(const sqlq_dialect *d, const char *ident)
{
    static char out[1024];
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_dialect_quote_ident(d, ident, &b);
    snprintf(out, sizeof(out), "%s", r == SQLQ_OK ? sqlq_buf_str(&b) : "<rejected>");
    sqlq_buf_free(&b);
    return out;
}

static void test_sql_dialect_quote_ident(void **state)
{
    (void)state;
    assert_string_equal(quoted(&sqlq_dialect_postgres, "orders"), "\"orders\"");
    assert_string_equal(quoted(&sqlq_dialect_postgres, "My Table"), "\"My Table\"");
    assert_string_equal(quoted(&sqlq_dialect_sqlite, "a\"b"), "\"a\"\"b\"");
    assert_string_equal(quoted(&sqlq_dialect_postgres, "\"; DROP TABLE x; --"),
                        "\"\"\"; DROP TABLE x; --\"");
    assert_string_equal(quoted(&sqlq_dialect_postgres, "[x]"), "\"[x]\"");
    assert_string_equal(quoted(&sqlq_dialect_mssql, "My Table"), "[My Table]");
    assert_string_equal(quoted(&sqlq_dialect_mssql, "a]b[c"), "[a]]b[c]");
    assert_string_equal(quoted(&sqlq_dialect_mssql, "a\"b"), "[a\"b]");
    assert_string_equal(quoted(&sqlq_dialect_sqlite, "zákazník ☃"), "\"zákazník ☃\"");
    assert_string_equal(quoted(&sqlq_dialect_mssql, "日本"), "[日本]");
    assert_string_equal(quoted(&sqlq_dialect_sqlite, ""), "<rejected>");
    assert_string_equal(quoted(&sqlq_dialect_sqlite, "bad\xff"), "<rejected>");
    char longest[256], too_long[257];
    memset(longest, 'a', 255);
    longest[255] = '\0';
    memset(too_long, 'a', 256);
    too_long[256] = '\0';
    assert_string_not_equal(quoted(&sqlq_dialect_postgres, longest), "<rejected>");
    assert_string_equal(quoted(&sqlq_dialect_postgres, too_long), "<rejected>");
}

static void test_sql_dialect_quote_rejects_nul(void **state)
{
    (void)state;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_dialect_quote_identn(&sqlq_dialect_postgres, "a\0b", 3, &b),
                     SQLQ_E_INVALID);
    assert_int_equal(b.len, 0); /* nothing appended */
    assert_int_equal(sqlq_dialect_quote_identn(&sqlq_dialect_postgres, "ab", 2, &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "\"ab\"");
    assert_int_equal(sqlq_dialect_quote_ident(&sqlq_dialect_postgres, NULL, &b), SQLQ_E_INVALID);
    sqlq_buf_free(&b);
}

static void test_sql_dialect_quote_table_and_literal(void **state)
{
    (void)state;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_table_name t = {.schema = "dbo", .name = "My Table"};
    assert_int_equal(sqlq_dialect_quote_table(&sqlq_dialect_mssql, &t, &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "[dbo].[My Table]");
    sqlq_buf_reset(&b);
    sqlq_table_name u = {.schema = "", .name = "t"};
    assert_int_equal(sqlq_dialect_quote_table(&sqlq_dialect_sqlite, &u, &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "\"t\"");
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_dialect_quote_literal(&sqlq_dialect_sqlite, "it's", &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "'it''s'");
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_dialect_quote_literal(&sqlq_dialect_postgres, "a\\'b", &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "E'a\\\\''b'");
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_dialect_quote_literal(&sqlq_dialect_postgres, "plain", &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "'plain'");
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_dialect_quote_literal(&sqlq_dialect_mssql, "žluť'", &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "N'žluť'''");
    sqlq_buf_free(&b);
}

static void parse_ok(const char *text, const char *schema, const char *name)
{
    sqlq_table_name t;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_table_name_parse(text, &t, &err) != SQLQ_OK)
        fail_msg("%s: %s", text, err.message);
    assert_string_equal(t.schema, schema);
    assert_string_equal(t.name, name);
}

static void parse_bad(const char *text)
{
    sqlq_table_name t;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_table_name_parse(text, &t, &err), SQLQ_E_INVALID);
    assert_true(strlen(err.message) > 0);
}

static void test_sql_dialect_table_name_parse(void **state)
{
    (void)state;
    parse_ok("a", "", "a");
    parse_ok("s.a", "s", "a");
    parse_ok(" sales . Orders ", "sales", "Orders");
    parse_ok("[dbo].[My Table]", "dbo", "My Table");
    parse_ok("[a]]b].[c.d]", "a]b", "c.d");
    parse_ok("\"odd \"\"x\"\"\".t", "odd \"x\"", "t");
    parse_ok("\"a.b\"", "", "a.b");
    parse_ok("My Table", "", "My Table");
    parse_ok("zákazníci.objednávky", "zákazníci", "objednávky");
    parse_ok("\"s\".[t]", "s", "t");
    parse_bad("");
    parse_bad("a.b.c");
    parse_bad("a.");
    parse_bad(".a");
    parse_bad("\"unterminated");
    parse_bad("[x");
    parse_bad("\"x\"y");
    parse_bad("a\"b");
    parse_bad("\"\"");
    parse_bad("bad\xff");
    char long_name[300];
    memset(long_name, 'x', 256);
    long_name[256] = '\0';
    parse_bad(long_name);
    long_name[255] = '\0';
    parse_ok(long_name, "", long_name);
}

static void test_sql_dialect_now_ms(void **state)
{
    (void)state;
    assert_non_null(strstr(sqlq_dialect_now_ms(&sqlq_dialect_sqlite), "strftime"));
    assert_non_null(strstr(sqlq_dialect_now_ms(&sqlq_dialect_postgres), "clock_timestamp()"));
    assert_string_equal(sqlq_dialect_now_ms(&sqlq_dialect_mssql),
                        "DATEDIFF_BIG(millisecond, '19700101', SYSUTCDATETIME())");
}

/* No SQL Server runs here: pin down the catalog query and that the name goes in as a bound,
 * quoted parameter, never into the SQL text. */
static void test_sql_dialect_mssql_key_discovery_sql(void **state)
{
    (void)state;
    const char *sql = sqlq_table_describe_sql(&sqlq_dialect_mssql);
    assert_non_null(sql);
    assert_non_null(strstr(sql, "FROM sys.columns c"));
    assert_non_null(strstr(sql, "i.is_primary_key = 1"));
    assert_non_null(strstr(sql, "ic.key_ordinal"));
    assert_non_null(strstr(sql, "c.object_id = OBJECT_ID(?)"));
    assert_non_null(strstr(sql, "ORDER BY c.column_id"));
    assert_non_null(strstr(sql, "AS key_pos"));
    assert_non_null(strstr(sql, "AS schema_name"));
    size_t marks = 0;
    for (const char *p = sql; *p; p++)
        marks += *p == '?';
    assert_int_equal(marks, 1);

    sqlq_table_name t = {.schema = "", .name = "Order Lines]; DROP TABLE x; --"};
    sqlq_buf quoted;
    sqlq_buf_init(&quoted, 0);
    sqlq_param params[4];
    size_t n = 0;
    assert_int_equal(sqlq_table_describe_params(&sqlq_dialect_mssql, &t, &quoted, params, &n),
                     SQLQ_OK);
    assert_int_equal(n, 1);
    assert_int_equal(params[0].type, SQLQ_PARAM_TEXT);
    assert_string_equal(params[0].text, "[Order Lines]]; DROP TABLE x; --]");
    assert_null(strstr(sql, "DROP"));
    sqlq_buf_reset(&quoted);
    sqlq_table_name s = {.schema = "sales", .name = "Orders"};
    assert_int_equal(sqlq_table_describe_params(&sqlq_dialect_mssql, &s, &quoted, params, &n),
                     SQLQ_OK);
    assert_string_equal(params[0].text, "[sales].[Orders]");
    sqlq_buf_free(&quoted);
}

static void test_sql_dialect_catalog_sql_uses_parameters(void **state)
{
    (void)state;
    sqlq_table_name t = {.schema = "", .name = "t"};
    sqlq_buf quoted;
    sqlq_buf_init(&quoted, 0);
    sqlq_param params[4];
    size_t n = 0;
    assert_int_equal(sqlq_table_describe_params(&sqlq_dialect_sqlite, &t, &quoted, params, &n),
                     SQLQ_OK);
    assert_int_equal(n, 4);
    assert_string_equal(params[3].text, "main");
    assert_non_null(
        strstr(sqlq_table_describe_sql(&sqlq_dialect_sqlite), "pragma_table_info(?, ?)"));
    assert_int_equal(sqlq_table_describe_params(&sqlq_dialect_postgres, &t, &quoted, params, &n),
                     SQLQ_OK);
    assert_int_equal(n, 1);
    assert_string_equal(params[0].text, "\"t\"");
    assert_non_null(strstr(sqlq_table_describe_sql(&sqlq_dialect_postgres), "to_regclass(?)"));
    sqlq_buf_free(&quoted);
}

static void test_sql_dialect_sql_types(void **state)
{
    (void)state;
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "integer"), SQL_INTEGER);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "bigint"), SQL_BIGINT);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "numeric(38,10)"), SQL_NUMERIC);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "character varying(20)"),
                     SQL_VARCHAR);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "timestamp with time zone"),
                     SQL_TYPE_TIMESTAMP);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "time without time zone"),
                     SQL_TYPE_TIME);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "boolean"), SQL_BIT);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "bit varying(4)"), SQL_VARCHAR);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "double precision"), SQL_DOUBLE);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "uuid"), SQL_GUID);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "interval"), SQL_VARCHAR);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_postgres, "point"), SQL_VARCHAR);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_mssql, "datetime2(7)"), SQL_TYPE_TIMESTAMP);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_mssql, "date"), SQL_TYPE_DATE);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_mssql, "nvarchar(max)"), SQL_WVARCHAR);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_mssql, "bit"), SQL_BIT);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_mssql, "uniqueidentifier"), SQL_GUID);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, "INTEGER"), SQL_INTEGER);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, "unsigned big int"), SQL_BIGINT);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, "nvarchar(10)"), SQL_VARCHAR);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, "real"), SQL_DOUBLE);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, ""), SQL_VARBINARY);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, "numeric(10,2)"), SQL_NUMERIC);
    assert_int_equal(sqlq_table_sql_type(&sqlq_dialect_sqlite, "datetime"), SQL_TYPE_TIMESTAMP);
}

/* The registry: each database by its SQL_DBMS_NAME (any case); an unknown one gets no dialect
 * (sqlq_db_connect then fails naming the supported ones), never another's. */
static void test_sql_dialect_find(void **state)
{
    (void)state;
    assert_ptr_equal(sqlq_dialect_find("SQLite"), &sqlq_dialect_sqlite);
    assert_ptr_equal(sqlq_dialect_find("postgresql"), &sqlq_dialect_postgres);
    assert_ptr_equal(sqlq_dialect_find("Microsoft SQL Server"), &sqlq_dialect_mssql);
    assert_ptr_equal(sqlq_dialect_find("MariaDB"), &sqlq_dialect_mariadb);
    assert_ptr_equal(sqlq_dialect_find("mysql"), &sqlq_dialect_mariadb); /* one of its names */
    assert_null(sqlq_dialect_find("MariaDB|MySQL")); /* the list itself is no name */
    assert_null(sqlq_dialect_find("Maria"));
    assert_null(sqlq_dialect_find("Oracle"));
    assert_null(sqlq_dialect_find(""));
    assert_null(sqlq_dialect_find(NULL));
    char titles[256];
    sqlq_dialect_titles(titles, sizeof(titles));
    assert_int_equal(strncmp(titles, "SQLite, PostgreSQL, SQL Server", 30), 0);
    char tiny[8];
    sqlq_dialect_titles(tiny, sizeof(tiny)); /* cut, never overrun */
    assert_true(strlen(tiny) < sizeof(tiny));
}

/* Every registered dialect fills every entry a caller uses without checking (docs/dialects.md):
 * a new dialect that forgets one fails here, not at a user's first poll. */
static void test_sql_dialect_tables_complete(void **state)
{
    (void)state;
    size_t n = 0;
    for (const sqlq_dialect *d; (d = sqlq_dialect_at(n)) != NULL; n++) {
        assert_non_null(d->name);
        assert_non_null(d->title);
        assert_non_null(d->dbms_name);
        char first[64]; /* the first of its names */
        snprintf(first, sizeof(first), "%.*s", (int)strcspn(d->dbms_name, "|"), d->dbms_name);
        assert_ptr_equal(sqlq_dialect_find(first), d);
        assert_true(d->ident_open && d->ident_close);
        assert_non_null(d->literal_prefix);
        assert_non_null(d->home_schema);
        /* Without schemas there is no home schema; with them there may be none fixed (MariaDB:
         * the connection's database). */
        assert_true(d->schemas || d->home_schema[0] == '\0');
        assert_true(d->schemas == (d->schema_exists_sql != NULL));
        assert_true(d->schemas == (d->schema_create_sql != NULL));
        assert_non_null(d->object_prefix);
        assert_non_null(d->now_ms);
        assert_non_null(d->catalog_create);
        assert_non_null(d->catalog_drop);
        assert_non_null(d->catalog_token_object);
        assert_non_null(d->object_exists_sql);
        assert_non_null(d->resolve_sql);
        assert_true(d->resolve_nparams >= 1 && d->resolve_nparams <= 2);
        assert_non_null(d->column_exists_sql);
        assert_non_null(d->key_types_sql);
        assert_non_null(d->key_type);
        assert_non_null(d->registry_upsert_head);
        assert_non_null(d->registry_upsert_tail);
        assert_non_null(d->describe_sql);
        assert_non_null(d->describe_params);
        assert_non_null(d->sql_type);
        assert_non_null(d->cursor_state_create);
        assert_non_null(d->cursor_lag_rule_exists);
        assert_non_null(d->cursor_lag_rule_add);
        assert_non_null(d->keyset_value_sql);
        assert_non_null(d->keyset_param_sql);
        assert_non_null(d->upsert_sql);
        assert_non_null(d->version_guard_create_sql);
        assert_non_null(d->version_guard_claim_sql);
    }
    assert_true(n >= 3); /* SQLite, PostgreSQL, SQL Server, and any added since */
    assert_null(sqlq_dialect_at(n));
}

/* A new database is a new table: quoting follows its entries with no code of its own, and a
 * dialect without a lag shape gets no cursor bound (loud), never another database's SQL. */
static void test_sql_dialect_new_table(void **state)
{
    (void)state;
    sqlq_dialect other = sqlq_dialect_sqlite;
    other.title = "Other";
    other.ident_open = '`';
    other.ident_close = '`';
    other.literal_prefix = "_utf8mb4";
    other.lag_syntax = SQLQ_LAG_NONE;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_dialect_quote_ident(&other, "a`b", &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "`a``b`");
    sqlq_buf_free(&b);
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_dialect_quote_literal(&other, "it's", &b), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "_utf8mb4'it''s'");
    sqlq_buf_free(&b);
    sqlq_keyset_col ts = {"ts", "datetime", SQLQ_VALUE_TIMESTAMP};
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_cursor_bound_sql(&other, &ts, 1000, &b), SQLQ_E_INVALID);
    sqlq_buf_free(&b);
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_cursor_bound_sql(&sqlq_dialect_sqlite, &ts, 1000, &b), SQLQ_OK);
    sqlq_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sql_dialect_quote_ident),
        cmocka_unit_test(test_sql_dialect_quote_rejects_nul),
        cmocka_unit_test(test_sql_dialect_quote_table_and_literal),
        cmocka_unit_test(test_sql_dialect_table_name_parse),
        cmocka_unit_test(test_sql_dialect_now_ms),
        cmocka_unit_test(test_sql_dialect_mssql_key_discovery_sql),
        cmocka_unit_test(test_sql_dialect_catalog_sql_uses_parameters),
        cmocka_unit_test(test_sql_dialect_sql_types),
        cmocka_unit_test(test_sql_dialect_find),
        cmocka_unit_test(test_sql_dialect_tables_complete),
        cmocka_unit_test(test_sql_dialect_new_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
