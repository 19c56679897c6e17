/* xml: the queue service's XML: message lists, queue listings and error bodies parsed with
 * expat (entities and CDATA decoded, DOCTYPEs refused), and message bodies written. */
#ifndef SQLQ_XML_H
#define SQLQ_XML_H

#include "buf.h"
#include "message.h"
#include "result.h"

#include <stddef.h>
#include <stdint.h>

/* <QueueMessagesList>: appends each <QueueMessage> to out (which may already hold items).
 * SQLQ_E_PARSE for malformed XML, another root element, or a field the service never sends:
 * a MessageId or PopReceipt failing sqlq_message_ref_valid, a DequeueCount outside
 * 0..2147483647, a time that is not an RFC 1123 date. out is unchanged on failure. */
SQLQ_NODISCARD sqlq_result sqlq_xml_parse_messages(const char *body, size_t len,
                                                   sqlq_message_list *out, sqlq_error *err);

/* <EnumerationResults>: appends queue names to *names (realloc'd; *count updated) and sets
 * *out_next_marker (malloc'd) when the listing continues, else NULL. */
SQLQ_NODISCARD sqlq_result sqlq_xml_parse_queue_list(const char *body, size_t len, char ***names,
                                                     size_t *count, char **out_next_marker,
                                                     sqlq_error *err);

/* <Error><Code/><Message/></Error>: copies Code and the first line of Message (each "" when
 * absent). SQLQ_E_PARSE when the body is not such a document (both outputs then ""). */
sqlq_result sqlq_xml_parse_error(const char *body, size_t len, char *code, size_t code_size,
                                 char *message, size_t message_size);

/* Appends text with &, <, > and CR escaped (CR would otherwise be normalised away). */
SQLQ_NODISCARD sqlq_result sqlq_xml_escape(sqlq_buf *out, const char *text, size_t len);
/* Appends <QueueMessage><MessageText>{escaped text}</MessageText></QueueMessage>. */
SQLQ_NODISCARD sqlq_result sqlq_xml_message_body(sqlq_buf *out, const char *text, size_t len);

/* "Mon, 01 Jan 2024 00:00:00 GMT" -> seconds since the epoch; false when malformed. */
bool sqlq_xml_parse_http_date(const char *s, int64_t *out);

#endif
