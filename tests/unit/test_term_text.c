#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "term_text.h"

#include <stdio.h>
#include <string.h>

static void preview(const char *s, size_t width, char *out, size_t size)
{
    sqlq_term_text_preview(s, strlen(s), width, out, size);
}

/* Valid UTF-8 from start to end. */
static void assert_utf8(const char *s)
{
    for (size_t i = 0, n = strlen(s); i < n;) {
        size_t k = sqlq_term_text_utf8_len((const unsigned char *)s + i, n - i);
        assert_true(k > 0);
        i += k;
    }
}

/* A character of 2, 3 and 4 bytes exactly at the cut: never split, always valid UTF-8. */
static void test_term_text_preview_cuts_on_character_boundaries(void **state)
{
    (void)state;
    static const char *const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    for (size_t c = 0; c < 3; c++) {
        for (size_t pad = 0; pad < 6; pad++) {
            char in[256] = "";
            size_t at = 0;
            for (size_t i = 0; i < pad; i++)
                at += (size_t)snprintf(in + at, sizeof(in) - at, "a");
            for (size_t i = 0; i < 20; i++)
                at += (size_t)snprintf(in + at, sizeof(in) - at, "%s", chars[c]);
            char out[64];
            preview(in, 10, out, sizeof(out));
            assert_utf8(out);
            assert_non_null(strstr(out, "..."));
            assert_true(strlen(out) <= sizeof(out) - 1);
        }
    }
    char out[64];
    preview("\xc3\xa9\xc3\xa9\xc3\xa9", 10, out, sizeof(out));
    assert_string_equal(out, "\xc3\xa9\xc3\xa9\xc3\xa9"); /* fits: not cut, no "..." */
}

static void test_term_text_preview_keeps_combining_marks(void **state)
{
    (void)state;
    /* "e" + COMBINING ACUTE at the cut goes or stays as one. */
    char out[64];
    preview("abcdefe\xcc\x81xyzxyzxyz", 10, out, sizeof(out));
    assert_utf8(out);
    assert_null(strstr(out, "e..."));
}

static void test_term_text_escapes_controls(void **state)
{
    (void)state;
    const char in[] = "a\x1b[2J\x1b]52;c;aGk=\x07 b\xc2\x9b" "31m\x7f\xff\n\tz";
    sqlq_buf out;
    sqlq_buf_init(&out, 0);
    assert_int_equal(sqlq_term_text_escape(in, sizeof(in) - 1, true, &out), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&out),
                        "a\\x1b[2J\\x1b]52;c;aGk=\\x07 b\\u009b31m\\x7f\\xff\n\tz");
    sqlq_buf_reset(&out);
    assert_int_equal(sqlq_term_text_escape("x\ny\r", 4, false, &out), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&out), "x\\x0ay\\x0d");
    /* A body holding the text \x1b must not look like one holding ESC. */
    char esc_shown[64], text_shown[64];
    sqlq_buf_reset(&out);
    assert_int_equal(sqlq_term_text_escape("A\x1b[2JB", 6, false, &out), SQLQ_OK);
    snprintf(esc_shown, sizeof(esc_shown), "%s", sqlq_buf_str(&out));
    sqlq_buf_reset(&out);
    assert_int_equal(sqlq_term_text_escape("A\\x1b[2JB", 9, false, &out), SQLQ_OK);
    snprintf(text_shown, sizeof(text_shown), "%s", sqlq_buf_str(&out));
    assert_string_equal(esc_shown, "A\\x1b[2JB");
    assert_string_equal(text_shown, "A\\\\x1b[2JB");
    sqlq_buf_free(&out);
    char p[64];
    preview("\x1b[2Jhi\r\nthere", 40, p, sizeof(p));
    assert_string_equal(p, "\\x1b[2Jhi there");
}

static void test_term_text_json_escapes_c1_and_del(void **state)
{
    (void)state;
    sqlq_buf out;
    sqlq_buf_init(&out, 0);
    assert_int_equal(sqlq_term_text_json("{\"b\":\"x\xc2\x9b\x7f\xc3\xa9\"}", &out), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&out), "{\"b\":\"x\\u009b\\u007f\xc3\xa9\"}");
    sqlq_buf_free(&out);
}

/* Error texts carry what a queue service said: one line, escaped, cut on a boundary. */
static void test_term_text_line_escapes_and_fits(void **state)
{
    (void)state;
    char out[16];
    sqlq_term_text_line("bad \x1b[2J\r\nx", out, sizeof(out));
    assert_string_equal(out, "bad \\x1b[2J\\x0d");
    sqlq_term_text_line("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", out, 8);
    assert_string_equal(out, "\xe2\x82\xac\xe2\x82\xac"); /* 6 bytes: a third would not fit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_term_text_preview_cuts_on_character_boundaries),
        cmocka_unit_test(test_term_text_preview_keeps_combining_marks),
        cmocka_unit_test(test_term_text_escapes_controls),
        cmocka_unit_test(test_term_text_json_escapes_c1_and_del),
        cmocka_unit_test(test_term_text_line_escapes_and_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
