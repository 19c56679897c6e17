/* logical_txn: one committed transaction's changes of a table, collapsed to one per key (the
 * latest state), as the logical source hands them to the route. */
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
        sqlq_logical_change_free(&t->items[i]);
    free(t->items);
    json_decref(t->index);
    memset(t, 0, sizeof *t);
}

static void merge_changed(sqlq_logical_change *into, json_t *more)
{
    if (!into->changed || !more) {
        json_decref(into->changed);
        into->changed = NULL; /* unknown for one of them: unknown for both */
        json_decref(more);
        return;
    }
    size_t i;
    json_t *name;
    json_array_foreach(more, i, name) {
        bool seen = false;
        size_t j;
        json_t *have;
        json_array_foreach(into->changed, j, have)
            seen = seen || json_equal(have, name);
        if (!seen)
            json_array_append(into->changed, name);
    }
    json_decref(more);
}

static void replace(sqlq_logical_change *old, sqlq_logical_change c)
{
    sqlq_op op = c.op == SQLQ_OP_DELETE                                              ? SQLQ_OP_DELETE
                 : (old->op == SQLQ_OP_INSERT || c.op == SQLQ_OP_INSERT ||
                    old->op == SQLQ_OP_DELETE) ? SQLQ_OP_INSERT
                                               : SQLQ_OP_UPDATE;
    merge_changed(old, c.changed);
    json_t *changed = op == SQLQ_OP_UPDATE ? old->changed : NULL;
    if (op != SQLQ_OP_UPDATE)
        json_decref(old->changed);
    json_decref(old->key);
    json_decref(old->row);
    json_decref(old->before);
    *old = c;
    old->op = op;
    old->changed = changed;
}

sqlq_result sqlq_logical_txn_add(sqlq_logical_txn *t, sqlq_logical_change c)
{
    char *canon = json_dumps(c.key, JSON_COMPACT | JSON_SORT_KEYS);
    if (!t->index)
        t->index = json_object();
    if (!canon || !t->index) {
        free(canon);
        sqlq_logical_change_free(&c);
        return SQLQ_E_NOMEM;
    }
    json_t *at = json_object_get(t->index, canon);
    if (at) {
        replace(&t->items[json_integer_value(at)], c);
        free(canon);
        return SQLQ_OK;
    }
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        sqlq_logical_change *items = realloc(t->items, cap * sizeof *items);
        if (!items) {
            free(canon);
            sqlq_logical_change_free(&c);
            return SQLQ_E_NOMEM;
        }
        t->items = items;
        t->cap = cap;
    }
    if (json_object_set_new(t->index, canon, json_integer((json_int_t)t->count)) != 0) {
        free(canon);
        sqlq_logical_change_free(&c);
        return SQLQ_E_NOMEM;
    }
    free(canon);
    t->items[t->count++] = c;
    return SQLQ_OK;
}
