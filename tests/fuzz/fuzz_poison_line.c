/* Fuzz: the poison import file's line parser (one JSON object per line, "text" verbatim or
 * "body" to encode) over a whole file's worth of lines. parse_line is file-local to
 * queue/poison_file.c, so the file is compiled into the harness (its public functions then come
 * from here rather than from the library). */
#include "../../queue/poison_file.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    for (unsigned long long lineno = 1; p < end; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char *text = NULL;
        size_t text_len = 0;
        bool verbatim = true;
        sqlq_error err;
        sqlq_error_clear(&err);
        if (parse_line(p, len, lineno, &text, &text_len, &verbatim, &err) == SQLQ_OK) {
            if (!verbatim) { /* what the put does with a body */
                sqlq_buf out;
                sqlq_buf_init(&out, SQLQ_MESSAGE_MAX_TEXT);
                (void)sqlq_codec_encode(SQLQ_ENCODING_BASE64, text, text_len, &out, &err);
                sqlq_buf_free(&out);
            }
            free(text);
        }
        p += len + (nl ? 1 : 0);
    }
    return 0;
}
