#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "poison_envelope.h"
#include "poison_match.h"

#include <stdio.h>
#include <string.h>

static bool where(const char *body, const char *field, const char *value)
{
    return sqlq_poison_match_where(body, strlen(body), field, value);
}

static bool num_eq(const char *a, const char *b)
{
    return sqlq_poison_match_number_equal(a, strlen(a), b, strlen(b));
}

static void test_poison_match_numbers_by_value(void **state)
{
    (void)state;
    assert_true(num_eq("19.99", "19.99"));
    assert_true(num_eq("19.99", "1.999e1"));
    assert_true(num_eq("19.990", "19.99"));
    assert_true(num_eq("0.001", "1E-3"));
    assert_true(num_eq("100", "1e2"));
    assert_true(num_eq("-0", "0"));
    assert_true(num_eq("123456789012345678901234567890", "1.2345678901234567890123456789e29"));
    assert_false(num_eq("123456789012345678901234567890", "123456789012345678901234567891"));
    assert_false(num_eq("19.99", "19.989999999999998"));
    assert_false(num_eq("19.99", "-19.99"));
    assert_false(num_eq("19.99", "abc"));
    assert_false(num_eq("01", "1")); /* not a JSON number */
}

static void test_poison_match_where(void **state)
{
    (void)state;
    const char *b = "{\"amount\": 19.99, \"op\":\"update\", \"n\":null, \"ok\":true, "
                    "\"big\":123456789012345678901234567890, \"nested\":{\"amount\":1}}";
    assert_true(where(b, "amount", "19.99"));
    assert_true(where(b, "amount", "19.990"));
    assert_false(where(b, "amount", "19.989999999999998"));
    assert_true(where(b, "op", "update"));
    assert_true(where(b, "n", "null"));
    assert_true(where(b, "ok", "true"));
    assert_true(where(b, "big", "123456789012345678901234567890"));
    assert_false(where(b, "missing", "1"));
    assert_false(where("not json", "a", "1"));
    assert_false(where("{\"a\":1} trailing", "a", "1"));
    assert_true(where("{\"s\":\"caf\\u00e9\"}", "s", "caf\xc3\xa9"));
}

static void test_poison_match_envelope_exact_bytes(void **state)
{
    (void)state;
    const char *inner = "{ \"b\" : 19.99,\"a\":123456789012345678901234567890, \"u\":\"\\u00e9\" }";
    char env[512];
    snprintf(env, sizeof(env), "{\"sqlq_poison\":1,\"reason\":\"refused\",\"message\":%s}", inner);
    const char *m;
    size_t n;
    assert_true(sqlq_poison_envelope_read(env, strlen(env), &m, &n));
    assert_int_equal(n, strlen(inner));
    assert_memory_equal(m, inner, n);
    /* --where sees the message's fields and the envelope's reason */
    assert_true(where(env, "b", "19.99"));
    assert_true(where(env, "reason", "refused"));
    assert_false(where(env, "sqlq_poison", "1"));
    /* not sqlq's: no marker, another marker value, an extra member, a member twice */
    snprintf(env, sizeof(env), "{\"reason\":\"x\",\"message\":%s}", inner);
    assert_false(sqlq_poison_envelope_read(env, strlen(env), &m, &n));
    snprintf(env, sizeof(env), "{\"sqlq_poison\":2,\"reason\":\"x\",\"message\":%s}", inner);
    assert_false(sqlq_poison_envelope_read(env, strlen(env), &m, &n));
    snprintf(env, sizeof(env), "{\"sqlq_poison\":1,\"reason\":\"x\",\"message\":%s,\"z\":1}",
             inner);
    assert_false(sqlq_poison_envelope_read(env, strlen(env), &m, &n));
    snprintf(env, sizeof(env), "{\"sqlq_poison\":1,\"reason\":\"x\",\"reason\":\"y\"}");
    assert_false(sqlq_poison_envelope_read(env, strlen(env), &m, &n));
    snprintf(env, sizeof(env), "{\"sqlq_poison\":1,\"reason\":\"x\",\"message\":\"str\"}");
    assert_false(sqlq_poison_envelope_read(env, strlen(env), &m, &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poison_match_numbers_by_value),
        cmocka_unit_test(test_poison_match_where),
        cmocka_unit_test(test_poison_match_envelope_exact_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
