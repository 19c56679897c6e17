/* Unit tests of message/shard: the documented hash (docs/scaling.md), checked against values
 * computed independently (Python: hashlib.sha256 over json.dumps(key, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False), first 8 bytes big-endian). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "shard.h"

#include <string.h>

static size_t shard(const char *key_json, size_t n)
{
    json_t *k = json_loads(key_json, 0, NULL);
    assert_non_null(k);
    size_t s = 99;
    assert_true(sqlq_shard_of(k, n, &s));
    json_decref(k);
    return s;
}

static void test_shard_hash_matches_the_documented_function(void **state)
{
    (void)state;
    assert_true(sqlq_shard_hash("{\"id\":1}", 8) == 251236297832090819ULL);
    assert_true(sqlq_shard_hash("{\"id\":2}", 8) == 11420677053011835846ULL);
    const char *e = "{\"id\":\"\xc3\xa9\"}";
    assert_true(sqlq_shard_hash(e, strlen(e)) == 8556408867821758095ULL);
}

static void test_shard_of_uses_the_canonical_key(void **state)
{
    (void)state;
    assert_int_equal(shard("{\"id\":1}", 4), 3);
    assert_int_equal(shard("{\"id\":2}", 4), 2);
    assert_int_equal(shard("{\"id\":1}", 3), 2);
    /* member order and whitespace do not matter: the canonical form sorts and compacts */
    assert_int_equal(shard("{ \"b\": \"x\", \"a\": 2 }", 4), 1);
    assert_int_equal(shard("{\"a\":2,\"b\":\"x\"}", 3), 2);
    assert_int_equal(shard("{\"id\":\"\\u00e9\"}", 4), 3); /* UTF-8 as is, not escaped */
}

static void test_shard_of_one_queue_is_always_zero(void **state)
{
    (void)state;
    assert_int_equal(shard("{\"id\":1}", 1), 0);
    assert_int_equal(shard("{\"id\":2}", 0), 0);
}

static void test_shard_spreads_keys(void **state)
{
    (void)state;
    size_t counts[4] = {0};
    for (int i = 0; i < 4000; i++) {
        json_t *k = json_pack("{s:i}", "id", i);
        size_t s = 0;
        assert_true(sqlq_shard_of(k, 4, &s));
        counts[s]++;
        json_decref(k);
    }
    for (int i = 0; i < 4; i++)
        assert_true(counts[i] > 850 && counts[i] < 1150);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_hash_matches_the_documented_function),
        cmocka_unit_test(test_shard_of_uses_the_canonical_key),
        cmocka_unit_test(test_shard_of_one_queue_is_always_zero),
        cmocka_unit_test(test_shard_spreads_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
