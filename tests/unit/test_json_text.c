/* json_text: the same bytes as json_dumps(JSON_COMPACT | JSON_ENCODE_ANY [| JSON_SORT_KEYS])
 * for every kind of value, and the same refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>

#include "json_text.h"

#include <stdlib.h>
#include <string.h>

static void same_as_jansson(const json_t *v)
{
    for (int sort = 0; sort < 2; sort++) {
        size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | (sort ? JSON_SORT_KEYS : 0);
        char *want = json_dumps(v, flags);
        size_t len = 0;
        char *got = sqlq_json_text(v, sort, &len);
        assert_non_null(want);
        assert_non_null(got);
        assert_string_equal(got, want);
        assert_int_equal(len, strlen(want));
        free(want);
        free(got);
    }
}

static void test_json_text_scalars(void **state)
{
    (void)state;
    json_t *v[] = {json_null(), json_true(), json_false(), json_integer(0), json_integer(-1),
                   json_integer(INT64_MAX), json_integer(INT64_MIN), json_real(0.1),
                   json_real(-1e300), json_real(3.0), json_real(123456789.25), json_string(""),
                   json_string("plain"), json_string("quote \" back \\ slash / tab \t nl \n"),
                   json_string("\b\f\r\x01\x1f\x7f"), json_stringn("nul\0inside", 10),
                   json_string("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf")};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_non_null(v[i]);
        same_as_jansson(v[i]);
        json_decref(v[i]);
    }
}

static void test_json_text_containers(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:i, s:s, s:n, s:[i, s, {}, []], s:{s:b, s:f}}", "zeta", 1, "alpha",
                          "x", "mid", "list", 2, "y", "nested", "b", 1, "a", 2.5);
    assert_non_null(o);
    assert_int_equal(json_object_set_new(o, "ab", json_integer(3)), 0);
    assert_int_equal(json_object_set_new(o, "a", json_integer(4)), 0);
    assert_int_equal(json_object_setn_new(o, "a\0b", 3, json_integer(5)), 0);
    assert_int_equal(json_object_set_new(o, "k\xc3\xa9y\"", json_string("v")), 0);
    same_as_jansson(o); /* both orders: as inserted, and sorted (shorter key first) */
    json_t *empty[] = {json_object(), json_array()};
    same_as_jansson(empty[0]);
    same_as_jansson(empty[1]);
    json_decref(empty[0]);
    json_decref(empty[1]);
    json_decref(o);
}

/* A random value of every kind, nested, with strings of random bytes made valid UTF-8. */
static json_t *random_value(unsigned *seed, int depth)
{
    int kind = rand_r(seed) % (depth > 3 ? 6 : 8);
    switch (kind) {
    case 0: return json_null();
    case 1: return json_boolean(rand_r(seed) & 1);
    case 2: return json_integer((json_int_t)rand_r(seed) * (rand_r(seed) & 1 ? -7919 : 104729));
    case 3: return json_real((double)rand_r(seed) / ((double)rand_r(seed) + 1.0) * 1e-3);
    case 4:
    case 5: {
        char s[24];
        size_t n = (size_t)rand_r(seed) % sizeof s;
        for (size_t i = 0; i < n; i++)
            s[i] = (char)(rand_r(seed) % 128); /* ASCII and every control character */
        return json_stringn(s, n);
    }
    case 6: {
        json_t *a = json_array();
        for (int i = rand_r(seed) % 5; i > 0; i--)
            json_array_append_new(a, random_value(seed, depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (int i = rand_r(seed) % 6; i > 0; i--) {
            char k[4] = {(char)('a' + rand_r(seed) % 4), (char)('a' + rand_r(seed) % 3), 0, 0};
            k[rand_r(seed) % 2 + 1] = 0; /* keys that prefix each other */
            json_object_set_new(o, k, random_value(seed, depth + 1));
        }
        return o;
    }
    }
}

static void test_json_text_random_values(void **state)
{
    (void)state;
    unsigned seed = 20261128;
    for (int i = 0; i < 3000; i++) {
        json_t *v = random_value(&seed, 0);
        assert_non_null(v);
        same_as_jansson(v);
        json_decref(v);
    }
}

static void test_json_text_refuses_what_jansson_refuses(void **state)
{
    (void)state;
    const char *bad[] = {"\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "a\xffz"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = json_stringn_nocheck(bad[i], strlen(bad[i]));
        assert_null(json_dumps(v, JSON_ENCODE_ANY));
        assert_null(sqlq_json_text(v, false, NULL));
        json_t *o = json_pack("{s:O}", "k", v);
        sqlq_buf b;
        sqlq_buf_init(&b, 0);
        assert_int_equal(sqlq_buf_adds(&b, "prefix"), SQLQ_OK);
        assert_int_equal(sqlq_json_text_add(&b, o, true), SQLQ_E_INVALID);
        assert_null(b.data); /* freed, as buf.h says of every failure */
        json_decref(o);
        json_decref(v);
    }
    assert_null(sqlq_json_text(NULL, false, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_text_scalars),
        cmocka_unit_test(test_json_text_containers),
        cmocka_unit_test(test_json_text_random_values),
        cmocka_unit_test(test_json_text_refuses_what_jansson_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
