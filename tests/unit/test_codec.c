/* codec: base64 exactly as Azure Functions expects, plain text checks, the 64 KiB limit. */
#include "codec.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static sqlq_result encode(sqlq_encoding e, const void *p, size_t n, sqlq_buf *out, sqlq_error *err)
{
    sqlq_buf_init(out, 0);
    sqlq_error_clear(err);
    return sqlq_codec_encode(e, p, n, out, err);
}

static void test_codec_base64_known_values(void **state)
{
    (void)state;
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *out[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        sqlq_buf b;
        sqlq_error err;
        assert_int_equal(encode(SQLQ_ENCODING_BASE64, in[i], strlen(in[i]), &b, &err), SQLQ_OK);
        assert_string_equal(sqlq_buf_str(&b), out[i]);
        assert_int_equal(sqlq_codec_encoded_size(SQLQ_ENCODING_BASE64, strlen(in[i])), strlen(out[i]));
        sqlq_buf_free(&b);
        sqlq_buf_init(&b, 0);
        assert_int_equal(sqlq_codec_decode(SQLQ_ENCODING_BASE64, out[i], strlen(out[i]), &b, &err),
                         SQLQ_OK);
        assert_int_equal(b.len, strlen(in[i]));
        assert_memory_equal(sqlq_buf_str(&b), in[i], b.len);
        sqlq_buf_free(&b);
    }
}

static void test_codec_base64_round_trip_binary(void **state)
{
    (void)state;
    size_t sizes[] = {1, 2, 3, 100, 3071, 3072, 3073, 9000, 49152};
    unsigned char *data = malloc(49152);
    for (size_t i = 0; i < 49152; i++)
        data[i] = (unsigned char)((i * 2654435761u) >> 13);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        sqlq_buf enc, dec;
        sqlq_error err;
        assert_int_equal(encode(SQLQ_ENCODING_BASE64, data, sizes[s], &enc, &err), SQLQ_OK);
        assert_int_equal(enc.len, sqlq_codec_encoded_size(SQLQ_ENCODING_BASE64, sizes[s]));
        assert_null(strpbrk(enc.data, "\n\r ")); /* one line, no wrapping */
        sqlq_buf_init(&dec, 0);
        assert_int_equal(sqlq_codec_decode(SQLQ_ENCODING_BASE64, enc.data, enc.len, &dec, &err), SQLQ_OK);
        assert_int_equal(dec.len, sizes[s]);
        assert_memory_equal(dec.data, data, sizes[s]);
        sqlq_buf_free(&enc);
        sqlq_buf_free(&dec);
    }
    free(data);
}

static void test_codec_invalid_base64(void **state)
{
    (void)state;
    const char *bad[] = {"Zg=", "Z===", "====", "Zm9v!", "Zm 9v", "Zm9v\n", "Zg==Zg==", "Zm-_",
                         "Zg=A", "hello world", "{\"json\":1}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sqlq_buf b;
        sqlq_buf_init(&b, 0);
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_codec_decode(SQLQ_ENCODING_BASE64, bad[i], strlen(bad[i]), &b, &err) != SQLQ_E_PARSE)
            fail_msg("'%s' was accepted as base64", bad[i]);
        assert_non_null(strstr(err.message, "not valid base64"));
        sqlq_buf_free(&b);
    }
}

static void test_codec_limit_exactly_at_and_one_over(void **state)
{
    (void)state;
    unsigned char *data = calloc(1, SQLQ_MESSAGE_MAX_TEXT + 1);
    memset(data, 'x', SQLQ_MESSAGE_MAX_TEXT + 1);
    sqlq_buf b;
    sqlq_error err;
    /* base64: 49152 bytes are exactly 65536 characters; one byte more is 65540. */
    assert_int_equal(encode(SQLQ_ENCODING_BASE64, data, 49152, &b, &err), SQLQ_OK);
    assert_int_equal(b.len, SQLQ_MESSAGE_MAX_TEXT);
    sqlq_buf_free(&b);
    assert_int_equal(encode(SQLQ_ENCODING_BASE64, data, 49153, &b, &err), SQLQ_E_TOO_LARGE);
    assert_int_equal(err.code, SQLQ_E_TOO_LARGE);
    assert_false(err.transient);
    assert_non_null(strstr(err.message, "49153 bytes"));
    assert_non_null(strstr(err.message, "65540"));
    assert_non_null(strstr(err.message, "65536"));
    assert_int_equal(b.len, 0);
    sqlq_buf_free(&b);
    /* plain: the text itself counts. */
    assert_int_equal(encode(SQLQ_ENCODING_PLAIN, data, SQLQ_MESSAGE_MAX_TEXT, &b, &err), SQLQ_OK);
    assert_int_equal(b.len, SQLQ_MESSAGE_MAX_TEXT);
    sqlq_buf_free(&b);
    assert_int_equal(encode(SQLQ_ENCODING_PLAIN, data, SQLQ_MESSAGE_MAX_TEXT + 1, &b, &err),
                     SQLQ_E_TOO_LARGE);
    assert_non_null(strstr(err.message, "65537 bytes"));
    sqlq_buf_free(&b);
    free(data);
}

static void test_codec_plain_accepts_utf8_rejects_what_xml_cannot_carry(void **state)
{
    (void)state;
    const char *good[] = {"", "plain {\"a\":1}", "\xc5\xbelu\xc5\xa5ou\xc4\x8dk\xc3\xbd",
                          "tab\there\r\nnew", "\xf0\x9f\x90\x8e horse", "\xef\xbf\xbd"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        sqlq_buf b;
        sqlq_error err;
        assert_int_equal(encode(SQLQ_ENCODING_PLAIN, good[i], strlen(good[i]), &b, &err), SQLQ_OK);
        assert_string_equal(sqlq_buf_str(&b), good[i]);
        assert_true(sqlq_codec_carries(SQLQ_ENCODING_PLAIN, good[i], strlen(good[i])));
        sqlq_buf_free(&b);
    }
    const char *bad[] = {"\xff", "a\x01", "\xc0\xaf", "\xed\xa0\x80", "\xef\xbf\xbe", "\xf4\x90\x80\x80",
                         "\xe2\x82", "\x7f\x00"};
    size_t bad_len[] = {1, 2, 2, 3, 3, 4, 2, 2};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sqlq_buf b;
        sqlq_error err;
        if (encode(SQLQ_ENCODING_PLAIN, bad[i], bad_len[i], &b, &err) != SQLQ_E_BODY)
            fail_msg("bad plain text %zu accepted", i);
        assert_false(sqlq_codec_carries(SQLQ_ENCODING_PLAIN, bad[i], bad_len[i]));
        assert_true(sqlq_codec_carries(SQLQ_ENCODING_BASE64, bad[i], bad_len[i]));
        assert_non_null(strstr(err.message, "base64"));
        sqlq_buf_free(&b);
    }
    /* Decoding plain is a copy, whatever it holds. */
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_codec_decode(SQLQ_ENCODING_PLAIN, "a&b", 3, &b, &err), SQLQ_OK);
    assert_string_equal(sqlq_buf_str(&b), "a&b");
    sqlq_buf_free(&b);
}

static void test_codec_encoding_names(void **state)
{
    (void)state;
    sqlq_encoding e = SQLQ_ENCODING_PLAIN;
    assert_true(sqlq_encoding_parse("BASE64", &e));
    assert_int_equal(e, SQLQ_ENCODING_BASE64);
    assert_true(sqlq_encoding_parse("plain", &e));
    assert_int_equal(e, SQLQ_ENCODING_PLAIN);
    assert_false(sqlq_encoding_parse("utf8", &e));
    assert_false(sqlq_encoding_parse(NULL, &e));
    assert_string_equal(sqlq_encoding_name(SQLQ_ENCODING_BASE64), "base64");
    assert_string_equal(sqlq_encoding_name(SQLQ_ENCODING_PLAIN), "plain");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec_base64_known_values),
        cmocka_unit_test(test_codec_base64_round_trip_binary),
        cmocka_unit_test(test_codec_invalid_base64),
        cmocka_unit_test(test_codec_limit_exactly_at_and_one_over),
        cmocka_unit_test(test_codec_plain_accepts_utf8_rejects_what_xml_cannot_carry),
        cmocka_unit_test(test_codec_encoding_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
