/* cursor_lag: safe by default: a non-zero lag wherever writers commit out of
 * cursor order, 0 only on SQLite or when the user sets it, and the rule in words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cursor_lag.h"

#include <string.h>

static void test_cursor_lag_defaults_per_database(void **state)
{
    (void)state;
    char rule[160];
    assert_int_equal(sqlq_cursor_lag_resolve(&sqlq_dialect_postgres, SQLQ_VALUE_TIMESTAMPTZ,
                                             SQLQ_CURSOR_LAG_DEFAULT, rule, sizeof(rule)),
                     10000);
    assert_non_null(strstr(rule, "lag 10000 ms (PostgreSQL default"));
    assert_int_equal(sqlq_cursor_lag_resolve(&sqlq_dialect_postgres, SQLQ_VALUE_INT,
                                             SQLQ_CURSOR_LAG_DEFAULT, rule, sizeof(rule)),
                     10000);
    assert_int_equal(sqlq_cursor_lag_resolve(&sqlq_dialect_mssql, SQLQ_VALUE_TIMESTAMP,
                                             SQLQ_CURSOR_LAG_DEFAULT, rule, sizeof(rule)),
                     10000);
    assert_non_null(strstr(rule, "SQL Server default"));
    assert_int_equal(sqlq_cursor_lag_resolve(&sqlq_dialect_mssql, SQLQ_VALUE_ROWVERSION,
                                             SQLQ_CURSOR_LAG_DEFAULT, rule, sizeof(rule)),
                     0);
    assert_non_null(strstr(rule, "MIN_ACTIVE_ROWVERSION"));
    assert_int_equal(sqlq_cursor_lag_resolve(&sqlq_dialect_sqlite, SQLQ_VALUE_TIMESTAMP,
                                             SQLQ_CURSOR_LAG_DEFAULT, rule, sizeof(rule)),
                     0);
    assert_non_null(strstr(rule, "SQLite default"));
}

static void test_cursor_lag_set_by_the_user(void **state)
{
    (void)state;
    char rule[160];
    assert_int_equal(sqlq_cursor_lag_resolve(&sqlq_dialect_postgres, SQLQ_VALUE_TIMESTAMPTZ, 0,
                                             rule, sizeof(rule)),
                     0);
    assert_string_equal(rule, "lag 0 ms (set by safety_lag_ms)");
    assert_int_equal(
        sqlq_cursor_lag_resolve(&sqlq_dialect_sqlite, SQLQ_VALUE_INT, 2500, rule, sizeof(rule)),
        2500);
    assert_string_equal(rule, "lag 2500 ms (set by safety_lag_ms)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_lag_defaults_per_database),
        cmocka_unit_test(test_cursor_lag_set_by_the_user),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
