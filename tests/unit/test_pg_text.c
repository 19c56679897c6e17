/* pg_text without a server: the shape each type OID leads to, the values of the server's text,
 * and the replication connection's options. tests/integration/test_pg_text.c checks the same
 * against a real server and psqlODBC. */
#include "pg_text.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlq_pg_text_column column(uint32_t oid, uint32_t base, const char *name,
                                  const char *declared)
{
    sqlq_pg_text_type t;
    memset(&t, 0, sizeof(t));
    t.oid = oid;
    t.typmod = -1;
    t.base_oid = base;
    snprintf(t.name, sizeof(t.name), "%s", name ? name : "");
    sqlq_pg_text_column c;
    sqlq_pg_text_column_init(&c, &t, declared);
    return c;
}

static sqlq_value_kind kind_of(uint32_t oid)
{
    return column(oid, 0, NULL, NULL).kind;
}

/* The value of text in a column of type oid, as compact JSON (caller frees). */
static char *value_of(uint32_t oid, const char *text)
{
    sqlq_pg_text_column c = column(oid, 0, NULL, NULL);
    json_t *v = sqlq_pg_text_value(&c, text, text ? strlen(text) : 0);
    assert_non_null(v);
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    return s;
}

static void expect_json(uint32_t oid, const char *text, const char *want)
{
    char *got = value_of(oid, text);
    if (strcmp(got, want) != 0)
        fail_msg("type %u, text %s: got %s, want %s", oid, text, got, want);
    free(got);
}

static void test_pg_text_builtin_shapes(void **state)
{
    (void)state;
    assert_int_equal(kind_of(16), SQLQ_VALUE_BOOL);
    for (uint32_t oid = 20; oid <= 23; oid += (oid == 21 ? 2 : 1))
        assert_int_equal(kind_of(oid), SQLQ_VALUE_INT); /* int8, int2, int4 */
    assert_int_equal(kind_of(26), SQLQ_VALUE_INT);      /* oid */
    assert_int_equal(kind_of(28), SQLQ_VALUE_INT);      /* xid */
    assert_int_equal(kind_of(5069), SQLQ_VALUE_TEXT);   /* xid8: psqlODBC does not know it */
    assert_int_equal(kind_of(1700), SQLQ_VALUE_DECIMAL);
    assert_int_equal(kind_of(700), SQLQ_VALUE_FLOAT);
    assert_int_equal(kind_of(701), SQLQ_VALUE_FLOAT);
    assert_int_equal(kind_of(790), SQLQ_VALUE_FLOAT); /* money: psqlODBC says SQL_FLOAT */
    assert_int_equal(kind_of(2950), SQLQ_VALUE_GUID);
    assert_int_equal(kind_of(17), SQLQ_VALUE_BINARY);
    assert_true(column(17, 0, NULL, NULL).bytea);
    static const uint32_t text_types[] = {25,  1043, 1042, 18,   19,   114,  3802, 142,  1186, 869,
                                          650, 829,  1560, 1562, 3614, 1007, 1009, 3904, 1001};
    for (size_t i = 0; i < sizeof(text_types) / sizeof(text_types[0]); i++)
        assert_int_equal(kind_of(text_types[i]), SQLQ_VALUE_TEXT);
    /* date, time, timestamp, timestamptz, timetz, their arrays, daterange: the server's text */
    static const uint32_t temporal[] = {1082, 1083, 1114, 1184, 1266, 1182, 1185, 3912, 4535};
    for (size_t i = 0; i < sizeof(temporal) / sizeof(temporal[0]); i++)
        assert_int_equal(kind_of(temporal[i]), SQLQ_VALUE_TIME_TEXT);
    assert_int_equal(column(1184, 0, NULL, "timestamp(3) with time zone").kind,
                     SQLQ_VALUE_TIME_TEXT);
    assert_int_equal(kind_of(3910), SQLQ_VALUE_TEXT); /* tstzrange */
}

static void test_pg_text_user_types(void **state)
{
    (void)state;
    /* an enum, a composite, a range: text */
    assert_int_equal(column(16500, 16500, "mood", "mood").kind, SQLQ_VALUE_TEXT);
    /* a domain is read as the type under it */
    assert_int_equal(column(16501, 23, "dint", "dint").kind, SQLQ_VALUE_INT);
    assert_int_equal(column(16502, 16, "dbool", "dbool").kind, SQLQ_VALUE_BOOL);
    sqlq_pg_text_column by = column(16503, 17, "dbytea", "dbytea");
    assert_int_equal(by.kind, SQLQ_VALUE_BINARY);
    assert_true(by.bytea);
    /* a domain over a date/time type: the server's text, as the plain type */
    assert_int_equal(column(16504, 1184, "dtstz", "dtstz").kind, SQLQ_VALUE_TIME_TEXT);
    assert_int_equal(column(13232, 1184, "time_stamp", "information_schema.time_stamp").kind,
                     SQLQ_VALUE_TIME_TEXT);
    /* a type named like a date or a time is selected as text by the trigger source */
    assert_int_equal(column(16505, 23, "timeint", "timeint").kind, SQLQ_VALUE_TIME_TEXT);
    assert_int_equal(column(16506, 16506, "timeline", "timeline").kind, SQLQ_VALUE_TIME_TEXT);
    assert_int_equal(column(16506, 16506, "timeline", NULL).kind, SQLQ_VALUE_TIME_TEXT);
    /* ... but not when schema-qualified (format_type outside the search_path) */
    assert_int_equal(column(16506, 16506, "timeline", "s.timeline").kind, SQLQ_VALUE_TEXT);
    /* lo: psqlODBC reads the large object, pgoutput sends its OID */
    sqlq_pg_text_column lo = column(16507, 26, "lo", "lo");
    assert_true(lo.by_key);
    assert_int_equal(lo.kind, SQLQ_VALUE_BINARY);
    assert_false(column(16501, 23, "dint", "dint").by_key);
}

static void test_pg_text_values(void **state)
{
    (void)state;
    expect_json(16, NULL, "null");
    expect_json(16, "t", "true");
    expect_json(16, "f", "false");
    expect_json(20, "9007199254740992", "9007199254740992");
    expect_json(20, "9007199254740993", "\"9007199254740993\"");
    expect_json(20, "-9223372036854775808", "\"-9223372036854775808\"");
    expect_json(21, "-32768", "-32768");
    expect_json(701, "2.5", "2.5");
    expect_json(701, "-0", "-0.0");
    expect_json(701, "NaN", "\"NaN\"");
    expect_json(701, "-Infinity", "\"-Infinity\"");
    expect_json(700, "0.5", "0.5");
    expect_json(1700, "NaN", "\"NaN\"");
    expect_json(1700, "-0.0000000001", "\"-0.0000000001\"");
    expect_json(790, "-$1,234.50", "\"-$1,234.50\"");
    expect_json(2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"");
    expect_json(17, "\\x00ff10", "{\"$base64\":\"AP8Q\"}");
    expect_json(17, "\\x", "{\"$base64\":\"\"}");
    expect_json(17, "a\\000\\\\\\377", "{\"$base64\":\"YQBc/w==\"}"); /* escape format */
    expect_json(17, "\\xZZ", "\"\\\\xZZ\""); /* not byteaout's: the text itself */
    expect_json(1184, "2024-02-29 13:14:15.5+00", "\"2024-02-29T13:14:15.5+00:00\"");
    expect_json(1184, "infinity", "\"infinity\"");
    expect_json(1184, "4713-01-01 00:00:00+00 BC", "\"4713-01-01T00:00:00+00:00 BC\"");
    expect_json(1114, "294276-12-31 23:59:59.999999", "\"294276-12-31T23:59:59.999999\"");
    expect_json(1082, "5874897-12-31", "\"5874897-12-31\"");
    expect_json(1266, "24:00:00-15:59", "\"24:00:00-15:59\"");
    expect_json(1186, "1 day 02:00:00", "\"1 day 02:00:00\"");
    expect_json(25, "žluť", "\"žluť\"");
    expect_json(1185, "{\"2024-02-29 13:14:15.5+00\",infinity}",
                "\"{\\\"2024-02-29 13:14:15.5+00\\\",infinity}\"");
}

static void expect_options(const char *inherited, const char *want)
{
    json_t *row = inherited ? json_loads(inherited, 0, NULL) : NULL;
    assert_true(!inherited || row);
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_pg_text_options(row, &b), SQLQ_OK);
    assert_string_equal(b.data, want);
    sqlq_buf_free(&b);
    json_decref(row);
}

static void test_pg_text_options(void **state)
{
    (void)state;
#define PINNED "-c DateStyle=ISO -c TimeZone=UTC -c extra_float_digits=2 -c client_encoding=UTF8"
    expect_options(NULL, PINNED);
    expect_options("{\"IntervalStyle\": \"\", \"lc_monetary\": null}", PINNED);
    expect_options("{\"search_path\": \"\\\"$user\\\", public\", \"bytea_output\": \"escape\", "
                   "\"lc_monetary\": \"C\", \"IntervalStyle\": \"iso_8601\", \"TimeZone\": \"X\"}",
                   PINNED " -c IntervalStyle=iso_8601 -c lc_monetary=C -c bytea_output=escape "
                          "-c search_path=\"$user\",\\ public");
    expect_options("{\"lc_monetary\": \"English_United States.1252\"}",
                   PINNED " -c lc_monetary=English_United\\ States.1252");
    expect_options("{\"lc_monetary\": \"a\\\\b\\tc\"}", PINNED " -c lc_monetary=a\\\\b\\\tc");
#undef PINNED
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_text_builtin_shapes),
        cmocka_unit_test(test_pg_text_user_types),
        cmocka_unit_test(test_pg_text_values),
        cmocka_unit_test(test_pg_text_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
