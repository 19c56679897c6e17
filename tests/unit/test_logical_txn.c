/* sql/postgres/logical_txn: one transaction's changes collapsed per key (the operation rule of
 * docs/messages.md, changed columns united), and messages kept past the memory bound in a
 * temporary file read back byte for byte. */
#include "logical_txn.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void add(sqlq_logical_txn *t, const char *msg, const char *key, sqlq_op op,
                json_t *changed)
{
    assert_int_equal(sqlq_logical_txn_add(t, msg, strlen(msg), key, op, SQLQ_LOGICAL_WHOLE, NULL,
                                          changed),
                     SQLQ_OK);
}

static void read_is(const sqlq_logical_txn *t, size_t i, const char *want)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_logical_txn_read(t, i, &b), SQLQ_OK);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    sqlq_buf_free(&b);
}

static void test_logical_txn_collapse_ops(void **state)
{
    (void)state;
    sqlq_logical_txn t;
    sqlq_logical_txn_init(&t, 100, 0);
    add(&t, "i1", "{\"id\":1}", SQLQ_OP_INSERT, NULL);
    add(&t, "u1", "{\"id\":1}", SQLQ_OP_UPDATE, NULL);      /* insert + update: insert */
    add(&t, "u2", "{\"id\":2}", SQLQ_OP_UPDATE, NULL);
    add(&t, "d2", "{\"id\":2}", SQLQ_OP_DELETE, NULL);      /* update + delete: delete */
    add(&t, "d3", "{\"id\":3}", SQLQ_OP_DELETE, NULL);
    add(&t, "i3", "{\"id\":3}", SQLQ_OP_INSERT, NULL);      /* delete + insert: insert */
    add(&t, "i4", "{\"id\":4}", SQLQ_OP_INSERT, NULL);
    add(&t, "d4", "{\"id\":4}", SQLQ_OP_DELETE, NULL);      /* insert + delete: delete */
    add(&t, "u5", "{\"id\":5}", SQLQ_OP_UPDATE, NULL);
    add(&t, "v5", "{\"id\":5}", SQLQ_OP_UPDATE, NULL);      /* update + update: update */
    assert_int_equal(t.count, 5);
    sqlq_op want[] = {SQLQ_OP_INSERT, SQLQ_OP_DELETE, SQLQ_OP_INSERT, SQLQ_OP_DELETE,
                      SQLQ_OP_UPDATE};
    const char *last[] = {"u1", "d2", "i3", "d4", "v5"};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(t.items[i].op, want[i]);
        read_is(&t, i, last[i]); /* the latest message of the key */
    }
    sqlq_logical_txn_clear(&t);
}

static void test_logical_txn_changed_union(void **state)
{
    (void)state;
    sqlq_logical_txn t;
    sqlq_logical_txn_init(&t, 100, 0);
    add(&t, "a", "{\"id\":1}", SQLQ_OP_UPDATE, json_pack("[s]", "x"));
    add(&t, "b", "{\"id\":1}", SQLQ_OP_UPDATE, json_pack("[s,s]", "y", "x"));
    json_t *want = json_pack("[s,s]", "x", "y");
    assert_true(json_equal(t.items[0].changed, want));
    json_decref(want);
    add(&t, "c", "{\"id\":1}", SQLQ_OP_UPDATE, NULL); /* unknown for one: unknown */
    assert_null(t.items[0].changed);
    add(&t, "d", "{\"id\":2}", SQLQ_OP_INSERT, NULL);
    add(&t, "e", "{\"id\":2}", SQLQ_OP_UPDATE, json_pack("[s]", "x"));
    assert_null(t.items[1].changed); /* an insert has no changed */
    sqlq_logical_txn_clear(&t);
}

static void test_logical_txn_spills_past_memory(void **state)
{
    (void)state;
    sqlq_logical_txn t;
    sqlq_logical_txn_init(&t, 100, 0);
    size_t n = SQLQ_LOGICAL_TXN_MEM_MAX / 100000 + 10; /* past the bound */
    char *big = malloc(100000 + 1);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++) {
        memset(big, (int)('a' + i % 26), 100000);
        big[100000] = '\0';
        char key[32];
        snprintf(key, sizeof key, "{\"id\":%zu}", i);
        add(&t, big, key, SQLQ_OP_INSERT, NULL);
    }
    assert_non_null(t.spill);
    assert_true(t.mem_len <= SQLQ_LOGICAL_TXN_MEM_MAX);
    for (size_t i = 0; i < n; i++) {
        memset(big, (int)('a' + i % 26), 100000);
        read_is(&t, i, big);
    }
    free(big);
    sqlq_logical_txn_clear(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logical_txn_collapse_ops),
        cmocka_unit_test(test_logical_txn_changed_union),
        cmocka_unit_test(test_logical_txn_spills_past_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
