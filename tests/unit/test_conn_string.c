/* sql/conn_string: finding PWD= values (to redact them) in ODBC connection strings. */
#include "conn_string.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static const char *const pwd_keys[] = {"PWD", "Password", NULL};

/* got (freed here) holds exactly want, in order. */
static void expect_list(const char *conn, char **got, const char *const *want)
{
    assert_non_null(got);
    size_t i = 0;
    for (; want[i]; i++) {
        if (!got[i])
            fail_msg("%s: missing %s", conn, want[i]);
        assert_string_equal(got[i], want[i]);
    }
    if (got[i])
        fail_msg("%s: unexpected %s", conn, got[i]);
    sqlq_conn_string_list_free(got);
}

static void expect_values(const char *conn, const char *const *want)
{
    expect_list(conn, sqlq_conn_string_values(conn, pwd_keys), want);
}

static void test_conn_string_plain_and_braced(void **state)
{
    (void)state;
    expect_values("Driver={PostgreSQL Unicode};Server=h;UID=u;PWD=s3cret;",
                  (const char *const[]){"s3cret", NULL});
    expect_values("pwd = spaced out ;uid=x", (const char *const[]){"spaced out", NULL});
    expect_values("PWD={a;b=c}}d};UID=u", (const char *const[]){"a;b=c}d", NULL});
    expect_values("Password={x y}", (const char *const[]){"x y", NULL});
    expect_values("DSN=prod", (const char *const[]){NULL});
    expect_values("PWD=;UID=u", (const char *const[]){NULL}); /* empty: nothing to hide */
    expect_values("", (const char *const[]){NULL});
    expect_values(NULL, (const char *const[]){NULL});
}

static void test_conn_string_repeated_keys(void **state)
{
    (void)state;
    /* Drivers disagree on which repeated key wins: every value is a secret. */
    expect_values("PWD=first;Server=h;PWD={second};password=third",
                  (const char *const[]){"first", "second", "third", NULL});
    /* Keys are whole names: XPWD and PWDX are not PWD. */
    expect_values("XPWD=no;PWDX=no;Database={PWD=no}", (const char *const[]){NULL});
}

static void test_conn_string_malformed(void **state)
{
    (void)state;
    expect_values("PWD={unterminated", (const char *const[]){"unterminated", NULL});
    expect_values(";;;PWD=x;;", (const char *const[]){"x", NULL});
    expect_values("novalue;PWD=y", (const char *const[]){"y", NULL});
    expect_values("\tPwd\t =\tx1;  PASSWORD =y2 ", (const char *const[]){"x1", "y2", NULL});
}

/* An unterminated '{' is refused before connecting, without a word of what follows it: the
 * driver manager would take the rest, PWD= and all, as the driver's name and print it. */
static void test_conn_string_unterminated_brace_refused(void **state)
{
    (void)state;
    const char *bad = "Driver={PostgreSQL Unicode;Server=127.0.0.1;Port=25432;Database=shop;UID=sqlq;PWD=hunter2";
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_conn_string_check(bad, &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "the value of Driver opens '{' at offset 7 and never closes it"));
    assert_null(strstr(err.message, "hunter2"));
    assert_null(strstr(err.message, "PostgreSQL"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_conn_string_check("Driver={SQLite3};Database=/x;PWD={a}}b", &err), SQLQ_E_INVALID);
    assert_null(strstr(err.message, "a}}b"));
    const char *good[] = {"Driver={PostgreSQL Unicode};PWD={a}}b};UID=u", "DSN=prod", "", "Server=a{b;PWD=c}",
                          "Driver={x}junk;PWD=y"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(sqlq_conn_string_check(good[i], NULL), SQLQ_OK);
}

static void expect_secrets(const char *conn, const char *const *want)
{
    expect_list(conn, sqlq_conn_string_secrets(conn), want);
}

/* Every spelling the drivers accept (keywords are case-insensitive): psqlODBC Password/PWD,
 * MariaDB and MySQL PASSWORD/PWD and MySQL's PWD1..3, SQL Server PWD; a braced value also as
 * written; the password inside psqlODBC's pqopt={...} libpq options. */
static void test_conn_string_secrets_every_spelling(void **state)
{
    (void)state;
    expect_secrets("Driver={PostgreSQL Unicode};Server=h;UID=u;Password=pg-secret",
                   (const char *const[]){"pg-secret", NULL});
    expect_secrets("DRIVER={MariaDB};PASSWORD=maria1;pwd = two ;Pwd2={mfa;2}",
                   (const char *const[]){"maria1", "two", "mfa;2", NULL});
    expect_secrets("PWD={a}}b};UID=u", (const char *const[]){"a}b", "a}}b", NULL});
    expect_secrets("Driver={PostgreSQL Unicode};pqopt={sslmode=require password='a b\\'c' user=u}",
                   (const char *const[]){"a b'c", "a b\\'c", NULL});
    expect_secrets("pqopt={password = p\\ q connect_timeout=5}", (const char *const[]){"p q", "p\\ q", NULL});
    expect_secrets("pqopt={passwordx=no user=password}", (const char *const[]){NULL});
    expect_secrets("UID=u;Database={PWD=no}", (const char *const[]){NULL});
}

static void test_conn_string_describe_names_the_database_only(void **state)
{
    (void)state;
    char out[300];
    assert_string_equal(sqlq_conn_string_describe("Driver={PostgreSQL Unicode};Server=127.0.0.1;"
                                                  "Port=5432;UID=u;PWD=secret;Database=orders;",
                                                  out, sizeof(out)),
                        "Server=127.0.0.1;Port=5432;Database=orders");
    assert_string_equal(sqlq_conn_string_describe("Driver={SQLite3};Database=/tmp/a.db;Timeout=5",
                                                  out, sizeof(out)),
                        "Database=/tmp/a.db");
    assert_string_equal(sqlq_conn_string_describe("DSN=prod;pwd=x", out, sizeof(out)), "DSN=prod");
    assert_string_equal(sqlq_conn_string_describe("Driver=x;UID=u", out, sizeof(out)),
                        "(no server or database named)");
    assert_null(strstr(sqlq_conn_string_describe("Server=h;PWD={a;b};Database=d", out, sizeof(out)),
                       "a;b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_string_plain_and_braced),
        cmocka_unit_test(test_conn_string_repeated_keys),
        cmocka_unit_test(test_conn_string_malformed),
        cmocka_unit_test(test_conn_string_unterminated_brace_refused),
        cmocka_unit_test(test_conn_string_secrets_every_spelling),
        cmocka_unit_test(test_conn_string_describe_names_the_database_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
