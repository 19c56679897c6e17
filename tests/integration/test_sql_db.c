/* sql/db against real SQLite and PostgreSQL through the installed ODBC drivers: statements,
 * parameters, transactions, errors with SQLSTATE + native code, busy locks, reconnect. */
#include "db.h"
#include "dialect.h"
#include "log.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *sqlite_conn(const char *prefix)
{
    char path[1024];
    return sqlq_test_sqlite_db(prefix, path, sizeof(path));
}

/* ---- both databases ---- */

static void basic_statements(const char *conn, const sqlq_dialect *want)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    assert_ptr_equal(sqlq_db_dialect(db), want);
    assert_true(strlen(sqlq_db_dbms_name(db)) > 0);
    sqlq_test_db_exec_params(db,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(100), score DOUBLE PRECISION, "
            "big BIGINT)",
            NULL, 0);
    sqlq_param p[4] = {sqlq_param_int(1), sqlq_param_text("žluťoučký kůň"), sqlq_param_double(2.5),
                       sqlq_param_int(4611686018427387904LL)};
    sqlq_error err;
    sqlq_error_clear(&err);
    long long rows = -1;
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO t VALUES (?, ?, ?, ?)", p, 4, &rows, &err),
                     SQLQ_OK);
    assert_int_equal(rows, 1);
    sqlq_param p2[4] = {sqlq_param_int(2), sqlq_param_null(), sqlq_param_null(),
                        sqlq_param_int(-5)};
    sqlq_test_db_exec_params(db, "INSERT INTO t VALUES (?, ?, ?, ?)", p2, 4);
    assert_int_equal(sqlq_db_exec(db, "UPDATE t SET score = score + 1", NULL, 0, &rows, &err),
                     SQLQ_OK);
    assert_int_equal(rows, 2);
    assert_int_equal(sqlq_db_exec(db, "DELETE FROM t WHERE id = 99", NULL, 0, &rows, &err),
                     SQLQ_OK);
    assert_int_equal(rows, 0);

    json_t *out = NULL;
    assert_int_equal(
        sqlq_db_query(db, "SELECT id, name, score, big FROM t ORDER BY id", NULL, 0, &out, &err),
        SQLQ_OK);
    assert_int_equal(json_array_size(out), 2);
    json_t *r0 = json_array_get(out, 0), *r1 = json_array_get(out, 1);
    assert_int_equal(json_integer_value(json_object_get(r0, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(r0, "name")), "žluťoučký kůň");
    assert_true(json_real_value(json_object_get(r0, "score")) == 3.5);
    assert_string_equal(json_string_value(json_object_get(r0, "big")), "4611686018427387904");
    assert_true(json_is_null(json_object_get(r1, "name")));
    assert_true(json_is_null(json_object_get(r1, "score")));
    assert_int_equal(json_integer_value(json_object_get(r1, "big")), -5);
    json_decref(out);

    sqlq_param by_name = sqlq_param_text("žluťoučký kůň");
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT id FROM t WHERE name = ?", &by_name, 1), 1);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM t", NULL, 0), 2);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT name FROM t WHERE id = 2", NULL, 0), 0); /* NULL -> 0 */
    int64_t v = 7;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_query_int(db, "SELECT id FROM t WHERE id = 99", NULL, 0, &v, &err),
                     SQLQ_E_NOT_FOUND);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_query_int(db, "SELECT name FROM t WHERE id = 1", NULL, 0, &v, &err),
                     SQLQ_E_PARSE);
    sqlq_db_close(db);
}

static void transactions(const char *conn)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_test_db_exec_params(db, "CREATE TABLE tx (id INTEGER PRIMARY KEY)", NULL, 0);
    sqlq_db_rollback(db); /* nothing open: harmless */
    assert_int_equal(sqlq_db_commit(db, &err), SQLQ_E_INVALID);

    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_E_INVALID);
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (1)", NULL, 0);
    sqlq_db_rollback(db);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM tx", NULL, 0), 0);

    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (2)", NULL, 0);
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (3)", NULL, 0);
    assert_int_equal(sqlq_db_commit(db, &err), SQLQ_OK);

    /* Autocommit is back on: this insert survives a fresh connection. */
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (4)", NULL, 0);
    sqlq_db_close(db);
    db = sqlq_test_db_open(conn);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM tx", NULL, 0), 3);
    sqlq_db_close(db);
}

static int count_rows(void *ctx, json_t *row, sqlq_error *err)
{
    (void)err;
    int *n = ctx;
    assert_true(json_is_object(row));
    return ++*n == 5 ? SQLQ_E_CANCELLED : SQLQ_OK;
}

static void streaming(const char *conn, const char *series_sql)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    int n = 0;
    assert_int_equal(sqlq_db_query_each(db, series_sql, NULL, 0, count_rows, &n, &err),
                     SQLQ_E_CANCELLED);
    assert_int_equal(n, 5);
    /* The connection is usable after an abandoned cursor. */
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT 42", NULL, 0), 42);
    sqlq_db_close(db);
}

/* ---- SQLite ---- */

static void test_sql_db_sqlite_statements(void **state)
{
    (void)state;
    char *conn = sqlite_conn("db-basic");
    basic_statements(conn, &sqlq_dialect_sqlite);
    free(conn);
}

static void test_sql_db_sqlite_transactions(void **state)
{
    (void)state;
    char *conn = sqlite_conn("db-tx");
    transactions(conn);
    free(conn);
}

static void test_sql_db_sqlite_streaming(void **state)
{
    (void)state;
    char *conn = sqlite_conn("db-stream");
    streaming(conn,
              "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100000) "
              "SELECT n FROM s");
    free(conn);
}

static void test_sql_db_sqlite_constraint_error(void **state)
{
    (void)state;
    char *conn = sqlite_conn("db-err");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(db, "CREATE TABLE u (id INTEGER PRIMARY KEY)", NULL, 0);
    sqlq_test_db_exec_params(db, "INSERT INTO u VALUES (1)", NULL, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO u VALUES (1)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    assert_string_equal(err.sqlstate, "HY000");
    assert_int_equal(err.native_code, 19); /* SQLITE_CONSTRAINT */
    assert_false(err.transient);
    assert_non_null(strstr(err.message, "UNIQUE"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "SELECT * FROM missing_table", NULL, 0, NULL, &err),
                     SQLQ_E_SQL);
    assert_non_null(strstr(err.message, "missing_table"));
    sqlq_db_close(db);
    free(conn);
}

/* BEGIN IMMEDIATE takes the write lock at begin: a second writer is refused (BUSY, transient)
 * at its own begin, after its Timeout=, not in the middle of its transaction. */
static void test_sql_db_sqlite_busy_is_transient(void **state)
{
    (void)state;
    char path[1024];
    char *conn = sqlq_test_sqlite_db("db-busy", path, sizeof(path));
    sqlq_db *a = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(a, "CREATE TABLE b (id INTEGER PRIMARY KEY)", NULL, 0);
    char conn2[1200];
    /* Timeout=0 means "wait 1000 s" to sqliteodbc (values < 1 fall back to its maximum). */
    snprintf(conn2, sizeof(conn2), "Driver={SQLite3};Database=%s;Timeout=50;", path);
    sqlq_db *b = sqlq_test_db_open(conn2);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(a, &err), SQLQ_OK);
    sqlq_test_db_exec_params(a, "INSERT INTO b VALUES (1)", NULL, 0);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(b, &err), SQLQ_E_SQL);
    assert_true(err.transient);
    assert_string_equal(err.sqlstate, "HY000");
    assert_int_equal(err.native_code, 5); /* SQLITE_BUSY */
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(b, "INSERT INTO b VALUES (2)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    assert_true(err.transient);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_commit(a, &err), SQLQ_OK);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(b, &err), SQLQ_OK);
    sqlq_test_db_exec_params(b, "INSERT INTO b VALUES (2)", NULL, 0);
    assert_int_equal(sqlq_db_commit(b, &err), SQLQ_OK);
    assert_int_equal(sqlq_test_db_query_int(a, "SELECT count(*) FROM b", NULL, 0), 2);
    sqlq_db_close(a);
    sqlq_db_close(b);
    free(conn);
}

/* "DSN=name" works as well as a driver connection string (a user DSN from $ODBCINI). */
static void test_sql_db_sqlite_dsn(void **state)
{
    (void)state;
    char path[1024];
    char *conn = sqlq_test_sqlite_db("db-dsn", path, sizeof(path));
    char ini[1100], dsn[64];
    snprintf(ini, sizeof(ini), "%s.odbc.ini", path);
    sqlq_test_unique_name("sqlqdsn", dsn, sizeof(dsn));
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "[%s]\nDriver=SQLite3\nDatabase=%s\nTimeout=2000\n", dsn, path);
    fclose(f);
    setenv("ODBCINI", ini, 1);
    char dsn_conn[128];
    snprintf(dsn_conn, sizeof(dsn_conn), "DSN=%s;", dsn);
    sqlq_db *db = sqlq_test_db_open(dsn_conn);
    assert_ptr_equal(sqlq_db_dialect(db), &sqlq_dialect_sqlite);
    sqlq_test_db_exec_params(db, "CREATE TABLE d (id INTEGER PRIMARY KEY)", NULL, 0);
    sqlq_db_close(db);
    db = sqlq_test_db_open(conn); /* the same file */
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM d", NULL, 0), 0);
    sqlq_db_close(db);
    unsetenv("ODBCINI");
    free(conn);
}

static void test_sql_db_connect_failures(void **state)
{
    (void)state;
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect("", &db, &err), SQLQ_E_INVALID);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect("Driver={No Such Driver};PWD=hunter2", &db, &err), SQLQ_E_SQL);
    assert_null(db);
    assert_string_equal(err.sqlstate, "01000"); /* unixODBC: cannot load the driver */
    assert_null(strstr(err.message, "hunter2"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect("DSN=sqlq_no_such_dsn", &db, &err), SQLQ_E_SQL);
    assert_string_equal(err.sqlstate, "IM002");
    assert_false(err.transient);
}

/* ---- PostgreSQL ---- */

static void test_sql_db_pg_statements(void **state)
{
    (void)state;
    char *conn = sqlq_test_pg_create_db("db_basic");
    basic_statements(conn, &sqlq_dialect_postgres);
    free(conn);
}

static void test_sql_db_pg_transactions(void **state)
{
    (void)state;
    char *conn = sqlq_test_pg_create_db("db_tx");
    transactions(conn);
    free(conn);
}

static void test_sql_db_pg_streaming(void **state)
{
    (void)state;
    char *conn = sqlq_test_pg_create_db("db_stream");
    streaming(conn, "SELECT n FROM generate_series(1, 1000000) AS n");
    free(conn);
}

static void test_sql_db_pg_unique_violation(void **state)
{
    (void)state;
    char *conn = sqlq_test_pg_create_db("db_err");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(db, "CREATE TABLE u (id int PRIMARY KEY)", NULL, 0);
    sqlq_test_db_exec_params(db, "INSERT INTO u VALUES (1)", NULL, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO u VALUES (1)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    assert_string_equal(err.sqlstate, "23505");
    assert_true(err.native_code != 0);
    assert_false(err.transient);
    assert_non_null(strstr(err.message, "duplicate key"));
    /* In a transaction the failed statement leaves the connection usable after rollback. */
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO u VALUES (1)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    sqlq_db_rollback(db);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM u", NULL, 0), 1);
    sqlq_db_close(db);
    free(conn);
}

/* psqlODBC sends text and int64 parameters untyped, so each compares with integer, bigint
 * and text columns; doubles are typed float8. */
static void test_sql_db_pg_param_types(void **state)
{
    (void)state;
    char *conn = sqlq_test_pg_create_db("db_params");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(db,
            "CREATE TABLE p (i int PRIMARY KEY, b bigint, s text, n numeric(20,2), f float8, "
            "y bytea)",
            NULL, 0);
    sqlq_test_db_exec_params(db, "INSERT INTO p VALUES (7, 4611686018427387904, '7', 7.5, 0.25, '\\x00ff')", NULL,
            0);
    static const char *const int_cols[] = {"i", "b", "s"};
    for (size_t c = 0; c < 3; c++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM p WHERE %s = ?", int_cols[c]);
        sqlq_param text = sqlq_param_text(c == 1 ? "4611686018427387904" : "7");
        sqlq_param num = sqlq_param_int(c == 1 ? 4611686018427387904LL : 7);
        assert_int_equal(sqlq_test_db_query_int(db, sql, &text, 1), 1);
        assert_int_equal(sqlq_test_db_query_int(db, sql, &num, 1), 1);
        sqlq_param other = sqlq_param_int(8);
        assert_int_equal(sqlq_test_db_query_int(db, sql, &other, 1), 0);
    }
    sqlq_param n = sqlq_param_text("7.50");
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE n = ?", &n, 1), 1);
    sqlq_param f = sqlq_param_double(0.25);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE f = ?", &f, 1), 1);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE i < ?", &f, 1), 0);
    sqlq_param y = sqlq_param_binary("\x00\xff", 2);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE y = ?", &y, 1), 1);
    sqlq_param null = sqlq_param_null();
    assert_int_equal(
        sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE s IS NOT DISTINCT FROM ?", &null, 1), 0);
    sqlq_param big[2] = {sqlq_param_int(INT64_MIN), sqlq_param_int(INT64_MAX)};
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE b > ? AND b < ?", big, 2), 1);
    sqlq_db_close(db);
    free(conn);
}

/* A password of real strength never reaches an error message, even when the server echoes it
 * (here as the name of a database that does not exist); a short one (redact.h: under 16 bytes,
 * it could be an ordinary word) does not blank a name that happens to equal it. */
static void test_sql_db_pg_password_redacted(void **state)
{
    (void)state;
    char *base = sqlq_test_read_env_file("postgres/odbc");
    assert_non_null(base);
    char conn[2048];
    snprintf(conn, sizeof(conn), "%sDatabase=s3cretPw77-long-one;PWD={s3cretPw77-long-one};", base);
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect(conn, &db, &err), SQLQ_E_SQL);
    assert_null(db);
    assert_null(strstr(err.message, "s3cretPw77"));
    assert_non_null(strstr(err.message, "***"));
    /* psqlODBC reports every failed connect as 08001 (native 101), so even a missing database
     * counts as transient: it cannot be told from a server that is still starting. */
    assert_string_equal(err.sqlstate, "08001");
    snprintf(conn, sizeof(conn), "%sDatabase=orders7;PWD={orders7};", base);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect(conn, &db, &err), SQLQ_E_SQL);
    assert_non_null(strstr(err.message, "database \"orders7\" does not exist"));
    free(base);
}

static void test_sql_db_pg_reconnect_after_kill(void **state)
{
    (void)state;
    char *conn = sqlq_test_pg_create_db("db_kill");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_db *killer = sqlq_test_db_open(conn);
    int64_t pid = sqlq_test_db_query_int(db, "SELECT pg_backend_pid()", NULL, 0);
    sqlq_param p = sqlq_param_int(pid);
    assert_int_equal(
        sqlq_test_db_query_int(killer, "SELECT CASE WHEN pg_terminate_backend(CAST(? AS int)) THEN 1 ELSE 0 END",
                  &p, 1),
        1);
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t v = 0;
    /* The first statement may still be answered by the dying backend: try twice. */
    sqlq_result r = sqlq_db_query_int(db, "SELECT 1", NULL, 0, &v, &err);
    if (r == SQLQ_OK) {
        sqlq_error_clear(&err);
        r = sqlq_db_query_int(db, "SELECT 1", NULL, 0, &v, &err);
    }
    assert_int_equal(r, SQLQ_E_SQL);
    /* psqlODBC 13 passes the server's 57P01 (admin shutdown) through; 08S01 if it only saw
     * the socket close. */
    assert_true(strcmp(err.sqlstate, "57P01") == 0 || strcmp(err.sqlstate, "08S01") == 0);
    if (!err.transient)
        fail_msg("not transient: %s (sqlstate=%s native=%ld)", err.message, err.sqlstate,
                 err.native_code);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_reconnect(db, NULL, &err), SQLQ_OK);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT 1", NULL, 0), 1);
    assert_true(sqlq_test_db_query_int(db, "SELECT pg_backend_pid()", NULL, 0) != pid);
    sqlq_db_close(killer);

    /* A stop request ends a reconnect before it tries. */
    sqlq_stop stop = 1;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_reconnect(db, &stop, &err), SQLQ_E_CANCELLED);
    stop = 0;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_reconnect(db, &stop, &err), SQLQ_OK);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT 1", NULL, 0), 1);
    sqlq_db_close(db);
    free(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sql_db_sqlite_dsn),
        cmocka_unit_test(test_sql_db_connect_failures),
        cmocka_unit_test(test_sql_db_sqlite_statements),
        cmocka_unit_test(test_sql_db_sqlite_transactions),
        cmocka_unit_test(test_sql_db_sqlite_streaming),
        cmocka_unit_test(test_sql_db_sqlite_constraint_error),
        cmocka_unit_test(test_sql_db_sqlite_busy_is_transient),
        cmocka_unit_test(test_sql_db_pg_statements),
        cmocka_unit_test(test_sql_db_pg_transactions),
        cmocka_unit_test(test_sql_db_pg_streaming),
        cmocka_unit_test(test_sql_db_pg_unique_violation),
        cmocka_unit_test(test_sql_db_pg_param_types),
        cmocka_unit_test(test_sql_db_pg_password_redacted),
        cmocka_unit_test(test_sql_db_pg_reconnect_after_kill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
