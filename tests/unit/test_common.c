#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>

#include "buf.h"
#include "clock.h"
#include "json_int.h"
#include "log.h"
#include "redact.h"
#include "result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_common_buf_grows_and_takes(void **state)
{
    (void)state;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    assert_string_equal(sqlq_buf_str(&b), "");
    for (int i = 0; i < 1000; i++)
        assert_int_equal(sqlq_buf_printf(&b, "%d,", i), SQLQ_OK);
    assert_true(b.len > 2000);
    assert_memory_equal(b.data, "0,1,2,", 6);
    size_t n;
    char *s = sqlq_buf_take(&b, &n);
    assert_int_equal(strlen(s), n);
    assert_null(b.data);
    free(s);
}

static void test_common_buf_cap_frees(void **state)
{
    (void)state;
    sqlq_buf b;
    sqlq_buf_init(&b, 8);
    assert_int_equal(sqlq_buf_adds(&b, "12345678"), SQLQ_OK);
    assert_int_equal(sqlq_buf_addc(&b, '9'), SQLQ_E_TOO_LARGE);
    assert_null(b.data); /* freed on failure: no cleanup path needed */
    assert_int_equal(b.len, 0);
}

static void test_common_error_first_wins(void **state)
{
    (void)state;
    sqlq_error e;
    sqlq_error_clear(&e);
    assert_int_equal(sqlq_error_set(&e, SQLQ_E_HTTP, true, "first %d", 1), SQLQ_E_HTTP);
    assert_int_equal(sqlq_error_set(&e, SQLQ_E_IO, false, "second"), SQLQ_E_IO);
    assert_string_equal(e.message, "first 1");
    assert_true(e.transient);
    e.http_status = 503;
    snprintf(e.azure_code, sizeof(e.azure_code), "ServerBusy");
    char line[256];
    sqlq_error_format(&e, line, sizeof(line));
    assert_string_equal(line, "first 1 (http=503 code=ServerBusy)");
}

typedef struct captured {
    char last[512];
    int count;
} captured;

static void capture_sink(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)level;
    captured *c = ctx;
    snprintf(c->last, sizeof(c->last), "%s %s", event, fields);
    c->count++;
}

static void test_common_log_redacts_and_filters(void **state)
{
    (void)state;
    captured c = {0};
    sqlq_log_set_sink(capture_sink, &c);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    sqlq_log_add_secret("s3cr3t-key-value");
    SQLQ_INFO("connect", "conn=\"AccountKey=s3cr3t-key-value;x=1\" n=%d", 2);
    assert_string_equal(c.last, "connect conn=\"AccountKey=***;x=1\" n=2");
    SQLQ_DEBUG("hidden", "x=1");
    assert_int_equal(c.count, 1);
    sqlq_log_set_sink(NULL, NULL);
    sqlq_log_clear_secrets();
}

static void test_common_log_json_render(void **state)
{
    (void)state;
    char *line = sqlq_log_render(SQLQ_LOG_JSON, SQLQ_LOG_WARN, "poisoned",
                                 "queue=orders id=abc err=\"bad \\\"x\\\" value\" n=5");
    assert_non_null(line);
    assert_non_null(strstr(line, "\"level\":\"warn\""));
    assert_non_null(strstr(line, "\"event\":\"poisoned\""));
    assert_non_null(strstr(line, "\"queue\":\"orders\""));
    assert_non_null(strstr(line, "\"err\":\"bad \\\"x\\\" value\""));
    assert_non_null(strstr(line, "\"n\":\"5\"}"));
    free(line);
    line = sqlq_log_render(SQLQ_LOG_TEXT, SQLQ_LOG_INFO, "started", "a=1");
    assert_non_null(strstr(line, " level=info event=started a=1"));
    free(line);
}

/* A server's multi-line message (libpq's, with tabs) reads as one line; whatever control
 * characters a value still holds are escaped in a key=value line, quoted or not, never raw. */
static void test_common_log_control_characters(void **state)
{
    (void)state;
    char msg[] = "server closed the connection unexpectedly\n\tThis probably means the server "
                 "terminated abnormally\n\tbefore or while processing the request.\n";
    sqlq_log_one_line(msg);
    assert_string_equal(msg, "server closed the connection unexpectedly This probably means the "
                             "server terminated abnormally before or while processing the request.");
    char edges[] = " \t\r\n a \x01\x7f b\t";
    sqlq_log_one_line(edges);
    assert_string_equal(edges, "a b");
    char blank[] = "\n\t ";
    sqlq_log_one_line(blank);
    assert_string_equal(blank, "");
    sqlq_log_one_line(NULL);

    char *line = sqlq_log_render(SQLQ_LOG_TEXT, SQLQ_LOG_WARN, "listen_lost", "error=\"%s\" bare=%s",
                                 "a\tb\rc\x01" "d\x1b[31m", "x\ty");
    assert_non_null(line);
    for (const char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            fail_msg("raw control byte 0x%02x in %s", (unsigned)*p, line);
    assert_non_null(strstr(line, " error=\"a\\tb\\rc\\x01d\\x1b[31m\" bare=\"x\\ty\""));
    free(line);
}

/* One helper logs an error: the fields, then err="…" as sqlq_error_format writes
 * it, redacted like any value; nothing is formatted below the level. */
static void test_common_log_error_helper(void **state)
{
    (void)state;
    captured c = {0};
    sqlq_log_set_sink(capture_sink, &c);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    sqlq_log_add_secret("s3cr3t-long-enough");
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_error_set(&e, SQLQ_E_HTTP, true, "refused s3cr3t-long-enough");
    e.http_status = 503;
    SQLQ_LOG_ERR(SQLQ_LOG_WARN, "put_failed", &e, "queue=%s n=%d", "orders", 2);
    assert_string_equal(c.last, "put_failed queue=orders n=2 err=\"refused *** (http=503)\"");
    SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "hidden", &e, "n=%d", 1);
    assert_int_equal(c.count, 1);
    sqlq_log_set_sink(NULL, NULL);
    sqlq_log_clear_secrets();
}

/* Values cannot forge fields or lines, in text or JSON. */
static void test_common_log_hostile_values_escaped(void **state)
{
    (void)state;
    captured c = {0};
    sqlq_log_set_sink(capture_sink, &c);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    const char *column = "a\" level=error event=\"forged\"\nts=x\\";
    SQLQ_WARN("column_bad", "column=\"%s\" table=%s n=%d", column, "dbo.x y=1", 3);
    assert_string_equal(c.last, "column_bad column=\"a\\\" level=error event=\\\"forged\\\"\\nts=x\\\\\" "
                                "table=\"dbo.x y=1\" n=3");
    SQLQ_INFO("terminal", "body=%s", "\x1b]0;title\x07\x7f\xc2\x9b" "2J\xff ok \xc3\xa9");
    assert_string_equal(c.last, "terminal body=\"\\x1b]0;title\\x07\\x7f\\u009b2J\\xff ok \xc3\xa9\"");
    SQLQ_INFO("empty", "a=%s b=\"%s\" pct=%d%% w=%5.1f z=%zu", "", "", 7, 2.25, (size_t)9);
    assert_string_equal(c.last, "empty a=\"\" b=\"\" pct=7% w=\"  2.2\" z=9");
    sqlq_log_set_sink(NULL, NULL);

    char *line = sqlq_log_render(SQLQ_LOG_JSON, SQLQ_LOG_WARN, "column_bad", "column=\"%s\" level=%s",
                                 "x\",\"level\":\"error\",\"event\":\"forged", "\xff\n");
    assert_non_null(line);
    assert_null(strchr(line, '\n'));
    json_error_t jerr;
    json_t *o = json_loads(line, 0, &jerr);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "level")), "warn");
    assert_string_equal(json_string_value(json_object_get(o, "event")), "column_bad");
    assert_string_equal(json_string_value(json_object_get(o, "column")),
                        "x\",\"level\":\"error\",\"event\":\"forged");
    assert_string_equal(json_string_value(json_object_get(o, "field_level")), "\xef\xbf\xbd\n");
    json_decref(o);
    free(line);
}

static void expect_redacted(const char *in, char *const *secrets, const char *want)
{
    char text[300];
    snprintf(text, sizeof(text), "%s", in);
    sqlq_redact_into(text, sizeof(text), secrets);
    assert_string_equal(text, want);
}

/* The values of secret keys are redacted, whatever their length; other text only where a
 * registered secret long enough to be no ordinary word appears. */
static void test_common_redact_keys_not_substrings(void **state)
{
    (void)state;
    char *shorts[] = {"x", "orders", NULL};
    expect_redacted("execute: FATAL: table orders", shorts, "execute: FATAL: table orders");
    expect_redacted("connect: Driver=pg;PWD=x;UID=u", shorts, "connect: Driver=pg;PWD=***;UID=u");
    expect_redacted("Password = {a;b}}c};Server=h", NULL, "Password = ***;Server=h");
    expect_redacted("pwd1=abc;pwd2=d", NULL, "pwd1=***;pwd2=***");
    expect_redacted("GET https://a/q?sv=1&sig=abc%2F%3D&se=2 failed", NULL,
                    "GET https://a/q?sv=1&sig=***&se=2 failed");
    expect_redacted("AccountKey=abc==;x=1", NULL, "AccountKey=***;x=1");
    expect_redacted("pqopt={sslmode=require password='p w\\'d' host=x}", NULL,
                    "pqopt={sslmode=require password=*** host=x}");
    expect_redacted("design=1 signature=2 PWD=", NULL, "design=1 signature=2 PWD=");
    char *longs[] = {"0123456789abcdefXYZ", NULL};
    expect_redacted("key 0123456789abcdefXYZ end, again 0123456789abcdefXYZ", longs,
                    "key *** end, again ***");
    char small[12] = "PWD=x;a=bcd";
    sqlq_redact_into(small, sizeof(small), NULL);
    assert_string_equal(small, "PWD=***;a=b"); /* cut to fit, never unredacted */

    captured c = {0};
    sqlq_log_set_sink(capture_sink, &c);
    sqlq_log_set_level(SQLQ_LOG_INFO);
    sqlq_log_add_secret("x");
    SQLQ_INFO("sink", "err=\"execute failed\" conn=\"Server=h;PWD=x\"");
    assert_string_equal(c.last, "sink err=\"execute failed\" conn=\"Server=h;PWD=***\"");
    sqlq_log_set_sink(NULL, NULL);
    sqlq_log_clear_secrets();
}

/* The one rule for a JSON integer: a JSON integer, or a string of an optional sign and
 * decimal digits only, in int64 range; everything else is refused and *out left alone. */
static void test_common_json_int64_accepts(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t want;
    } ok[] = {{"0", 0},
              {"42", 42},
              {"-7", -7},
              {"+7", 7},
              {"007", 7},
              {"9223372036854775807", INT64_MAX},
              {"-9223372036854775808", INT64_MIN}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t n = -1;
        json_t *v = json_string(ok[i].text);
        assert_true(sqlq_json_int64(v, &n));
        assert_true(n == ok[i].want);
        n = -1;
        assert_true(sqlq_json_int64_text(ok[i].text, &n));
        assert_true(n == ok[i].want);
        json_decref(v);
    }
    json_t *big = json_integer(INT64_MIN);
    int64_t n = 0;
    assert_true(sqlq_json_int64(big, &n));
    assert_true(n == INT64_MIN);
    json_decref(big);
}

static void test_common_json_int64_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {"",     " 1",  "1 ",  "\t1", "1x",  "x1", "-",
                                      "+",    "--1", "+-1", "1.0", "1e3", "0x10",
                                      "9223372036854775808", "-9223372036854775809"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t n = 99;
        json_t *v = json_string(bad[i]);
        assert_false(sqlq_json_int64(v, &n));
        assert_false(sqlq_json_int64_text(bad[i], &n));
        assert_true(n == 99);
        json_decref(v);
    }
    json_t *other[] = {json_null(), json_true(), json_false(), json_real(1.0), json_array(),
                       json_object()};
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        int64_t n = 99;
        assert_false(sqlq_json_int64(other[i], &n));
        assert_true(n == 99);
        json_decref(other[i]);
    }
    int64_t n = 99;
    assert_false(sqlq_json_int64(NULL, &n));
    assert_false(sqlq_json_int64_text(NULL, &n));
    assert_true(n == 99);
}

/* Monotonic milliseconds move forward with real time and agree with the system clock seam. */
static void test_common_clock_mono_ms(void **state)
{
    (void)state;
    sqlq_clock sys = sqlq_clock_system(NULL);
    uint64_t a = sqlq_clock_mono_ms();
    uint64_t s = sqlq_clock_now_ms(&sys);
    assert_true(sqlq_clock_sleep_ms(&sys, 20));
    uint64_t b = sqlq_clock_mono_ms();
    assert_true(s >= a);
    assert_true(b >= a + 20);
    assert_true(b < a + 5000);
    assert_true(sqlq_clock_now_ms(&sys) >= b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common_buf_grows_and_takes),
        cmocka_unit_test(test_common_buf_cap_frees),
        cmocka_unit_test(test_common_error_first_wins),
        cmocka_unit_test(test_common_log_redacts_and_filters),
        cmocka_unit_test(test_common_log_error_helper),
        cmocka_unit_test(test_common_redact_keys_not_substrings),
        cmocka_unit_test(test_common_log_hostile_values_escaped),
        cmocka_unit_test(test_common_log_json_render),
        cmocka_unit_test(test_common_log_control_characters),
        cmocka_unit_test(test_common_json_int64_accepts),
        cmocka_unit_test(test_common_json_int64_refuses),
        cmocka_unit_test(test_common_clock_mono_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
