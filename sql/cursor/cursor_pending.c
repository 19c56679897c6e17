/* cursor_pending: polled, uncommitted batches of a cursor source. */
#include "cursor_pending.h"

#include <stdlib.h>
#include <string.h>

static void batch_free(sqlq_cursor_batch *b)
{
    for (size_t i = 0; i < b->count; i++)
        free(b->items[i].key);
    free(b->items);
    sqlq_checkpoint_clear(&b->end);
}

void sqlq_cursor_pending_clear(sqlq_cursor_pending *p)
{
    for (size_t i = 0; i < p->count; i++)
        batch_free(&p->batches[i]);
    free(p->batches);
    p->batches = NULL;
    p->count = 0;
}

sqlq_result sqlq_cursor_pending_add(sqlq_cursor_pending *p, int64_t batch_id, sqlq_checkpoint *end,
                                    const sqlq_change *changes, size_t n)
{
    sqlq_cursor_batch b;
    memset(&b, 0, sizeof(b));
    b.batch_id = batch_id;
    b.items = calloc(n ? n : 1, sizeof(*b.items));
    sqlq_cursor_batch *grown = realloc(p->batches, (p->count + 1) * sizeof(*grown));
    if (grown)
        p->batches = grown;
    bool ok = b.items && grown;
    for (size_t i = 0; ok && i < n; i++, b.count++) {
        b.items[i].version = changes[i].version;
        b.items[i].key = changes[i].key ? json_dumps(changes[i].key, JSON_SORT_KEYS | JSON_COMPACT)
                                        : NULL;
        ok = b.items[i].key != NULL;
    }
    if (!ok) {
        batch_free(&b);
        return SQLQ_E_NOMEM;
    }
    b.end = *end;
    memset(end, 0, sizeof(*end));
    p->batches[p->count++] = b;
    return SQLQ_OK;
}

bool sqlq_cursor_pending_mark(sqlq_cursor_pending *p, const sqlq_change *ch)
{
    char *key = ch->key ? json_dumps(ch->key, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    bool found = false;
    for (size_t b = 0; key && !found && b < p->count; b++) {
        sqlq_cursor_batch *pb = &p->batches[b];
        for (size_t i = 0; i < pb->count; i++) {
            sqlq_cursor_item *it = &pb->items[i];
            if (!it->delivered && it->version == ch->version && strcmp(it->key, key) == 0) {
                it->delivered = true;
                pb->delivered++;
                found = true;
                break;
            }
        }
    }
    free(key);
    return found;
}

size_t sqlq_cursor_pending_ready(const sqlq_cursor_pending *p, int64_t *out_rows)
{
    size_t k = 0;
    int64_t rows = 0;
    while (k < p->count && p->batches[k].delivered == p->batches[k].count)
        rows += (int64_t)p->batches[k++].count;
    if (out_rows)
        *out_rows = rows;
    return k;
}

void sqlq_cursor_pending_drop(sqlq_cursor_pending *p, size_t k)
{
    if (k > p->count)
        k = p->count;
    for (size_t i = 0; i < k; i++)
        batch_free(&p->batches[i]);
    memmove(p->batches, p->batches + k, (p->count - k) * sizeof(*p->batches));
    p->count -= k;
}

size_t sqlq_cursor_pending_outstanding(const sqlq_cursor_pending *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->count; i++)
        n += p->batches[i].count - p->batches[i].delivered;
    return n;
}

int64_t sqlq_cursor_pending_next_id(const sqlq_cursor_pending *p, int64_t committed)
{
    return (p->count ? p->batches[p->count - 1].batch_id : committed) + 1;
}
