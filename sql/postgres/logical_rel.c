/* logical_rel: a pgoutput Relation message made ready to turn the table's tuples into the
 * key, row and before objects of a change, as the trigger source builds them. */
#include "logical_rel.h"

#include <stdlib.h>
#include <string.h>

void sqlq_logical_rel_free(sqlq_logical_rel *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncols; i++)
        free(r->names[i]);
    free(r->names);
    free(r->conv);
    free(r->key);
    free(r);
}

static const char *declared_type(const sqlq_table *t, const char *name)
{
    for (size_t i = 0; i < t->ncolumns; i++)
        if (strcmp(t->columns[i].name, name) == 0)
            return t->columns[i].type;
    return NULL;
}

static sqlq_result convert_columns(sqlq_logical_rel *r, const sqlq_pgo_msg *m, const sqlq_table *t,
                                   sqlq_db *db, sqlq_error *err)
{
    for (size_t i = 0; i < r->ncols; i++) {
        const sqlq_pgo_column *c = &m->u.relation.cols[i];
        if (!(r->names[i] = strdup(c->name)))
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        sqlq_pg_text_type ty = {.oid = c->type_oid, .typmod = c->typmod};
        if (c->type_oid >= SQLQ_PG_TEXT_FIRST_USER_OID && db) {
            sqlq_result rc = sqlq_pg_text_type_read(db, &ty, err);
            if (rc != SQLQ_OK)
                return rc;
        }
        sqlq_pg_text_column_init(&r->conv[i], &ty, declared_type(t, c->name));
    }
    return SQLQ_OK;
}

static sqlq_result map_key(sqlq_logical_rel *r, const sqlq_table *t, sqlq_error *err)
{
    for (size_t k = 0; k < t->nkey; k++) {
        const char *want = t->columns[t->key[k]].name;
        size_t i = 0;
        while (i < r->ncols && strcmp(r->names[i], want) != 0)
            i++;
        if (i == r->ncols)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "the replication stream's description of %s has no key "
                                  "column %s (dropped or renamed?)",
                                  t->name.name, want);
        r->key[k] = i;
    }
    r->nkey = t->nkey;
    return SQLQ_OK;
}

sqlq_result sqlq_logical_rel_make(const sqlq_pgo_msg *m, const sqlq_table *t, sqlq_db *db,
                                  sqlq_logical_rel **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_logical_rel *r = calloc(1, sizeof *r);
    size_t n = m->u.relation.ncols;
    if (r) {
        r->names = calloc(n ? n : 1, sizeof *r->names);
        r->conv = calloc(n ? n : 1, sizeof *r->conv);
        r->key = calloc(t->nkey ? t->nkey : 1, sizeof *r->key);
    }
    if (!r || !r->names || !r->conv || !r->key) {
        sqlq_logical_rel_free(r);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    r->relid = m->u.relation.relid;
    r->replident = m->u.relation.replident;
    r->ncols = n;
    sqlq_result rc = convert_columns(r, m, t, db, err);
    if (rc == SQLQ_OK)
        rc = map_key(r, t, err);
    if (rc != SQLQ_OK) {
        sqlq_logical_rel_free(r);
        return rc;
    }
    *out = r;
    return SQLQ_OK;
}

static json_t *value_of(const sqlq_logical_rel *r, size_t i, const sqlq_pgo_value *v)
{
    if (v->kind == 'n')
        return json_null();
    return sqlq_pg_text_value(&r->conv[i], v->data ? v->data : "", v->len);
}

json_t *sqlq_logical_rel_row(const sqlq_logical_rel *r, const sqlq_pgo_tuple *tuple,
                             const sqlq_pgo_tuple *fill, bool *out_missing)
{
    if (tuple->ncols != r->ncols)
        return NULL;
    json_t *o = json_object();
    for (size_t i = 0; o && i < r->ncols; i++) {
        const sqlq_pgo_value *v = &tuple->cols[i];
        if (v->kind == 'u') {
            const sqlq_pgo_value *f = fill && fill->ncols == r->ncols ? &fill->cols[i] : NULL;
            if (!f || f->kind == 'u') {
                *out_missing = true;
                continue;
            }
            v = f;
        }
        json_t *val = value_of(r, i, v);
        if (!val || json_object_set_new(o, r->names[i], val) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

json_t *sqlq_logical_rel_key(const sqlq_logical_rel *r, const sqlq_pgo_tuple *tuple)
{
    if (tuple->ncols != r->ncols)
        return NULL;
    json_t *o = json_object();
    for (size_t k = 0; o && k < r->nkey; k++) {
        size_t i = r->key[k];
        const sqlq_pgo_value *v = &tuple->cols[i];
        json_t *val = v->kind == 't' || v->kind == 'b' ? value_of(r, i, v) : NULL;
        if (!val || json_object_set_new(o, r->names[i], val) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

json_t *sqlq_logical_rel_changed(const sqlq_logical_rel *r, const sqlq_pgo_tuple *old_tuple,
                                 const sqlq_pgo_tuple *new_tuple)
{
    json_t *a = json_array();
    if (!a || old_tuple->ncols != r->ncols || new_tuple->ncols != r->ncols)
        return a;
    for (size_t i = 0; i < r->ncols; i++) {
        const sqlq_pgo_value *o = &old_tuple->cols[i], *n = &new_tuple->cols[i];
        if (n->kind == 'u')
            continue;
        bool same = o->kind == n->kind &&
                    (o->kind == 'n' || (o->len == n->len &&
                                           (o->len == 0 || memcmp(o->data, n->data, o->len) == 0)));
        if (!same)
            json_array_append_new(a, json_string(r->names[i]));
    }
    return a;
}

static sqlq_result add(sqlq_logical_txn *txn, sqlq_op op, json_t *key, json_t *row,
                       json_t *before, json_t *changed, bool fetch, sqlq_error *err)
{
    sqlq_logical_change c = {.op = op, .key = key, .row = row, .before = before,
                             .changed = changed, .fetch_row = fetch};
    if (!key || (op != SQLQ_OP_DELETE && !row && !fetch)) {
        sqlq_logical_change_free(&c);
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "a %s whose key or row could not be read (a key column null or "
                              "unchanged, or a column count other than the relation's)",
                              op == SQLQ_OP_DELETE ? "delete" : op == SQLQ_OP_INSERT ? "insert"
                                                                                       : "update");
    }
    sqlq_result rc = sqlq_logical_txn_add(txn, c);
    return rc == SQLQ_OK ? rc : sqlq_error_set(err, rc, true, "out of memory");
}

static sqlq_result update(sqlq_logical_txn *txn, const sqlq_logical_rel *rel, const sqlq_pgo_msg *m,
                          bool before_image, bool changed, sqlq_error *err)
{
    const sqlq_pgo_tuple *old = m->u.change.old_kind ? &m->u.change.old_tuple : NULL;
    bool full = m->u.change.old_kind == 'O';
    json_t *key = sqlq_logical_rel_key(rel, &m->u.change.new_tuple);
    json_t *old_key = old ? sqlq_logical_rel_key(rel, old) : NULL;
    bool missing = false;
    json_t *row = sqlq_logical_rel_row(rel, &m->u.change.new_tuple, full ? old : NULL, &missing);
    bool m2 = false;
    json_t *before = before_image && full ? sqlq_logical_rel_row(rel, old, NULL, &m2) : NULL;
    if (old_key && key && !json_equal(old_key, key)) { /* the key changed */
        sqlq_result rc = add(txn, SQLQ_OP_DELETE, old_key, NULL, json_incref(before), NULL,
                             false, err);
        if (rc != SQLQ_OK) {
            json_decref(key);
            json_decref(row);
            json_decref(before);
            return rc;
        }
        return add(txn, SQLQ_OP_INSERT, key, row, before, NULL, missing, err);
    }
    json_decref(old_key);
    json_t *ch = changed && full ? sqlq_logical_rel_changed(rel, old, &m->u.change.new_tuple) : NULL;
    return add(txn, SQLQ_OP_UPDATE, key, row, before, ch, missing, err);
}

sqlq_result sqlq_logical_rel_change(sqlq_logical_txn *txn, const sqlq_logical_rel *rel,
                                    const sqlq_pgo_msg *m, bool before_image, bool changed,
                                    sqlq_error *err)
{
    bool missing = false, m2 = false;
    switch (m->kind) {
    case SQLQ_PGO_INSERT:
        return add(txn, SQLQ_OP_INSERT, sqlq_logical_rel_key(rel, &m->u.change.new_tuple),
                   sqlq_logical_rel_row(rel, &m->u.change.new_tuple, NULL, &missing), NULL, NULL,
                   missing, err);
    case SQLQ_PGO_UPDATE:
        return update(txn, rel, m, before_image, changed, err);
    case SQLQ_PGO_DELETE:
        return add(txn, SQLQ_OP_DELETE, sqlq_logical_rel_key(rel, &m->u.change.old_tuple), NULL,
                   before_image && m->u.change.old_kind == 'O'
                       ? sqlq_logical_rel_row(rel, &m->u.change.old_tuple, NULL, &m2)
                       : NULL,
                   NULL, false, err);
    default:
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "not a change: %s",
                              sqlq_pgoutput_kind_name(m->kind));
    }
}
