/* sqlq_db_keep_prepared against real PostgreSQL through psqlODBC: a statement run again with
 * new parameters is prepared once (PostgreSQL keeps one named statement and its plan), and a
 * kept `SELECT *` whose table gained a column is prepared again rather than failing for good. */
#include "db.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Connects to conn (a string of sqlq_test_pg_create_db, freed here). */
static sqlq_db *open_db(char *conn)
{
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_db_connect(conn, &db, &err);
    free(conn);
    if (r != SQLQ_OK)
        fail_msg("connect failed: %s", err.message);
    return db;
}

static int64_t query_int(sqlq_db *db, const char *sql, const sqlq_param *p, size_t n)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t v = -1;
    if (sqlq_db_query_int(db, sql, p, n, &v, &err) != SQLQ_OK)
        fail_msg("%s: %s", sql, err.message);
    return v;
}

/* Kept statements of this session whose text holds marker, and how often they ran. */
static const char *const kept_sql = "SELECT count(*) FROM pg_prepared_statements "
                                    "WHERE statement LIKE '%keep_marker%'";
static const char *const runs_sql = "SELECT COALESCE(sum(generic_plans + custom_plans), 0) "
                                    "FROM pg_prepared_statements "
                                    "WHERE statement LIKE '%keep_marker%'";

static void test_kept_statement_is_prepared_once(void **state)
{
    (void)state;
    sqlq_db *db = open_db(sqlq_test_pg_create_db("keep"));
    const char *sql = "/* keep_marker */ SELECT CAST(? AS bigint) + 1";
    for (int64_t i = 0; i < 3; i++) {
        sqlq_param p = sqlq_param_int(i);
        assert_int_equal(query_int(db, sql, &p, 1), i + 1);
    }
    assert_int_equal(query_int(db, kept_sql, NULL, 0), 0); /* off: nothing kept */
    assert_false(sqlq_db_keep_prepared(db, true));
    for (int64_t i = 0; i < 7; i++) {
        sqlq_param p = sqlq_param_int(i * 10);
        assert_int_equal(query_int(db, sql, &p, 1), i * 10 + 1);
    }
    assert_true(sqlq_db_keep_prepared(db, false));
    assert_int_equal(query_int(db, kept_sql, NULL, 0), 1);
    assert_int_equal(query_int(db, runs_sql, NULL, 0), 7); /* one statement, planned per use */
    sqlq_db_close(db);
}

static size_t columns_of(sqlq_db *db, const char *sql, sqlq_result *out_r, sqlq_error *err)
{
    json_t *cols = NULL, *rows = NULL;
    *out_r = sqlq_db_query_values(db, sql, NULL, 0, &cols, &rows, err);
    size_t n = json_array_size(cols);
    json_decref(cols);
    json_decref(rows);
    return n;
}

static void test_kept_star_follows_alter_table(void **state)
{
    (void)state;
    sqlq_db *db = open_db(sqlq_test_pg_create_db("keepalter"));
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "CREATE TABLE t (a int); INSERT INTO t VALUES (1)", NULL,
                                  0, NULL, &err),
                     SQLQ_OK);
    const char *sql = "/* keep_marker */ SELECT * FROM t";
    sqlq_db_keep_prepared(db, true);
    sqlq_result r;
    assert_int_equal(columns_of(db, sql, &r, &err), 1);
    assert_int_equal(r, SQLQ_OK);
    sqlq_db_keep_prepared(db, false);
    assert_int_equal(sqlq_db_exec(db, "ALTER TABLE t ADD COLUMN b text", NULL, 0, NULL, &err),
                     SQLQ_OK);
    sqlq_db_keep_prepared(db, true);
    /* PostgreSQL refuses the kept plan once: "cached plan must not change result type" */
    sqlq_error_clear(&err);
    size_t n = columns_of(db, sql, &r, &err);
    if (r == SQLQ_OK) {
        assert_int_equal(n, 2);
    } else {
        assert_int_equal(r, SQLQ_E_SQL);
        assert_non_null(strstr(err.message, "cached plan must not change result type"));
    }
    sqlq_error_clear(&err);
    assert_int_equal(columns_of(db, sql, &r, &err), 2); /* prepared again */
    assert_int_equal(r, SQLQ_OK);
    sqlq_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_statement_is_prepared_once),
        cmocka_unit_test(test_kept_star_follows_alter_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
