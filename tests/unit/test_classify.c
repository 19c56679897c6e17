#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "classify.h"

static void test_classify_http(void **state)
{
    (void)state;
    const int transient[] = {408, 429, 500, 502, 503, 504};
    const int permanent[] = {400, 401, 403, 404, 409, 412, 413, 501, 505};
    for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
        assert_true(sqlq_classify_http_transient(transient[i]));
    for (size_t i = 0; i < sizeof(permanent) / sizeof(permanent[0]); i++)
        assert_false(sqlq_classify_http_transient(permanent[i]));
}

static void test_classify_net(void **state)
{
    (void)state;
    assert_true(sqlq_classify_net_transient(SQLQ_NET_CONNECT));
    assert_true(sqlq_classify_net_transient(SQLQ_NET_TIMEOUT));
    assert_true(sqlq_classify_net_transient(SQLQ_NET_SEND));
    assert_true(sqlq_classify_net_transient(SQLQ_NET_RECV));
    assert_false(sqlq_classify_net_transient(SQLQ_NET_TLS));
    assert_false(sqlq_classify_net_transient(SQLQ_NET_OTHER));
}

static void test_classify_sql(void **state)
{
    (void)state;
    assert_true(sqlq_classify_sql_transient("08S01", 0));
    assert_true(sqlq_classify_sql_transient("40001", 0));
    assert_true(sqlq_classify_sql_transient("40P01", 0));
    assert_true(sqlq_classify_sql_transient("HYT00", 0));
    assert_true(sqlq_classify_sql_transient("57P01", 7));
    assert_true(sqlq_classify_sql_transient("HY000", 5)); /* SQLite BUSY */
    assert_true(sqlq_classify_sql_transient("HY000", 6)); /* SQLite LOCKED */
    assert_true(sqlq_classify_sql_transient("42000", 1205)); /* FreeTDS deadlock */
    assert_true(sqlq_classify_sql_transient("", 40613));
    /* MariaDB Connector/ODBC: a lost connection found while setting autocommit off */
    assert_true(sqlq_classify_sql_transient("HY001", 2013));
    assert_true(sqlq_classify_sql_transient("HY000", 2006));
    assert_false(sqlq_classify_sql_transient("HY001", 0)); /* out of memory */
    assert_false(sqlq_classify_sql_transient("23505", 7)); /* unique violation */
    assert_false(sqlq_classify_sql_transient("42P01", 7)); /* no such table */
    assert_false(sqlq_classify_sql_transient("HY000", 19)); /* SQLite constraint */
    assert_false(sqlq_classify_sql_transient(NULL, 0));
}

static void test_classify_sql_conflict(void **state)
{
    (void)state;
    assert_true(sqlq_classify_sql_conflict("40P01", 7));    /* PostgreSQL deadlock */
    assert_true(sqlq_classify_sql_conflict("40001", 7));    /* serialization failure */
    assert_true(sqlq_classify_sql_conflict("40001", 1213)); /* MariaDB/MySQL deadlock */
    assert_true(sqlq_classify_sql_conflict("42000", 1205)); /* SQL Server through FreeTDS */
    assert_false(sqlq_classify_sql_conflict("23505", 7));   /* a unique violation stays */
    assert_false(sqlq_classify_sql_conflict("HY000", 5));   /* SQLite BUSY: not a rollback */
    assert_false(sqlq_classify_sql_conflict(NULL, 0));
}

static void test_classify_sql_unavailable(void **state)
{
    (void)state;
    assert_true(sqlq_classify_sql_unavailable("08001", 101, "connect: could not connect"));
    assert_true(sqlq_classify_sql_unavailable("08S01", 35, NULL));
    assert_true(sqlq_classify_sql_unavailable("57P01", 35, "terminating connection"));
    assert_true(sqlq_classify_sql_unavailable("53300", 0, "too many clients already"));
    assert_true(sqlq_classify_sql_unavailable("28P01", 0, "password authentication failed"));
    assert_true(sqlq_classify_sql_unavailable("25006", 0, "read-only transaction"));
    assert_true(sqlq_classify_sql_unavailable("HY000", 7, "execute: The connection has been lost"));
    assert_true(sqlq_classify_sql_unavailable("HY000", 2006, "MySQL server has gone away"));
    assert_true(sqlq_classify_sql_unavailable("42000", 4060, "Cannot open database"));
    assert_true(sqlq_classify_sql_unavailable("HY000", 14, "unable to open database file"));
    assert_false(sqlq_classify_sql_unavailable("40P01", 0, "deadlock detected"));
    assert_false(sqlq_classify_sql_unavailable("23505", 7, "duplicate key"));
    assert_false(sqlq_classify_sql_unavailable("23502", 7, "violates not-null constraint"));
    assert_false(sqlq_classify_sql_unavailable("HY000", 5, "database is locked"));
    assert_false(sqlq_classify_sql_unavailable(NULL, 0, NULL));
    assert_true(sqlq_classify_http_unavailable(503));
    assert_true(sqlq_classify_http_unavailable(502));
    assert_true(sqlq_classify_http_unavailable(504));
    assert_true(sqlq_classify_http_unavailable(429));
    assert_false(sqlq_classify_http_unavailable(500));
    assert_false(sqlq_classify_http_unavailable(404));
    assert_true(sqlq_classify_net_unavailable(SQLQ_NET_CONNECT));
    assert_false(sqlq_classify_net_unavailable(SQLQ_NET_TIMEOUT));
    assert_false(sqlq_classify_net_unavailable(SQLQ_NET_RECV));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_http),
        cmocka_unit_test(test_classify_net),
        cmocka_unit_test(test_classify_sql),
        cmocka_unit_test(test_classify_sql_unavailable),
        cmocka_unit_test(test_classify_sql_conflict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
