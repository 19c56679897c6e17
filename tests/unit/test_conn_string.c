/* sql/conn_string: finding PWD= values (to redact them) in ODBC connection strings. */
#include "conn_string.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static const char *const pwd_keys[] = {"PWD", "Password", NULL};

static void expect_values(const char *conn, const char *const *want)
{
    char **got = sqlq_conn_string_values(conn, pwd_keys);
    assert_non_null(got);
    size_t i = 0;
    for (; want[i]; i++) {
        if (!got[i])
            fail_msg("%s: missing value %s", conn, want[i]);
        assert_string_equal(got[i], want[i]);
    }
    assert_null(got[i]);
    sqlq_conn_string_list_free(got);
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_string_plain_and_braced),
        cmocka_unit_test(test_conn_string_repeated_keys),
        cmocka_unit_test(test_conn_string_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
