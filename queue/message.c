#include "message.h"

#include <stdlib.h>
#include <string.h>

void sqlq_message_free(sqlq_message *m)
{
    if (!m)
        return;
    free(m->id);
    free(m->pop_receipt);
    free(m->text);
    memset(m, 0, sizeof(*m));
}

void sqlq_message_list_free(sqlq_message_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        sqlq_message_free(&l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

static int dup_field(char **dst, const char *src, size_t len)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = malloc(len + 1);
    if (!*dst)
        return -1;
    memcpy(*dst, src, len);
    (*dst)[len] = '\0';
    return 0;
}

int sqlq_message_copy(sqlq_message *dst, const sqlq_message *src)
{
    *dst = *src;
    dst->id = dst->pop_receipt = dst->text = NULL;
    if (dup_field(&dst->id, src->id, src->id ? strlen(src->id) : 0) != 0 ||
        dup_field(&dst->pop_receipt, src->pop_receipt,
                  src->pop_receipt ? strlen(src->pop_receipt) : 0) != 0 ||
        dup_field(&dst->text, src->text, src->text_len) != 0) {
        free(dst->id);
        free(dst->pop_receipt);
        free(dst->text);
        memset(dst, 0, sizeof(*dst));
        return -1;
    }
    return 0;
}

bool sqlq_message_ref_valid(const char *s)
{
    if (!s)
        return false;
    size_t n = 0;
    for (; s[n]; n++) {
        char ch = s[n];
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                  ch == '+' || ch == '/' || ch == '=' || ch == '-' || ch == '_';
        if (!ok || n >= SQLQ_MESSAGE_REF_MAX)
            return false;
    }
    return n > 0;
}
