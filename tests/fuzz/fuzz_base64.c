/* Fuzz: message text decoding (base64 and plain) and the round trip: whatever decodes must
 * encode back to text that decodes to the same bytes. */
#include "codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int e = 0; e < 2; e++) {
        sqlq_encoding enc = e ? SQLQ_ENCODING_PLAIN : SQLQ_ENCODING_BASE64;
        sqlq_buf raw, text, again;
        sqlq_buf_init(&raw, 1024 * 1024);
        sqlq_buf_init(&text, 1024 * 1024);
        sqlq_buf_init(&again, 1024 * 1024);
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_codec_decode(enc, (const char *)data, size, &raw, &err) == SQLQ_OK &&
            sqlq_codec_encode(enc, raw.data ? raw.data : "", raw.len, &text, &err) == SQLQ_OK) {
            if (sqlq_codec_decode(enc, sqlq_buf_str(&text), text.len, &again, &err) != SQLQ_OK ||
                again.len != raw.len || (raw.len && memcmp(again.data, raw.data, raw.len) != 0))
                abort(); /* decode(encode(x)) != x */
        }
        sqlq_buf_free(&raw);
        sqlq_buf_free(&text);
        sqlq_buf_free(&again);
    }
    return 0;
}
