/* poison_view: how `sqlq poison list` and `show` present a poison message: the stored text
 * always, the decoded body when decoding works, each labelled, every control character
 * escaped (term_text.h). */
#ifndef SQLQ_POISON_VIEW_H
#define SQLQ_POISON_VIEW_H

#include "codec.h"
#include "message.h"

#include <jansson.h>
#include <stdio.h>

/* {"id", "insertion_time", "expiration_time", "dequeue_count", "text" (as stored),
 *  "body" (decoded: a string, {"$base64": …} when not UTF-8, null when undecodable),
 *  "body_error" (only when undecodable)}. */
json_t *sqlq_poison_view_json(sqlq_encoding e, const sqlq_message *m);

void sqlq_poison_view_print_header(FILE *f);
/* One line: id, insertion time, dequeue count, a preview cut on a character boundary. */
void sqlq_poison_view_print_row(FILE *f, sqlq_encoding e, const sqlq_message *m);
/* Every field, the stored text and the decoded body in full. */
void sqlq_poison_view_print_show(FILE *f, sqlq_encoding e, const sqlq_message *m);

#endif
