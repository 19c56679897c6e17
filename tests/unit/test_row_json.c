/* sql/row_json: the JSON value of one column, given the driver's text and the column type. */
#include "row_json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlext.h>

#include <cmocka.h>

/* The value as compact JSON text (malloc'd by jansson; freed here via a static slot). */
static const char *as_json(short sql_type, const char *type_name, const sqlq_dialect *d,
                           const char *text, size_t len)
{
    static char *last;
    free(last);
    json_t *v = sqlq_row_json_value(sql_type, type_name, d, text, len);
    assert_non_null(v);
    last = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    return last;
}

#define PG &sqlq_dialect_postgres
#define LITE &sqlq_dialect_sqlite
#define J(type, name, d, s) as_json(type, name, d, s, (s) ? strlen(s) : 0)

static void test_row_json_null_and_bool(void **state)
{
    (void)state;
    assert_string_equal(as_json(SQL_INTEGER, "int4", PG, NULL, 0), "null");
    assert_string_equal(J(SQL_BIT, "bool", PG, "1"), "true");
    assert_string_equal(J(SQL_BIT, "bool", PG, "0"), "false");
    assert_string_equal(J(SQL_VARCHAR, "bool", PG, "t"), "true"); /* BoolsAsChar=1 */
    assert_string_equal(J(SQL_BIT, "boolean", LITE, "1"), "true");
    assert_string_equal(J(SQL_BIT, "bit", &sqlq_dialect_mssql, "0"), "false");
    assert_string_equal(J(SQL_BIT, "boolean", LITE, "maybe"), "\"maybe\"");
}

static void test_row_json_integers(void **state)
{
    (void)state;
    assert_string_equal(J(SQL_INTEGER, "int4", PG, "42"), "42");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "-7"), "-7");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "9007199254740992"), "9007199254740992");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "9007199254740993"), "\"9007199254740993\"");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "-9007199254740992"), "-9007199254740992");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "-9007199254740993"), "\"-9007199254740993\"");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "4611686018427387904"),
                        "\"4611686018427387904\"");
    assert_string_equal(J(SQL_BIGINT, "int8", PG, "-9223372036854775808"),
                        "\"-9223372036854775808\"");
    assert_string_equal(J(SQL_BIGINT, "", &sqlq_dialect_mssql, "18446744073709551615"),
                        "\"18446744073709551615\"");
    /* SQLite stores anything anywhere: a REAL or text in an INTEGER column. */
    assert_string_equal(J(SQL_INTEGER, "integer", LITE, "2.5"), "2.5");
    assert_string_equal(J(SQL_INTEGER, "integer", LITE, "abc"), "\"abc\"");
}

static void test_row_json_decimal_and_float(void **state)
{
    (void)state;
    assert_string_equal(J(SQL_NUMERIC, "numeric", PG, "12345678901234567890.1234567890"),
                        "\"12345678901234567890.1234567890\"");
    assert_string_equal(J(SQL_DOUBLE, "numeric(38,10)", LITE, "1.5"), "\"1.5\"");
    assert_string_equal(J(SQL_VARCHAR, "decimal(10,2)", LITE, "3.10"), "\"3.10\"");
    assert_string_equal(J(SQL_DOUBLE, "float8", PG, "0.1"), "0.10000000000000001");
    assert_string_equal(J(SQL_REAL, "float4", PG, "2.5"), "2.5");
    assert_string_equal(J(SQL_DOUBLE, "float8", PG, "NaN"), "\"NaN\"");
    assert_string_equal(J(SQL_DOUBLE, "float8", PG, "-Infinity"), "\"-Infinity\"");
    assert_string_equal(J(SQL_DOUBLE, "double", LITE, "1e300"), "1.0000000000000001e300");
}

static void test_row_json_text_and_binary(void **state)
{
    (void)state;
    assert_string_equal(J(SQL_VARCHAR, "text", PG, "žluťoučký"), "\"žluťoučký\"");
    assert_string_equal(J(SQL_LONGVARCHAR, "jsonb", PG, "{\"a\": 1}"), "\"{\\\"a\\\": 1}\"");
    assert_string_equal(J(SQL_GUID, "uuid", PG, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
                        "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"");
    assert_string_equal(as_json(SQL_VARCHAR, "text", LITE, "a\xff\xfe", 3),
                        "{\"$base64\":\"Yf/+\"}");
    assert_string_equal(as_json(SQL_VARBINARY, "bytea", PG, "\x00\x01\xff", 3),
                        "{\"$base64\":\"AAH/\"}");
    assert_string_equal(as_json(SQL_BINARY, "blob", LITE, "", 0), "{\"$base64\":\"\"}");
}

static void test_row_json_temporal(void **state)
{
    (void)state;
    assert_string_equal(J(SQL_TYPE_DATE, "date", PG, "2024-02-29"), "\"2024-02-29\"");
    assert_string_equal(J(SQL_TYPE_TIME, "time", PG, "13:14:15"), "\"13:14:15\"");
    assert_string_equal(J(SQL_TYPE_TIME, "time", PG, "13:14:15.25"), "\"13:14:15.25\"");
    assert_string_equal(J(SQL_TYPE_TIME, "timetz", PG, "13:14:15+02"), "\"13:14:15+02:00\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "timestamp", PG, "2024-02-29 13:14:15.123456"),
                        "\"2024-02-29T13:14:15.123456\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "timestamptz", PG, "2024-02-29 13:14:15+00"),
                        "\"2024-02-29T13:14:15+00:00\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "timestamptz", PG, "2024-02-29 13:14:15.5-09:30"),
                        "\"2024-02-29T13:14:15.5-09:30\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "datetime", LITE, "2024-02-29T13:14:15Z"),
                        "\"2024-02-29T13:14:15Z\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "timestamp", PG, "infinity"), "\"infinity\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "datetime", LITE, "yesterday"), "\"yesterday\"");
    assert_string_equal(J(SQL_TYPE_TIMESTAMP, "datetime", LITE, "2024-02-29 13:14:15 junk"),
                        "\"2024-02-29 13:14:15 junk\"");
}

/* The server's ISO text of a PostgreSQL date/time (CAST(col AS text), DateStyle ISO, UTC) as
 * the exact value: the form to_json(col) writes, byte for byte (the expected values are what
 * PostgreSQL 15's to_json(col) #>> '{}' gives for the same values). */
static const char *pg_exact(const char *type, short sql_type, const char *server_text)
{
    static char *last;
    free(last);
    char name[] = "at", type_name[64];
    snprintf(type_name, sizeof(type_name), "%s", type);
    sqlq_column c = {.name = name, .type = type_name, .sql_type = sql_type};
    json_t *fix = json_string(server_text);
    json_t *v = sqlq_row_json_fixup(PG, &c, json_string("driver's value"), fix);
    json_decref(fix);
    assert_non_null(v);
    last = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    return last;
}

static void test_row_json_pg_exact_temporal(void **state)
{
    (void)state;
    const short TS = SQL_TYPE_TIMESTAMP, D = SQL_TYPE_DATE, T = SQL_TYPE_TIME;
    const char *tz = "timestamp with time zone", *ts = "timestamp without time zone";
    assert_string_equal(pg_exact(tz, TS, "2024-05-01 10:00:00.5+00"),
                        "\"2024-05-01T10:00:00.5+00:00\"");
    assert_string_equal(pg_exact(tz, TS, "2024-05-01 10:00:00+05:30"),
                        "\"2024-05-01T10:00:00+05:30\"");
    assert_string_equal(pg_exact(tz, TS, "1900-01-01 00:00:00+00:19:32"),
                        "\"1900-01-01T00:00:00+00:19:32\"");
    assert_string_equal(pg_exact(tz, TS, "4713-01-01 00:00:00+00 BC"),
                        "\"4713-01-01T00:00:00+00:00 BC\"");
    assert_string_equal(pg_exact(tz, TS, "294276-12-31 23:59:59.999999+00"),
                        "\"294276-12-31T23:59:59.999999+00:00\"");
    assert_string_equal(pg_exact(tz, TS, "infinity"), "\"infinity\"");
    assert_string_equal(pg_exact(tz, TS, "-infinity"), "\"-infinity\"");
    assert_string_equal(pg_exact(ts, TS, "2024-02-29 12:00:00.5"), "\"2024-02-29T12:00:00.5\"");
    assert_string_equal(pg_exact(ts, TS, "4713-01-01 00:00:00 BC"), "\"4713-01-01T00:00:00 BC\"");
    assert_string_equal(pg_exact(ts, TS, "294276-12-31 23:59:59.999999"),
                        "\"294276-12-31T23:59:59.999999\"");
    assert_string_equal(pg_exact("date", D, "0044-03-15 BC"), "\"0044-03-15 BC\"");
    assert_string_equal(pg_exact("date", D, "5874897-12-31"), "\"5874897-12-31\"");
    assert_string_equal(pg_exact("date", D, "infinity"), "\"infinity\"");
    assert_string_equal(pg_exact("time without time zone", T, "24:00:00"), "\"24:00:00\"");
    assert_string_equal(pg_exact("time with time zone", T, "13:14:15+02"), "\"13:14:15+02\"");
    assert_string_equal(pg_exact("time with time zone", T, "24:00:00-15:59"), "\"24:00:00-15:59\"");
    /* Not the ISO form (a DateStyle sqlq does not set): kept as the server wrote it. */
    assert_string_equal(pg_exact(tz, TS, "Wed May 01 10:00:00 2024 UTC"),
                        "\"Wed May 01 10:00:00 2024 UTC\"");
}

/* The select of an exact PostgreSQL date/time: the marker, then the server's text. */
static void test_row_json_pg_select(void **state)
{
    (void)state;
    char name[] = "at", type[] = "timestamp with time zone";
    sqlq_column c = {.name = name, .type = type, .sql_type = SQL_TYPE_TIMESTAMP};
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_int_equal(sqlq_row_json_select_sql(PG, "r.", &c, &b), SQLQ_OK);
    assert_int_equal(sqlq_buf_addc(&b, '\0'), SQLQ_OK);
    assert_string_equal(b.data, "NULL AS \"__sqlq_pgtime\", CAST(r.\"at\" AS text)");
    sqlq_buf_reset(&b);
    assert_int_equal(sqlq_row_json_fixup_sql(PG, "r.", &c, &b), SQLQ_OK);
    assert_int_equal(sqlq_buf_addc(&b, '\0'), SQLQ_OK);
    assert_string_equal(b.data, "CAST(r.\"at\" AS text)");
    sqlq_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_json_null_and_bool),
        cmocka_unit_test(test_row_json_integers),
        cmocka_unit_test(test_row_json_decimal_and_float),
        cmocka_unit_test(test_row_json_text_and_binary),
        cmocka_unit_test(test_row_json_temporal),
        cmocka_unit_test(test_row_json_pg_exact_temporal),
        cmocka_unit_test(test_row_json_pg_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
