/* queue_client: queue name rules, poison queue names and option defaults (no server). */
#include "queue_client.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static void invalid(const char *name, const char *why)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_false(sqlq_queue_name_valid(name, &err));
    assert_int_equal(err.code, SQLQ_E_INVALID);
    if (!strstr(err.message, why))
        fail_msg("'%s': message '%s' lacks '%s'", name ? name : "(null)", err.message, why);
}

static void test_queue_names_rules(void **state)
{
    (void)state;
    const char *ok[] = {"abc", "orders", "orders-poison", "a1-b2-c3",
                        "123", "a23456789012345678901234567890123456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_true(sqlq_queue_name_valid(ok[i], NULL));
    invalid("ab", "3 to 63");
    invalid("a234567890123456789012345678901234567890123456789012345678901234", "3 to 63");
    invalid(NULL, "3 to 63");
    invalid("-orders", "start or end");
    invalid("orders-", "start or end");
    invalid("or--ders", "'--'");
    invalid("Orders", "lowercase");
    invalid("or_ders", "lowercase");
    invalid("or ders", "lowercase");
    invalid("ord\xc3\xa9rs", "lowercase");
}

static void test_queue_names_poison(void **state)
{
    (void)state;
    char out[64];
    assert_true(sqlq_queue_poison_name("orders", out, sizeof(out)));
    assert_string_equal(out, "orders-poison");
    assert_false(sqlq_queue_poison_name("orders-poison", out, sizeof(out)));
    /* 56 + 7 = 63 fits; 57 + 7 would not. */
    char name[60];
    memset(name, 'q', 56);
    name[56] = '\0';
    assert_true(sqlq_queue_poison_name(name, out, sizeof(out)));
    assert_int_equal(strlen(out), 63);
    assert_true(sqlq_queue_name_valid(out, NULL));
    name[56] = 'q';
    name[57] = '\0';
    assert_false(sqlq_queue_poison_name(name, out, sizeof(out)));
    assert_false(sqlq_queue_poison_name("orders", out, 10)); /* buffer too small */
}

static void test_queue_names_option_defaults(void **state)
{
    (void)state;
    sqlq_queue_options o;
    memset(&o, 0xab, sizeof(o));
    sqlq_queue_options_default(&o);
    assert_int_equal(o.encoding, SQLQ_ENCODING_BASE64);
    assert_int_equal(o.timeout_ms, 30000);
    assert_null(o.clock);
    assert_int_equal(o.retry.initial_ms, sqlq_backoff_policy_default().initial_ms);
    assert_int_equal(o.retry.max_total_ms, sqlq_backoff_policy_default().max_total_ms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_names_rules),
        cmocka_unit_test(test_queue_names_poison),
        cmocka_unit_test(test_queue_names_option_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
