/* sql/table_key on the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb): which
 * unique indexes qualify as a key
 * (exact columns in any order, the index's order kept, NOT NULL, not partial, not on an
 * expression, INCLUDE columns left out), the messages that name the indexes a table has, the
 * same choice when described again, and the SQL sink's sole unique key. */
#include "db.h"
#include "table.h"
#include "table_key.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static sqlq_table *keyed(sqlq_db *db, const char *table, const char *keys)
{
    sqlq_table_name name;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_table_name_parse(table, &name, &err), SQLQ_OK);
    sqlq_table *t = NULL;
    if (sqlq_table_key_describe(db, &name, keys, &t, &err) != SQLQ_OK)
        fail_msg("%s keyed by %s: %s", table, keys ? keys : "(primary key)", err.message);
    return t;
}

static void refused(sqlq_db *db, const char *table, const char *keys, const char *message)
{
    sqlq_table_name name;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_table_name_parse(table, &name, &err), SQLQ_OK);
    sqlq_table *t = NULL;
    sqlq_result r = sqlq_table_key_describe(db, &name, keys, &t, &err);
    assert_null(t);
    if (r == SQLQ_OK || !strstr(err.message, message))
        fail_msg("%s keyed by %s: want an error with \"%s\", got %d \"%s\"", table,
                 keys ? keys : "(primary key)", message, r, err.message);
}

static void expect_key(const sqlq_table *t, const char *names, const char *index)
{
    char got[256];
    sqlq_table_key_names(t, got, sizeof(got));
    assert_string_equal(got, names);
    if (index)
        assert_string_equal(t->key_index, index);
    else
        assert_null(t->key_index);
    for (size_t k = 0; k < t->nkey; k++) {
        assert_true(t->columns[t->key[k]].in_key);
        assert_int_equal(t->columns[t->key[k]].key_pos, (int)k + 1);
    }
}

/* What every database answers alike (partial: whether it has partial indexes). */
static void common_cases(sqlq_db *db, const char *shown, bool partial)
{
    sqlq_test_db_exec(db, "CREATE TABLE u (a INTEGER NOT NULL, b VARCHAR(9) NOT NULL, "
                          "c INTEGER, d INTEGER NOT NULL)");
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX u_ba ON u (b, a)");
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX u_c ON u (c)");
    if (partial)
        sqlq_test_db_exec(db, "CREATE UNIQUE INDEX u_d_part ON u (d) WHERE d > 0");
    /* named in another order: the index's order */
    sqlq_table *t = keyed(db, "u", " a , B ");
    expect_key(t, "b,a", "u_ba");
    assert_false(t->columns[2].in_key);
    sqlq_table *again = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_table_key_describe_again(db, t, &again, &err), SQLQ_OK);
    assert_int_equal(sqlq_table_compare(t, again), SQLQ_TABLE_SAME);
    expect_key(again, "b,a", "u_ba");
    assert_true(sqlq_table_key_is(again, "a,b"));
    assert_false(sqlq_table_key_is(again, "a"));
    sqlq_table_free(again);
    sqlq_table_free(t);

    char want[300];
    snprintf(want, sizeof(want), "table %s has no primary key", shown);
    refused(db, "u", NULL, want);
    refused(db, "u", NULL, "u_ba (b, a), u_c (c; a column may be NULL)");
    refused(db, "u", "c", "column c of unique index u_c may be NULL");
    refused(db, "u", "d", "no unique index or constraint is on exactly these columns");
    refused(db, "u", "a", "no unique index or constraint is on exactly these columns");
    refused(db, "u", "a,b,a", "column a twice");
    refused(db, "u", "a,zz", "no column zz");
    refused(db, "u", "a,,b", "not allowed");

    /* a primary-key table: its key by default, other unique columns when named */
    sqlq_test_db_exec(db, "CREATE TABLE p (id INTEGER PRIMARY KEY, sku VARCHAR(9) NOT NULL)");
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX p_sku ON p (sku)");
    t = keyed(db, "p", NULL);
    expect_key(t, "id", NULL);
    sqlq_table_free(t);
    t = keyed(db, "p", "id");
    expect_key(t, "id", NULL);
    sqlq_table_free(t);
    t = keyed(db, "p", "sku");
    expect_key(t, "sku", "p_sku");
    sqlq_table_free(t);

    /* the sink: the one unique key of NOT NULL columns, else refused */
    sqlq_table_name name;
    assert_int_equal(sqlq_table_name_parse("u", &name, &err), SQLQ_OK);
    assert_int_equal(sqlq_table_describe_any(db, &name, &t, &err), SQLQ_OK);
    assert_int_equal(t->nkey, 0);
    assert_int_equal(sqlq_table_key_use_sole_unique(db, t, &err), SQLQ_OK);
    expect_key(t, "b,a", "u_ba");
    sqlq_table_free(t);
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX u_d ON u (d)");
    assert_int_equal(sqlq_table_describe_any(db, &name, &t, &err), SQLQ_OK);
    assert_int_equal(sqlq_table_key_use_sole_unique(db, t, &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "more than one"));
    assert_int_equal(t->nkey, 0);
    sqlq_table_free(t);
}

static void test_table_key_sqlite(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("sqlite", "tablekey");
    sqlq_db *db = sqlq_test_db_open(conn);
    common_cases(db, "u", true);
    sqlq_test_db_exec(db, "CREATE TABLE e (a TEXT NOT NULL)");
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX e_lower ON e (lower(a))");
    refused(db, "e", "a", "e_lower (an expression)");
    sqlq_db_close(db);
    free(conn);
}

static void test_table_key_postgres(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("postgres", "tablekey");
    sqlq_db *db = sqlq_test_db_open(conn);
    common_cases(db, "public.u", true);
    /* NULLS NOT DISTINCT does not make a nullable column a key; INCLUDE columns are not key */
    sqlq_test_db_exec(db, "CREATE TABLE n (a int, b int NOT NULL, c int)");
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX n_a ON n (a) NULLS NOT DISTINCT");
    sqlq_test_db_exec(db, "CREATE UNIQUE INDEX n_b ON n (b) INCLUDE (c)");
    refused(db, "n", "a", "NULLS NOT DISTINCT does not help");
    sqlq_table *t = keyed(db, "n", "b");
    expect_key(t, "b", "n_b");
    sqlq_table_free(t);
    /* a deferrable unique constraint is not a key: duplicates may exist inside a transaction */
    sqlq_test_db_exec(db, "CREATE TABLE f (a int NOT NULL, CONSTRAINT f_a UNIQUE (a) DEFERRABLE)");
    refused(db, "f", "a", "f_a (a; partial, on an expression or deferrable)");
    sqlq_db_close(db);
    free(conn);
}

/* MariaDB has no partial or expression indexes: the common cases without them. */
static void test_table_key_mariadb(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db("mariadb", "tablekey");
    sqlq_db *db = sqlq_test_db_open(conn);
    json_t *rows = NULL;
    SQLQ_TEST_OK(sqlq_db_query(db, "SELECT CONCAT(DATABASE(), '.u') AS u", NULL, 0, &rows, err));
    char shown[160];
    snprintf(shown, sizeof(shown), "%s", json_string_value(json_object_get(json_array_get(rows, 0), "u")));
    json_decref(rows);
    common_cases(db, shown, false);
    sqlq_db_close(db);
    free(conn);
}

/* Each database's case. */
typedef struct database {
    const char *name;
    CMUnitTestFunction test;
} database;

static const database databases[] = {
    {"sqlite", test_table_key_sqlite},
    {"postgres", test_table_key_postgres},
    {"mariadb", test_table_key_mariadb},
};

int main(void)
{
    const database *d = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        {d->name, d->test, NULL, NULL, NULL},
    };
    return cmocka_run_group_tests_name(d->name, tests, NULL, NULL);
}
