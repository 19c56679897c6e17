/* sqlq_db_keep_prepared on the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb): a
 * statement run again with new parameters is prepared once (seen where the server shows its
 * prepared statements: PostgreSQL keeps one named statement and its plan, MariaDB counts its
 * prepares), and a kept `SELECT *` whose table gained a column is prepared again rather than
 * failing for good. */
#include "db.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Connects to conn (a string of sqlq_test_create_db, freed here). */
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

/* How a database shows this session's prepared statements. */
typedef struct database {
    const char *name;
    /* kept statements whose text holds keep_marker, and how often they ran (NULL: not shown) */
    const char *kept_sql, *runs_sql;
    /* or: how many statements the session prepared so far */
    const char *prepares_sql;
    const char *plus_one; /* SELECT ? as a bigint + 1, marked keep_marker */
    const char *stale;    /* what a kept SELECT * says once after its table gained a column */
} database;

static const database databases[] = {
    {"sqlite", NULL, NULL, NULL, "/* keep_marker */ SELECT CAST(? AS bigint) + 1", ""},
    {"postgres",
     "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%keep_marker%'",
     "SELECT COALESCE(sum(generic_plans + custom_plans), 0) FROM pg_prepared_statements "
     "WHERE statement LIKE '%keep_marker%'",
     NULL, "/* keep_marker */ SELECT CAST(? AS bigint) + 1",
     "cached plan must not change result type"},
    {"mariadb", NULL, NULL,
     "SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM information_schema.SESSION_STATUS "
     "WHERE VARIABLE_NAME = 'COM_STMT_PREPARE'",
     "/* keep_marker */ SELECT CAST(? AS SIGNED) + 1",
     "differs from number of columns in resultset"},
};

static const database *db_under_test;

static void test_kept_statement_is_prepared_once(void **state)
{
    (void)state;
    const database *d = db_under_test;
    if (!d->kept_sql && !d->prepares_sql) {
        print_message("%s shows no prepared statements\n", d->name);
        skip();
    }
    sqlq_db *db = open_db(sqlq_test_create_db(d->name, "keep"));
    const char *sql = d->plus_one;
    int64_t prepares = d->prepares_sql ? query_int(db, d->prepares_sql, NULL, 0) : 0;
    for (int64_t i = 0; i < 3; i++) {
        sqlq_param p = sqlq_param_int(i);
        assert_int_equal(query_int(db, sql, &p, 1), i + 1);
    }
    if (d->kept_sql)
        assert_int_equal(query_int(db, d->kept_sql, NULL, 0), 0); /* off: nothing kept */
    else /* off: prepared per run (and the status query itself) */
        assert_true(query_int(db, d->prepares_sql, NULL, 0) - prepares >= 3);
    assert_false(sqlq_db_keep_prepared(db, true));
    if (d->prepares_sql)
        prepares = query_int(db, d->prepares_sql, NULL, 0);
    for (int64_t i = 0; i < 7; i++) {
        sqlq_param p = sqlq_param_int(i * 10);
        assert_int_equal(query_int(db, sql, &p, 1), i * 10 + 1);
    }
    if (d->prepares_sql) /* the status query kept too: at most 2 prepares for 7 runs */
        assert_true(query_int(db, d->prepares_sql, NULL, 0) - prepares <= 2);
    assert_true(sqlq_db_keep_prepared(db, false));
    if (d->kept_sql) {
        assert_int_equal(query_int(db, d->kept_sql, NULL, 0), 1);
        assert_int_equal(query_int(db, d->runs_sql, NULL, 0), 7); /* one statement, planned per use */
    }
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
    sqlq_db *db = open_db(sqlq_test_create_db(db_under_test->name, "keepalter"));
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "CREATE TABLE t (a int)", NULL, 0, NULL, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO t VALUES (1)", NULL, 0, NULL, &err), SQLQ_OK);
    const char *sql = "/* keep_marker */ SELECT * FROM t";
    sqlq_db_keep_prepared(db, true);
    sqlq_result r;
    assert_int_equal(columns_of(db, sql, &r, &err), 1);
    assert_int_equal(r, SQLQ_OK);
    sqlq_db_keep_prepared(db, false);
    assert_int_equal(sqlq_db_exec(db, "ALTER TABLE t ADD COLUMN b text", NULL, 0, NULL, &err),
                     SQLQ_OK);
    sqlq_db_keep_prepared(db, true);
    /* PostgreSQL refuses the kept plan once: "cached plan must not change result type" (the
     * others prepare again or answer with the new columns; SQLite keeps no statement, its
     * driver would answer with the old columns: dialect columns_at_prepare) */
    sqlq_error_clear(&err);
    size_t n = columns_of(db, sql, &r, &err);
    if (r == SQLQ_OK) {
        if (n != 2)
            fail_msg("%zu columns after ALTER TABLE", n);
    } else {
        assert_int_equal(r, SQLQ_E_SQL);
        if (!strstr(err.message, db_under_test->stale))
            fail_msg("kept SELECT * after ALTER TABLE: %s", err.message);
    }
    sqlq_error_clear(&err);
    n = columns_of(db, sql, &r, &err); /* prepared again */
    if (n != 2 || r != SQLQ_OK)
        fail_msg("%zu columns the run after (%s)", n, r == SQLQ_OK ? "ok" : err.message);
    sqlq_db_close(db);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_statement_is_prepared_once),
        cmocka_unit_test(test_kept_star_follows_alter_table),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
