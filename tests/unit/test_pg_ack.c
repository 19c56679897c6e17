/* sql/postgres/pg_ack: a commit's end_lsn is confirmed only when it and every transaction
 * before it were released, never on receipt, never out of order, never backwards. */
#include "pg_ack.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

static uint64_t txn(sqlq_pg_ack *a, uint64_t end, size_t n) {
    uint64_t seq = 0;
    assert_int_equal(sqlq_pg_ack_txn(a, end, n, &seq), SQLQ_OK);
    return seq;
}

static void test_pg_ack_never_on_receipt(void **state) {
    (void)state;
    sqlq_pg_ack *a = sqlq_pg_ack_create(100);
    uint64_t t1 = txn(a, 200, 2);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 100);
    assert_int_equal(sqlq_pg_ack_done(a, t1, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 100); /* one of two still on the wire */
    assert_int_equal(sqlq_pg_ack_done(a, t1, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 200);
    assert_int_equal(sqlq_pg_ack_outstanding(a), 0);
    sqlq_pg_ack_destroy(a);
}

static void test_pg_ack_in_order_only(void **state) {
    (void)state;
    sqlq_pg_ack *a = sqlq_pg_ack_create(0);
    uint64_t t1 = txn(a, 10, 1), t2 = txn(a, 20, 1), t3 = txn(a, 30, 1);
    assert_int_equal(sqlq_pg_ack_done(a, t3, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_done(a, t2, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 0); /* t1 still out: nothing after it */
    assert_int_equal(sqlq_pg_ack_pending_txns(a), 3);
    assert_int_equal(sqlq_pg_ack_done(a, t1, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 30);
    assert_int_equal(sqlq_pg_ack_pending_txns(a), 0);
    sqlq_pg_ack_destroy(a);
}

static void test_pg_ack_empty_transaction_passes(void **state) {
    (void)state;
    sqlq_pg_ack *a = sqlq_pg_ack_create(0);
    uint64_t t1 = txn(a, 10, 1);
    txn(a, 20, 0); /* nothing of it published (another table, --ops) */
    assert_int_equal(sqlq_pg_ack_confirmable(a), 0);
    assert_int_equal(sqlq_pg_ack_done(a, t1, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 20);
    sqlq_pg_ack_destroy(a);
}

static void test_pg_ack_never_backwards(void **state) {
    (void)state;
    sqlq_pg_ack *a = sqlq_pg_ack_create(500); /* the slot's confirmed_flush_lsn at start */
    uint64_t t1 = txn(a, 400, 1); /* sent again after a reconnect: below what is confirmed */
    assert_int_equal(sqlq_pg_ack_done(a, t1, 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 500);
    txn(a, 600, 0);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 600);
    sqlq_pg_ack_destroy(a);
}

static void test_pg_ack_bookkeeping_errors(void **state) {
    (void)state;
    sqlq_pg_ack *a = sqlq_pg_ack_create(0);
    uint64_t t1 = txn(a, 10, 2);
    assert_int_equal(sqlq_pg_ack_done(a, t1, 3), SQLQ_E_INVALID);
    assert_int_equal(sqlq_pg_ack_done(a, t1 + 1, 1), SQLQ_E_INVALID);
    assert_int_equal(sqlq_pg_ack_outstanding(a), 2);
    assert_int_equal(sqlq_pg_ack_done(a, t1, 2), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 10);
    assert_int_equal(sqlq_pg_ack_done(a, t1, 1), SQLQ_E_INVALID); /* gone once confirmed */
    sqlq_pg_ack_destroy(a);
    sqlq_pg_ack_destroy(NULL);
}

static void test_pg_ack_many_transactions_grow(void **state) {
    (void)state;
    sqlq_pg_ack *a = sqlq_pg_ack_create(0);
    uint64_t seqs[1000];
    for (int i = 0; i < 1000; i++)
        seqs[i] = txn(a, (uint64_t)(i + 1) * 8, 1);
    for (int i = 0; i < 500; i++)
        assert_int_equal(sqlq_pg_ack_done(a, seqs[i], 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 500 * 8);
    for (int i = 0; i < 300; i++)
        txn(a, (uint64_t)(1001 + i) * 8, 0);
    for (int i = 500; i < 1000; i++)
        assert_int_equal(sqlq_pg_ack_done(a, seqs[i], 1), SQLQ_OK);
    assert_int_equal(sqlq_pg_ack_confirmable(a), 1300 * 8);
    sqlq_pg_ack_destroy(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_ack_never_on_receipt),
        cmocka_unit_test(test_pg_ack_in_order_only),
        cmocka_unit_test(test_pg_ack_empty_transaction_passes),
        cmocka_unit_test(test_pg_ack_never_backwards),
        cmocka_unit_test(test_pg_ack_bookkeeping_errors),
        cmocka_unit_test(test_pg_ack_many_transactions_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
