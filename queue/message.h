/* message: a queue message as the service returns it. */
#ifndef SQLQ_MESSAGE_H
#define SQLQ_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlq_message {
    char *id;
    char *pop_receipt; /* NULL for peeked messages */
    char *text;        /* MessageText exactly as stored (still base64 when encoded), entities decoded */
    size_t text_len;
    long dequeue_count;
    int64_t insertion_time; /* seconds since the epoch, UTC */
    int64_t expiration_time;
    int64_t next_visible_time; /* 0 when not returned */
} sqlq_message;

typedef struct sqlq_message_list {
    sqlq_message *items;
    size_t count;
} sqlq_message_list;

void sqlq_message_free(sqlq_message *m); /* frees the fields, not m itself */
void sqlq_message_list_free(sqlq_message_list *l);
/* MessageId and PopReceipt as the service makes them (a GUID, base64): 1..SQLQ_MESSAGE_REF_MAX
 * characters from A-Z a-z 0-9 + / = - _. Anything else (CR, LF, quotes, spaces) is refused
 * before it can reach a header, a URL, an environment variable or a log line. */
#define SQLQ_MESSAGE_REF_MAX 255
bool sqlq_message_ref_valid(const char *s);
/* The largest DequeueCount accepted from the service (an int32 there). */
#define SQLQ_MESSAGE_MAX_DEQUEUE_COUNT 2147483647L

/* Deep copy; returns 0 on success, -1 on OOM. */
int sqlq_message_copy(sqlq_message *dst, const sqlq_message *src);

#endif
