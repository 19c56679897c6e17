/* Fuzz: what the consumer does with a Get Messages reply before a handler sees it: parse the
 * XML, then decode each MessageText as the consumer would (base64, then plain). */
#include "codec.h"
#include "message.h"
#include "xml.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_message_list list;
    memset(&list, 0, sizeof(list));
    if (sqlq_xml_parse_messages((const char *)data, size, &list, &err) != SQLQ_OK)
        return 0;
    for (size_t i = 0; i < list.count; i++) {
        const sqlq_message *m = &list.items[i];
        for (int e = 0; e < 2; e++) {
            sqlq_buf body;
            sqlq_buf_init(&body, 1024 * 1024);
            sqlq_error_clear(&err);
            (void)sqlq_codec_decode(e ? SQLQ_ENCODING_PLAIN : SQLQ_ENCODING_BASE64,
                                    m->text ? m->text : "", m->text_len, &body, &err);
            sqlq_buf_free(&body);
        }
    }
    sqlq_message_list_free(&list);
    return 0;
}
