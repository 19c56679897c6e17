/* route_state: the transition function of a route: every state's successors, and
 * the rules the delivery semantics rest on (a batch is always settled, a stop passes through
 * STOPPING, which releases what is pending). */
#include "route_state.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static sqlq_route_state after(sqlq_route_state s, sqlq_route_facts f)
{
    return sqlq_route_transition(s, &f);
}

static void test_route_state_start(void **state)
{
    (void)state;
    assert_int_equal(after(SQLQ_ROUTE_START, (sqlq_route_facts){0}), SQLQ_ROUTE_POLL);
    /* a start that failed for good (or a stop while starting): nothing to release */
    assert_int_equal(after(SQLQ_ROUTE_START, (sqlq_route_facts){.end = true}), SQLQ_ROUTE_DONE);
}

static void test_route_state_poll(void **state)
{
    (void)state;
    sqlq_route_facts batch = {.got_batch = true};
    assert_int_equal(after(SQLQ_ROUTE_POLL, batch), SQLQ_ROUTE_PUBLISH);
    assert_int_equal(after(SQLQ_ROUTE_POLL, (sqlq_route_facts){.got_batch = true, .empty = true}),
                     SQLQ_ROUTE_IDLE);
    /* a failed poll (recovered from): poll again */
    assert_int_equal(after(SQLQ_ROUTE_POLL, (sqlq_route_facts){0}), SQLQ_ROUTE_POLL);
    /* a stop: what was polled ahead is given back in STOPPING, never published */
    assert_int_equal(after(SQLQ_ROUTE_POLL, (sqlq_route_facts){.end = true}), SQLQ_ROUTE_STOPPING);
}

static void test_route_state_idle(void **state)
{
    (void)state;
    assert_int_equal(after(SQLQ_ROUTE_IDLE, (sqlq_route_facts){0}), SQLQ_ROUTE_POLL);
    assert_int_equal(after(SQLQ_ROUTE_IDLE, (sqlq_route_facts){.drained = true}),
                     SQLQ_ROUTE_STOPPING);
    assert_int_equal(after(SQLQ_ROUTE_IDLE, (sqlq_route_facts){.end = true}), SQLQ_ROUTE_STOPPING);
}

/* A batch is never left mid-way: a stop during PUBLISH goes through BACKOFF, which gives the
 * rest back (batch_done), then SETTLED; only SETTLED leads to STOPPING. */
static void test_route_state_batch_always_settled(void **state)
{
    (void)state;
    assert_int_equal(after(SQLQ_ROUTE_PUBLISH, (sqlq_route_facts){.batch_done = true}),
                     SQLQ_ROUTE_SETTLED);
    assert_int_equal(after(SQLQ_ROUTE_PUBLISH, (sqlq_route_facts){0}), SQLQ_ROUTE_BACKOFF);
    assert_int_equal(after(SQLQ_ROUTE_PUBLISH, (sqlq_route_facts){.end = true}),
                     SQLQ_ROUTE_BACKOFF);
    assert_int_equal(after(SQLQ_ROUTE_BACKOFF, (sqlq_route_facts){0}), SQLQ_ROUTE_PUBLISH);
    assert_int_equal(after(SQLQ_ROUTE_BACKOFF, (sqlq_route_facts){.batch_done = true}),
                     SQLQ_ROUTE_SETTLED);
    assert_int_equal(after(SQLQ_ROUTE_SETTLED, (sqlq_route_facts){0}), SQLQ_ROUTE_POLL);
    assert_int_equal(after(SQLQ_ROUTE_SETTLED, (sqlq_route_facts){.end = true}),
                     SQLQ_ROUTE_STOPPING);
    assert_int_equal(after(SQLQ_ROUTE_STOPPING, (sqlq_route_facts){0}), SQLQ_ROUTE_DONE);
}

/* From every state, whatever the facts, the next state is a valid one, and a run that keeps
 * ending reaches DONE within three steps (through STOPPING unless it never started). */
static void test_route_state_every_path_ends(void **state)
{
    (void)state;
    for (int s = 0; s < SQLQ_ROUTE_NSTATES; s++) {
        for (unsigned bits = 0; bits < 32; bits++) {
            sqlq_route_facts f = {bits & 1, (bits >> 1) & 1, (bits >> 2) & 1, (bits >> 3) & 1,
                                  (bits >> 4) & 1};
            sqlq_route_state n = sqlq_route_transition((sqlq_route_state)s, &f);
            assert_true(n >= SQLQ_ROUTE_POLL && n < SQLQ_ROUTE_NSTATES);
            assert_string_not_equal(sqlq_route_state_name(n), "?");
        }
        sqlq_route_facts end = {.end = true, .batch_done = true};
        sqlq_route_state n = (sqlq_route_state)s;
        bool stopped = false;
        for (int i = 0; i < 3 && n != SQLQ_ROUTE_DONE; i++) {
            n = sqlq_route_transition(n, &end);
            stopped = stopped || n == SQLQ_ROUTE_STOPPING;
        }
        assert_int_equal(n, SQLQ_ROUTE_DONE);
        assert_true(stopped || s == SQLQ_ROUTE_START || s >= SQLQ_ROUTE_STOPPING);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_state_start),
        cmocka_unit_test(test_route_state_poll),
        cmocka_unit_test(test_route_state_idle),
        cmocka_unit_test(test_route_state_batch_always_settled),
        cmocka_unit_test(test_route_state_every_path_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
