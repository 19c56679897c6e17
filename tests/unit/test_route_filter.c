/* Unit tests of bridge/route_filter: which operations a route publishes and which columns of
 * the row it sends (--ops, --columns, --exclude-columns; the key always). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "route_filter.h"

#include <string.h>

static json_t *row_of(void)
{
    return json_pack("{s:i, s:s, s:s, s:i}", "id", 7, "email", "a@b.c", "status", "paid", "total",
                     12);
}

static char *dump(const json_t *j)
{
    return json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
}

static void test_route_filter_default_publishes_everything(void **state)
{
    (void)state;
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse(NULL, "", NULL, &f, &err), SQLQ_OK);
    for (int op = SQLQ_OP_INSERT; op <= SQLQ_OP_READ; op++)
        assert_true(sqlq_route_filter_publishes(&f, (sqlq_op)op));
    json_t *row = row_of(), *key = json_pack("{s:i}", "id", 7);
    json_t *out = sqlq_route_filter_row(&f, row, key);
    assert_ptr_equal(out, row); /* no copy when nothing is cut */
    json_decref(out);
    assert_null(sqlq_route_filter_row(&f, NULL, key));
    json_decref(row);
    json_decref(key);
    sqlq_route_filter_free(&f);
}

static void test_route_filter_columns_keep_the_key(void **state)
{
    (void)state;
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse(" status ,total", NULL, NULL, &f, &err), SQLQ_OK);
    json_t *row = row_of(), *key = json_pack("{s:i}", "id", 7);
    json_t *out = sqlq_route_filter_row(&f, row, key);
    char *text = dump(out);
    assert_string_equal(text, "{\"id\":7,\"status\":\"paid\",\"total\":12}");
    free(text);
    json_decref(out);
    assert_int_equal(json_object_size(row), 4); /* the captured row is not changed */
    sqlq_route_filter_free(&f);

    assert_int_equal(sqlq_route_filter_parse(NULL, "email,id", NULL, &f, &err), SQLQ_OK);
    out = sqlq_route_filter_row(&f, row, key);
    text = dump(out);
    assert_string_equal(text, "{\"id\":7,\"status\":\"paid\",\"total\":12}"); /* id is the key */
    free(text);
    json_decref(out);
    sqlq_route_filter_free(&f);
    json_decref(row);
    json_decref(key);
}

static void test_route_filter_ops(void **state)
{
    (void)state;
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse(NULL, NULL, "insert, delete", &f, &err), SQLQ_OK);
    assert_true(sqlq_route_filter_publishes(&f, SQLQ_OP_INSERT));
    assert_false(sqlq_route_filter_publishes(&f, SQLQ_OP_UPDATE));
    assert_true(sqlq_route_filter_publishes(&f, SQLQ_OP_DELETE));
    sqlq_route_filter_free(&f);
}

/* --where's rule: an insert out of the filter is dropped, an update out of it becomes a delete,
 * a delete always goes; --ops applies to the result. */
static void test_route_filter_where_rule(void **state)
{
    (void)state;
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse(NULL, NULL, NULL, &f, &err), SQLQ_OK);
    sqlq_op op;
    assert_false(sqlq_route_filter_decide(&f, SQLQ_OP_INSERT, true, &op));
    assert_true(sqlq_route_filter_decide(&f, SQLQ_OP_UPDATE, true, &op));
    assert_int_equal(op, SQLQ_OP_DELETE);
    assert_true(sqlq_route_filter_decide(&f, SQLQ_OP_UPDATE, false, &op));
    assert_int_equal(op, SQLQ_OP_UPDATE);
    assert_true(sqlq_route_filter_decide(&f, SQLQ_OP_DELETE, false, &op));
    assert_int_equal(op, SQLQ_OP_DELETE);
    assert_int_equal(sqlq_route_filter_parse(NULL, NULL, "insert,update", &f, &err), SQLQ_OK);
    assert_false(sqlq_route_filter_decide(&f, SQLQ_OP_UPDATE, true, &op)); /* a delete, not sent */
    assert_true(sqlq_route_filter_decide(&f, SQLQ_OP_UPDATE, false, &op));
}

static void test_route_filter_refusals_name_key_and_value(void **state)
{
    (void)state;
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse(NULL, NULL, "insert,upsert", &f, &err),
                     SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "key ops: 'upsert' is not allowed"));
    assert_non_null(strstr(err.message, "insert,update,delete"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse(NULL, NULL, "read", &f, &err), SQLQ_E_INVALID);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse("a,b", "c", NULL, &f, &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "only one of them"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse("a,,b", NULL, NULL, &f, &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "key columns: 'a,,b'"));
}

/* Changed names and the before image follow the route's column selection. */
static void test_route_filter_changed_and_before_follow_columns(void **state)
{
    (void)state;
    sqlq_route_filter f;
    assert_int_equal(sqlq_route_filter_parse(NULL, "email", NULL, &f, NULL), SQLQ_OK);
    json_t *key = json_pack("{s:i}", "id", 1);
    json_t *names = json_pack("[s,s]", "email", "total");
    json_t *kept = sqlq_route_filter_names(&f, names, key);
    assert_int_equal(json_array_size(kept), 1);
    assert_string_equal(json_string_value(json_array_get(kept, 0)), "total");
    json_t *before = json_pack("{s:i,s:s,s:i}", "id", 1, "email", "a@x", "total", 5);
    json_t *b = sqlq_route_filter_row(&f, before, key);
    assert_int_equal(json_object_size(b), 2);
    assert_null(json_object_get(b, "email"));
    assert_null(sqlq_route_filter_names(&f, NULL, key));
    json_decref(kept);
    json_decref(b);
    json_decref(before);
    json_decref(names);
    json_decref(key);
    sqlq_route_filter_free(&f);
}

static void test_route_filter_unknown_column(void **state)
{
    (void)state;
    sqlq_route_filter f;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_route_filter_parse("status,totl", NULL, NULL, &f, &err), SQLQ_OK);
    const char *const cols[] = {"id", "status", "total"};
    assert_string_equal(sqlq_route_filter_unknown(&f, cols, 3), "totl");
    sqlq_route_filter_free(&f);
    assert_int_equal(sqlq_route_filter_parse(NULL, "total", NULL, &f, &err), SQLQ_OK);
    assert_null(sqlq_route_filter_unknown(&f, cols, 3));
    sqlq_route_filter_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_filter_default_publishes_everything),
        cmocka_unit_test(test_route_filter_columns_keep_the_key),
        cmocka_unit_test(test_route_filter_ops),
        cmocka_unit_test(test_route_filter_where_rule),
        cmocka_unit_test(test_route_filter_refusals_name_key_and_value),
        cmocka_unit_test(test_route_filter_unknown_column),
        cmocka_unit_test(test_route_filter_changed_and_before_follow_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
