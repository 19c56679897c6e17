#include "codec.h"

#include <openssl/evp.h>
#include <string.h>
#include <strings.h>

/* Work in chunks on the stack: 3 KiB of bytes become 4 KiB of base64 and back. */
#define CHUNK_TEXT 4096u
#define CHUNK_BYTES 3072u

bool sqlq_encoding_parse(const char *name, sqlq_encoding *out)
{
    if (!name)
        return false;
    if (strcasecmp(name, "base64") == 0)
        *out = SQLQ_ENCODING_BASE64;
    else if (strcasecmp(name, "plain") == 0)
        *out = SQLQ_ENCODING_PLAIN;
    else
        return false;
    return true;
}

const char *sqlq_encoding_name(sqlq_encoding e)
{
    return e == SQLQ_ENCODING_PLAIN ? "plain" : "base64";
}

size_t sqlq_codec_encoded_size(sqlq_encoding e, size_t len)
{
    if (e == SQLQ_ENCODING_PLAIN)
        return len;
    return (len / 3 + (len % 3 != 0)) * 4;
}

/* Length of the valid UTF-8 sequence at s (n bytes left) whose code point XML 1.0 allows
 * (#x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF), or 0. */
static size_t xml_char_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return (c >= 0x20 || c == 0x9 || c == 0xA || c == 0xD) ? 1 : 0;
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || len > n)
        return 0;
    unsigned cp = c & (0xFFu >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    static const unsigned min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len] || cp > 0x10FFFF)
        return 0; /* overlong or out of range */
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
        return 0;
    return len;
}

static sqlq_result too_large(size_t len, size_t encoded, sqlq_encoding e, sqlq_error *err)
{
    if (e == SQLQ_ENCODING_BASE64)
        return sqlq_error_set(err, SQLQ_E_TOO_LARGE, false,
                              "message of %zu bytes is %zu bytes as base64; the limit is %u "
                              "(at most %u bytes before base64)",
                              len, encoded, SQLQ_MESSAGE_MAX_TEXT, SQLQ_MESSAGE_MAX_TEXT / 4 * 3);
    return sqlq_error_set(err, SQLQ_E_TOO_LARGE, false,
                          "message of %zu bytes is over the limit of %u bytes of message text",
                          len, SQLQ_MESSAGE_MAX_TEXT);
}

static sqlq_result encode_base64(const unsigned char *p, size_t len, sqlq_buf *out)
{
    unsigned char chunk[CHUNK_TEXT + 1];
    while (len > 0) {
        size_t n = len < CHUNK_BYTES ? len : CHUNK_BYTES;
        int w = EVP_EncodeBlock(chunk, p, (int)n);
        sqlq_result r = sqlq_buf_add(out, chunk, (size_t)w);
        if (r != SQLQ_OK)
            return r;
        p += n;
        len -= n;
    }
    return SQLQ_OK;
}

static sqlq_result check_plain(const unsigned char *p, size_t len, sqlq_error *err)
{
    for (size_t i = 0; i < len;) {
        if (p[i] >= 0x20 && p[i] < 0x80) { /* the common case, one byte at a time */
            i++;
            continue;
        }
        size_t n = xml_char_len(p + i, len - i);
        if (n == 0)
            return sqlq_error_set(err, SQLQ_E_BODY, false,
                                  "plain message text has a byte sequence at offset %zu that is not "
                                  "UTF-8 XML can carry (use --encoding base64 for binary data)",
                                  i);
        i += n;
    }
    return SQLQ_OK;
}

bool sqlq_codec_carries(sqlq_encoding e, const void *body, size_t len)
{
    return e != SQLQ_ENCODING_PLAIN || check_plain(body, len, NULL) == SQLQ_OK;
}

sqlq_result sqlq_codec_encode(sqlq_encoding e, const void *body, size_t len, sqlq_buf *out,
                              sqlq_error *err)
{
    size_t encoded = sqlq_codec_encoded_size(e, len);
    if (encoded > SQLQ_MESSAGE_MAX_TEXT || encoded < len)
        return too_large(len, encoded, e, err);
    sqlq_result r;
    if (e == SQLQ_ENCODING_PLAIN) {
        r = check_plain(body, len, err);
        if (r != SQLQ_OK)
            return r;
        r = sqlq_buf_add(out, body, len);
    } else {
        r = encode_base64(body, len, out);
    }
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "cannot hold the encoded message (%zu bytes)", encoded);
    return SQLQ_OK;
}

static bool b64_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* Strict: length a multiple of 4, the standard alphabet, '=' padding only at the very end. */
static bool b64_valid(const unsigned char *t, size_t len, size_t *out_pad)
{
    if (len % 4 != 0)
        return false;
    size_t pad = 0;
    while (pad < 2 && pad < len && t[len - 1 - pad] == '=')
        pad++;
    for (size_t i = 0; i < len - pad; i++)
        if (!b64_char(t[i]))
            return false;
    *out_pad = pad;
    return true;
}

static sqlq_result decode_base64(const char *text, size_t len, sqlq_buf *out, sqlq_error *err)
{
    const unsigned char *t = (const unsigned char *)text;
    size_t pad;
    if (!b64_valid(t, len, &pad))
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "message text (%zu characters) is not valid base64; was it sent as "
                              "plain text? (try --encoding plain)",
                              len);
    unsigned char chunk[CHUNK_BYTES + 3];
    while (len > 0) {
        size_t n = len < CHUNK_TEXT ? len : CHUNK_TEXT;
        int w = EVP_DecodeBlock(chunk, t, (int)n);
        if (w < 0)
            return sqlq_error_set(err, SQLQ_E_PARSE, false, "message text is not valid base64");
        size_t got = (size_t)w - (n == len ? pad : 0);
        sqlq_result r = sqlq_buf_add(out, chunk, got);
        if (r != SQLQ_OK)
            return sqlq_error_set(err, r, false, "cannot hold the decoded message");
        t += n;
        len -= n;
    }
    return SQLQ_OK;
}

sqlq_result sqlq_codec_decode(sqlq_encoding e, const char *text, size_t len, sqlq_buf *out,
                              sqlq_error *err)
{
    if (e == SQLQ_ENCODING_BASE64)
        return decode_base64(text, len, out, err);
    sqlq_result r = sqlq_buf_add(out, text, len);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "cannot hold the message text (%zu bytes)", len);
    return SQLQ_OK;
}
