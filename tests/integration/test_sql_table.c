/* sql/table and sql/dialect on the database $SQLQ_TEST_DATABASE names (sqlite, postgres,
 * mariadb): key discovery in key order, odd identifiers round-tripping through describe and
 * quoted SQL, names as the database resolves them, refusals, now-in-ms. Each database's case is
 * its own function below (`databases` picks it). */
#include "clock.h"
#include "db.h"
#include "dialect.h"
#include "table.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static sqlq_table *describe(sqlq_db *db, const char *name_text)
{
    sqlq_table_name name;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_table_name_parse(name_text, &name, &err) != SQLQ_OK)
        fail_msg("parse %s: %s", name_text, err.message);
    sqlq_table *t = NULL;
    if (sqlq_table_describe(db, &name, &t, &err) != SQLQ_OK)
        fail_msg("describe %s: %s", name_text, err.message);
    return t;
}

static void expect_describe_error(sqlq_db *db, const char *name_text, sqlq_result want,
                                  const char *message)
{
    sqlq_table_name name;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_table_name_parse(name_text, &name, &err), SQLQ_OK);
    sqlq_table *t = NULL;
    assert_int_equal(sqlq_table_describe(db, &name, &t, &err), want);
    assert_null(t);
    if (!strstr(err.message, message))
        fail_msg("message \"%s\" lacks \"%s\"", err.message, message);
}

/* Columns (a, b, c) with PRIMARY KEY (c, a): key order differs from column order. */
static void check_composite_key(sqlq_table *t)
{
    assert_int_equal(t->ncolumns, 3);
    assert_string_equal(t->columns[0].name, "a");
    assert_string_equal(t->columns[1].name, "b");
    assert_string_equal(t->columns[2].name, "c");
    assert_int_equal(t->nkey, 2);
    assert_int_equal(t->key[0], 2);
    assert_int_equal(t->key[1], 0);
    assert_int_equal(t->columns[2].key_pos, 1);
    assert_int_equal(t->columns[0].key_pos, 2);
    assert_true(t->columns[0].in_key && t->columns[2].in_key);
    assert_false(t->columns[1].in_key);
    assert_int_equal(t->columns[1].key_pos, 0);
    assert_true(t->columns[1].nullable);
    assert_false(t->columns[2].nullable);
    assert_ptr_equal(sqlq_table_column(t, "b"), &t->columns[1]);
    assert_null(sqlq_table_column(t, "zz"));
}

/* Build SELECT <quoted columns> FROM <quoted table> from what describe found and read the
 * one row back: every odd name survives quoting both ways. */
static void select_round_trip(sqlq_db *db, sqlq_table *t, const char *want_json)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    assert_int_equal(sqlq_buf_adds(&sql, "SELECT "), SQLQ_OK);
    for (size_t i = 0; i < t->ncolumns; i++) {
        if (i)
            assert_int_equal(sqlq_buf_adds(&sql, ", "), SQLQ_OK);
        assert_int_equal(sqlq_dialect_quote_ident(d, t->columns[i].name, &sql), SQLQ_OK);
    }
    assert_int_equal(sqlq_buf_adds(&sql, " FROM "), SQLQ_OK);
    assert_int_equal(sqlq_dialect_quote_table(d, &t->name, &sql), SQLQ_OK);
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    if (sqlq_db_query(db, sqlq_buf_str(&sql), NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("%s: %s", sqlq_buf_str(&sql), err.message);
    json_t *want = json_loads(want_json, 0, NULL);
    assert_non_null(want);
    if (!json_equal(rows, want))
        fail_msg("got %s", json_dumps(rows, JSON_COMPACT));
    json_decref(want);
    json_decref(rows);
    sqlq_buf_free(&sql);
}

static void check_now_ms(sqlq_db *db)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT %s", sqlq_dialect_now_ms(sqlq_db_dialect(db)));
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t db_now = 0;
    int64_t before = sqlq_clock_wall_ms();
    assert_int_equal(sqlq_db_query_int(db, sql, NULL, 0, &db_now, &err), SQLQ_OK);
    int64_t after = sqlq_clock_wall_ms();
    /* Same machine, same clock: the database's milliseconds lie between our two readings. */
    assert_true(db_now >= before - 1);
    assert_true(db_now <= after + 1);
}

static void test_sql_table_sqlite(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("sqlite", "table");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, "CREATE TABLE lines (a TEXT, b INTEGER, c REAL NOT NULL, PRIMARY KEY (c, a))");
    sqlq_table *t = describe(db, "lines");
    check_composite_key(t);
    assert_string_equal(t->columns[0].type, "text");
    assert_string_equal(t->columns[2].type, "real");
    assert_string_equal(t->name.name, "lines");
    sqlq_table_free(t);
    t = describe(db, "main.LINES"); /* SQLite names ignore case */
    check_composite_key(t);
    sqlq_table_free(t);

    sqlq_test_db_exec(db, "CREATE TABLE \"My \"\"Table\"\" [x] žluť\" (\"col \"\"1\"\" [y] ☃\" INTEGER "
                "PRIMARY KEY, \"second col\" TEXT)");
    sqlq_test_db_exec(db, "INSERT INTO \"My \"\"Table\"\" [x] žluť\" VALUES (5, 'five')");
    t = describe(db, "\"My \"\"Table\"\" [x] žluť\"");
    assert_int_equal(t->nkey, 1);
    assert_string_equal(t->columns[0].name, "col \"1\" [y] ☃");
    select_round_trip(db, t, "[{\"col \\\"1\\\" [y] ☃\": 5, \"second col\": \"five\"}]");
    sqlq_table_free(t);
    t = describe(db, "[My \"Table\" [x]] žluť]"); /* the same table in SQL Server spelling */
    assert_int_equal(t->ncolumns, 2);
    sqlq_table_free(t);

    sqlq_test_db_exec(db, "CREATE TABLE nopk (a INTEGER, b TEXT)");
    expect_describe_error(db, "nopk", SQLQ_E_INVALID,
                          "table nopk has no primary key; sqlq needs one to identify rows");
    expect_describe_error(db, "missing_one", SQLQ_E_NOT_FOUND, "table missing_one not found");
    expect_describe_error(db, "nope.lines", SQLQ_E_NOT_FOUND, "table nope.lines not found");
    check_now_ms(db);
    sqlq_db_close(db);
    free(conn);
}

static void test_sql_table_postgres(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("postgres", "table");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, "CREATE SCHEMA s");
    sqlq_test_db_exec(db, "CREATE TABLE s.lines (a text, b int, c numeric(10,2) NOT NULL, "
                "PRIMARY KEY (c, a))");
    sqlq_test_db_exec(db, "CREATE TABLE lines (a text, b int, c int NOT NULL, PRIMARY KEY (c, a))");
    sqlq_table *t = describe(db, "s.lines");
    check_composite_key(t);
    assert_string_equal(t->name.schema, "s");
    assert_string_equal(t->columns[2].type, "numeric(10,2)");
    assert_string_equal(t->columns[1].type, "integer");
    sqlq_table_free(t);
    t = describe(db, "lines"); /* search_path: public */
    check_composite_key(t);
    assert_string_equal(t->name.schema, "public");
    assert_string_equal(t->name.name, "lines");
    assert_string_equal(t->columns[2].type, "integer");
    sqlq_table_free(t);
    t = describe(db, "Public.Lines"); /* unquoted on a command line: folded like PostgreSQL */
    assert_string_equal(t->name.schema, "public");
    assert_string_equal(t->name.name, "lines");
    sqlq_table_free(t);

    sqlq_test_db_exec(db, "CREATE SCHEMA \"we\"\"ird [s] ☃\"");
    sqlq_test_db_exec(db, "CREATE TABLE \"we\"\"ird [s] ☃\".\"My \"\"Table\"\" [x] žluť\" ("
                "\"col \"\"1\"\" [y]\" int, \"Second Col\" text, PRIMARY KEY (\"Second Col\", "
                "\"col \"\"1\"\" [y]\"))");
    sqlq_test_db_exec(db, "INSERT INTO \"we\"\"ird [s] ☃\".\"My \"\"Table\"\" [x] žluť\" VALUES (5, 'five')");
    t = describe(db, "\"we\"\"ird [s] ☃\".\"My \"\"Table\"\" [x] žluť\"");
    assert_string_equal(t->name.schema, "we\"ird [s] ☃");
    assert_string_equal(t->name.name, "My \"Table\" [x] žluť");
    assert_int_equal(t->nkey, 2);
    assert_string_equal(t->columns[t->key[0]].name, "Second Col");
    select_round_trip(db, t, "[{\"col \\\"1\\\" [y]\": 5, \"Second Col\": \"five\"}]");
    sqlq_table_free(t);

    sqlq_test_db_exec(db, "CREATE TABLE nopk (a int)");
    expect_describe_error(db, "nopk", SQLQ_E_INVALID,
                          "table public.nopk has no primary key; sqlq needs one to identify rows");
    expect_describe_error(db, "missing_one", SQLQ_E_NOT_FOUND, "table missing_one not found");
    expect_describe_error(db, "nope.lines", SQLQ_E_NOT_FOUND, "table nope.lines not found");
    check_now_ms(db);
    sqlq_db_close(db);
    free(conn);
}

static void test_sql_table_mariadb(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("mariadb", "table");
    sqlq_db *db = sqlq_test_db_open(conn);
    json_t *rows = NULL;
    SQLQ_TEST_OK(sqlq_db_query(db, "SELECT DATABASE() AS d", NULL, 0, &rows, err));
    char schema[128], name[256];
    snprintf(schema, sizeof(schema), "%s", json_string_value(json_object_get(json_array_get(rows, 0), "d")));
    json_decref(rows);
    sqlq_test_db_exec(db, "CREATE TABLE `lines` (a varchar(10), b int, c decimal(10,2) NOT NULL, "
                          "PRIMARY KEY (c, a))");
    sqlq_table *t = describe(db, "lines"); /* the connection's database */
    check_composite_key(t);
    assert_string_equal(t->name.schema, schema);
    assert_string_equal(t->name.name, "lines");
    assert_string_equal(t->columns[2].type, "decimal(10,2)");
    assert_string_equal(t->columns[1].type, "int(11)");
    sqlq_table_free(t);
    snprintf(name, sizeof(name), "%s.lines", schema); /* a schema is a database */
    t = describe(db, name);
    check_composite_key(t);
    sqlq_table_free(t);

    sqlq_test_db_exec(db, "CREATE TABLE `My \"Table\" [x] žluť` (`col \"1\" [y] ☃` int PRIMARY "
                          "KEY, `second col` text)");
    sqlq_test_db_exec(db, "INSERT INTO `My \"Table\" [x] žluť` VALUES (5, 'five')");
    t = describe(db, "`My \"Table\" [x] žluť`");
    assert_int_equal(t->nkey, 1);
    assert_string_equal(t->columns[0].name, "col \"1\" [y] ☃");
    select_round_trip(db, t, "[{\"col \\\"1\\\" [y] ☃\": 5, \"second col\": \"five\"}]");
    sqlq_table_free(t);

    sqlq_test_db_exec(db, "CREATE TABLE nopk (a int)");
    snprintf(name, sizeof(name), "table %s.nopk has no primary key; sqlq needs one to identify rows",
             schema);
    expect_describe_error(db, "nopk", SQLQ_E_INVALID, name);
    expect_describe_error(db, "missing_one", SQLQ_E_NOT_FOUND, "table missing_one not found");
    expect_describe_error(db, "nope.lines", SQLQ_E_NOT_FOUND, "table nope.lines not found");
    check_now_ms(db);
    sqlq_db_close(db);
    free(conn);
}

/* Each database's case. */
typedef struct database {
    const char *name;
    CMUnitTestFunction test;
} database;

static const database databases[] = {
    {"sqlite", test_sql_table_sqlite},
    {"postgres", test_sql_table_postgres},
    {"mariadb", test_sql_table_mariadb},
};

int main(void)
{
    const database *d = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        {d->name, d->test, NULL, NULL, NULL},
    };
    return cmocka_run_group_tests_name(d->name, tests, NULL, NULL);
}
