/* cursor_pending: a batch commits only when every change of it was delivered, in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cursor_pending.h"

#include <stdlib.h>
#include <string.h>

static sqlq_change change(int64_t id, int64_t version)
{
    sqlq_change c;
    memset(&c, 0, sizeof(c));
    c.key = json_pack("{sI}", "id", (json_int_t)id);
    c.version = version;
    return c;
}

static sqlq_checkpoint end_at(const char *cursor, int64_t id)
{
    sqlq_checkpoint cp;
    memset(&cp, 0, sizeof(cp));
    cp.cursor_value = strdup(cursor);
    cp.key = json_pack("[I]", (json_int_t)id);
    return cp;
}

static void test_cursor_pending_commits_whole_batches_in_order(void **state)
{
    (void)state;
    sqlq_cursor_pending p = {0};
    sqlq_change a[2] = {change(1, 100), change(2, 100)};
    sqlq_change b[1] = {change(1, 200)}; /* the same row again, updated: another version */
    sqlq_checkpoint ea = end_at("100", 2), eb = end_at("200", 1);
    assert_int_equal(sqlq_cursor_pending_next_id(&p, 7), 8);
    assert_int_equal(sqlq_cursor_pending_add(&p, 8, &ea, a, 2), SQLQ_OK);
    assert_null(ea.cursor_value); /* taken over */
    assert_int_equal(sqlq_cursor_pending_add(&p, 9, &eb, b, 1), SQLQ_OK);
    assert_int_equal(sqlq_cursor_pending_outstanding(&p), 3);

    /* The later batch delivered first: nothing may commit yet. */
    assert_true(sqlq_cursor_pending_mark(&p, &b[0]));
    assert_int_equal(sqlq_cursor_pending_ready(&p, NULL), 0);
    assert_true(sqlq_cursor_pending_mark(&p, &a[1]));
    assert_int_equal(sqlq_cursor_pending_ready(&p, NULL), 0);
    /* Marking the same change twice does not count twice. */
    assert_false(sqlq_cursor_pending_mark(&p, &a[1]));
    assert_true(sqlq_cursor_pending_mark(&p, &a[0]));
    int64_t rows = 0;
    assert_int_equal(sqlq_cursor_pending_ready(&p, &rows), 2);
    assert_int_equal(rows, 3);
    assert_string_equal(p.batches[1].end.cursor_value, "200");
    sqlq_cursor_pending_drop(&p, 2);
    assert_int_equal(p.count, 0);
    assert_int_equal(sqlq_cursor_pending_next_id(&p, 9), 10);

    sqlq_cursor_pending_clear(&p);
    json_decref(a[0].key);
    json_decref(a[1].key);
    json_decref(b[0].key);
}

static void test_cursor_pending_unknown_change_is_not_marked(void **state)
{
    (void)state;
    sqlq_cursor_pending p = {0};
    sqlq_change a[1] = {change(1, 100)};
    sqlq_change other = change(1, 101);
    sqlq_checkpoint ea = end_at("100", 1);
    assert_int_equal(sqlq_cursor_pending_add(&p, 1, &ea, a, 1), SQLQ_OK);
    assert_false(sqlq_cursor_pending_mark(&p, &other));
    assert_int_equal(sqlq_cursor_pending_ready(&p, NULL), 0);
    sqlq_cursor_pending_clear(&p);
    assert_false(sqlq_cursor_pending_mark(&p, &a[0]));
    json_decref(a[0].key);
    json_decref(other.key);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_pending_commits_whole_batches_in_order),
        cmocka_unit_test(test_cursor_pending_unknown_change_is_not_marked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
