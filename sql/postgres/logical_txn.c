/* logical_txn: one transaction's changes of a table as they arrive, collapsed to one per key
 * (the latest state), kept as the pgoutput messages themselves (in memory up to a bound, then
 * in an unlinked temporary file), so a transaction of any size costs little memory. */
#include "logical_txn.h"

#include <stdlib.h>
#include <string.h>

void sqlq_logical_change_free(sqlq_logical_change *c)
{
    json_decref(c->key);
    json_decref(c->row);
    json_decref(c->before);
    json_decref(c->changed);
    memset(c, 0, sizeof *c);
}

void sqlq_logical_txn_init(sqlq_logical_txn *t, uint64_t commit_lsn, int64_t commit_time_us)
{
    memset(t, 0, sizeof *t);
    t->commit_lsn = commit_lsn;
    t->commit_time_us = commit_time_us;
}

void sqlq_logical_txn_clear(sqlq_logical_txn *t)
{
    for (size_t i = 0; i < t->count; i++)
        json_decref(t->items[i].changed);
    free(t->items);
    json_decref(t->index);
    free(t->mem);
    if (t->spill)
        fclose(t->spill);
    memset(t, 0, sizeof *t);
}

static void merge_changed(sqlq_logical_entry *into, json_t *more)
{
    if (!into->changed || !more) {
        json_decref(into->changed);
        into->changed = NULL; /* unknown for one of them: unknown for both */
        json_decref(more);
        return;
    }
    size_t i, j;
    json_t *name, *have;
    json_array_foreach(more, i, name) {
        bool seen = false;
        json_array_foreach(into->changed, j, have)
            seen = seen || json_equal(have, name);
        if (!seen)
            json_array_append(into->changed, name);
    }
    json_decref(more);
}

static sqlq_op merged(sqlq_op before, sqlq_op now)
{
    if (now == SQLQ_OP_DELETE)
        return SQLQ_OP_DELETE;
    if (before == SQLQ_OP_INSERT || now == SQLQ_OP_INSERT || before == SQLQ_OP_DELETE)
        return SQLQ_OP_INSERT;
    return SQLQ_OP_UPDATE;
}

/* Append the message to the store; its offset into *out_off. */
static sqlq_result store(sqlq_logical_txn *t, const char *msg, size_t len, uint64_t *out_off)
{
    if (!t->spill && t->mem_len + len <= SQLQ_LOGICAL_TXN_MEM_MAX) {
        if (t->mem_len + len > t->mem_cap) {
            size_t cap = t->mem_cap ? t->mem_cap : 4096;
            while (cap < t->mem_len + len)
                cap *= 2;
            char *m = realloc(t->mem, cap);
            if (!m)
                return SQLQ_E_NOMEM;
            t->mem = m;
            t->mem_cap = cap;
        }
        memcpy(t->mem + t->mem_len, msg, len);
        *out_off = t->mem_len;
        t->mem_len += len;
        return SQLQ_OK;
    }
    if (!t->spill && !(t->spill = tmpfile()))
        return SQLQ_E_IO;
    if (fseeko(t->spill, 0, SEEK_END) != 0 || fwrite(msg, 1, len, t->spill) != len)
        return SQLQ_E_IO;
    *out_off = SQLQ_LOGICAL_TXN_MEM_MAX + t->spill_len;
    t->spill_len += len;
    return SQLQ_OK;
}

sqlq_result sqlq_logical_txn_add(sqlq_logical_txn *t, const char *msg, size_t len,
                                 const char *canon_key, sqlq_op op, sqlq_logical_part part,
                                 const void *rel, json_t *changed)
{
    uint64_t off = 0;
    sqlq_result rc = store(t, msg, len, &off);
    if (rc == SQLQ_OK && !t->index && !(t->index = json_object()))
        rc = SQLQ_E_NOMEM;
    if (rc != SQLQ_OK) {
        json_decref(changed);
        return rc;
    }
    json_t *at = json_object_get(t->index, canon_key);
    if (at) {
        sqlq_logical_entry *e = &t->items[json_integer_value(at)];
        e->op = merged(e->op, op);
        merge_changed(e, changed);
        if (e->op != SQLQ_OP_UPDATE) { /* changed is an update's */
            json_decref(e->changed);
            e->changed = NULL;
        }
        e->part = part;
        e->off = off;
        e->len = len;
        e->rel = rel;
        return SQLQ_OK;
    }
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        sqlq_logical_entry *items = realloc(t->items, cap * sizeof *items);
        if (!items) {
            json_decref(changed);
            return SQLQ_E_NOMEM;
        }
        t->items = items;
        t->cap = cap;
    }
    if (json_object_set_new(t->index, canon_key, json_integer((json_int_t)t->count)) != 0) {
        json_decref(changed);
        return SQLQ_E_NOMEM;
    }
    t->items[t->count++] = (sqlq_logical_entry){op, part, off, len, rel, changed};
    return SQLQ_OK;
}

sqlq_result sqlq_logical_txn_read(const sqlq_logical_txn *t, size_t i, sqlq_buf *out)
{
    const sqlq_logical_entry *e = &t->items[i];
    sqlq_buf_reset(out);
    if (e->off < SQLQ_LOGICAL_TXN_MEM_MAX) /* the file's offsets start past the memory's */
        return sqlq_buf_add(out, t->mem + e->off, e->len);
    char chunk[65536];
    if (fseeko(t->spill, (off_t)(e->off - SQLQ_LOGICAL_TXN_MEM_MAX), SEEK_SET) != 0)
        return SQLQ_E_IO;
    for (size_t left = e->len; left > 0;) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        if (fread(chunk, 1, n, t->spill) != n)
            return SQLQ_E_IO;
        sqlq_result rc = sqlq_buf_add(out, chunk, n);
        if (rc != SQLQ_OK)
            return rc;
        left -= n;
    }
    return SQLQ_OK;
}
