/* msg_parse: reads a message body back into changes (docs/messages.md): the row shape (insert,
 * update, delete, read), the batch {"changes":[…]} and the Azure Functions shape
 * [{"Operation","Item"}]. It trusts nothing: a body that is not JSON, has a member twice, is
 * none of the shapes, or has a member of the wrong type is refused with a reason. What a
 * reader requires beyond the shape (a version to order by, a row to apply) is the reader's to
 * check: has_version and truncated say what the message carries. */
#ifndef SQLQ_MSG_PARSE_H
#define SQLQ_MSG_PARSE_H

#include "envelope.h"
#include "msg_change.h"
#include "result.h"

#include <stddef.h>

typedef struct sqlq_msg_parsed {
    sqlq_envelope_format format; /* the shape read */
    sqlq_msg_change *items;      /* key and row borrowed from root */
    size_t n;
    json_t *root; /* the parsed body */
} sqlq_msg_parsed;

/* SQLQ_E_PARSE: not JSON, a duplicate member, not one of the shapes, an unknown op or
 * Operation, a row or Item that is not an object. SQLQ_E_INVALID: a change without a "key"
 * object, a version that is not an integer or is beyond ±SQLQ_MSG_VERSION_MAX, an insert,
 * update or read without its row that does not say it was truncated. Each change: op; key
 * (row shape); row (NULL for a delete without one, or a truncated change); version when given.
 * On failure *out is empty. */
SQLQ_NODISCARD sqlq_result sqlq_msg_parse(const char *body, size_t len, sqlq_msg_parsed *out,
                                          sqlq_error *err);
void sqlq_msg_parsed_free(sqlq_msg_parsed *p);

#endif
