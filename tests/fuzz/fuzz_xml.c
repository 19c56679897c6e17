/* Fuzz: every parser of the queue service's XML replies (messages, queue list, error) and the
 * HTTP date parser. Bodies come from the network: any bytes. */
#include "message.h"
#include "xml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_message_list list;
    memset(&list, 0, sizeof(list));
    if (sqlq_xml_parse_messages(body, size, &list, &err) == SQLQ_OK)
        sqlq_message_list_free(&list);
    char **names = NULL;
    size_t count = 0;
    char *marker = NULL;
    sqlq_error_clear(&err);
    (void)sqlq_xml_parse_queue_list(body, size, &names, &count, &marker, &err);
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    free(marker);
    char code[64], message[256];
    (void)sqlq_xml_parse_error(body, size, code, sizeof(code), message, sizeof(message));
    char *date = malloc(size + 1);
    if (date) {
        memcpy(date, data, size);
        date[size] = '\0';
        int64_t t;
        (void)sqlq_xml_parse_http_date(date, &t);
        free(date);
    }
    return 0;
}
