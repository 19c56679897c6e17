/* logical_rel: a pgoutput Relation message made ready to turn the table's tuples into the
 * key, row and before objects of a change, as the trigger source builds them. */
#include "logical_rel.h"

#include "json_text.h"

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
        if (r->conv[i].by_key && v->kind != 'n') { /* its text is not the value (type lo) */
            *out_missing = true;
            continue;
        }
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

static sqlq_result add(sqlq_logical_txn *txn, const sqlq_logical_rel *rel, json_t *key,
                       sqlq_op op, sqlq_logical_part part, const char *raw, size_t raw_len,
                       json_t *changed, sqlq_error *err)
{
    char *canon = key ? sqlq_json_text(key, true, NULL) : NULL;
    json_decref(key);
    if (!canon) {
        json_decref(changed);
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "a %s whose key could not be read (a key column null or "
                              "unchanged, or a column count other than the relation's)",
                              op == SQLQ_OP_DELETE   ? "delete"
                              : op == SQLQ_OP_INSERT ? "insert"
                                                     : "update");
    }
    sqlq_result rc = sqlq_logical_txn_add(txn, raw, raw_len, canon, op, part, rel, changed);
    free(canon);
    return rc == SQLQ_OK ? rc
                         : sqlq_error_set(err, rc, true, rc == SQLQ_E_IO
                                                             ? "cannot write the transaction's "
                                                               "temporary file"
                                                             : "out of memory");
}

sqlq_result sqlq_logical_rel_add(sqlq_logical_txn *txn, const sqlq_logical_rel *rel,
                                 const sqlq_pgo_msg *m, const char *raw, size_t raw_len,
                                 bool changed, sqlq_error *err)
{
    const sqlq_pgo_tuple *nt = &m->u.change.new_tuple, *ot = &m->u.change.old_tuple;
    switch (m->kind) {
    case SQLQ_PGO_INSERT:
        return add(txn, rel, sqlq_logical_rel_key(rel, nt), SQLQ_OP_INSERT, SQLQ_LOGICAL_WHOLE,
                   raw, raw_len, NULL, err);
    case SQLQ_PGO_DELETE:
        return add(txn, rel, sqlq_logical_rel_key(rel, ot), SQLQ_OP_DELETE, SQLQ_LOGICAL_WHOLE,
                   raw, raw_len, NULL, err);
    case SQLQ_PGO_UPDATE: {
        json_t *key = sqlq_logical_rel_key(rel, nt);
        json_t *old_key = m->u.change.old_kind ? sqlq_logical_rel_key(rel, ot) : NULL;
        if (old_key && key && !json_equal(old_key, key)) { /* the key changed */
            sqlq_result rc = add(txn, rel, old_key, SQLQ_OP_DELETE, SQLQ_LOGICAL_OLD_KEY_DELETE,
                                 raw, raw_len, NULL, err);
            if (rc != SQLQ_OK) {
                json_decref(key);
                return rc;
            }
            return add(txn, rel, key, SQLQ_OP_INSERT, SQLQ_LOGICAL_NEW_KEY_INSERT, raw, raw_len,
                       NULL, err);
        }
        json_decref(old_key);
        json_t *ch = changed && m->u.change.old_kind == 'O'
                         ? sqlq_logical_rel_changed(rel, ot, nt)
                         : NULL;
        return add(txn, rel, key, SQLQ_OP_UPDATE, SQLQ_LOGICAL_WHOLE, raw, raw_len, ch, err);
    }
    default:
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "not a change: %s",
                              sqlq_pgoutput_kind_name(m->kind));
    }
}

sqlq_result sqlq_logical_rel_build(const sqlq_logical_rel *rel, const sqlq_pgo_msg *m,
                                   sqlq_logical_entry *e, bool before_image,
                                   sqlq_logical_change *out, sqlq_error *err)
{
    memset(out, 0, sizeof *out);
    const sqlq_pgo_tuple *nt = &m->u.change.new_tuple, *ot = &m->u.change.old_tuple;
    bool full = m->u.change.old_kind == 'O', missing = false, unused = false;
    bool gone = m->kind == SQLQ_PGO_DELETE || e->part == SQLQ_LOGICAL_OLD_KEY_DELETE;
    out->op = e->op;
    out->key = sqlq_logical_rel_key(rel, gone ? ot : nt);
    if (e->op != SQLQ_OP_DELETE && !gone)
        out->row = sqlq_logical_rel_row(rel, nt, full ? ot : NULL, &missing);
    else if (e->op != SQLQ_OP_DELETE)
        missing = true; /* a delete collapsed with a later insert of the key: read the row */
    out->fetch_row = missing;
    if (before_image && full)
        out->before = sqlq_logical_rel_row(rel, ot, NULL, &unused);
    out->changed = e->changed;
    e->changed = NULL;
    if (!out->key || (e->op != SQLQ_OP_DELETE && !out->row && !missing)) {
        sqlq_logical_change_free(out);
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "a change of %zu columns the relation (%zu columns) cannot read",
                              (size_t)(gone ? ot->ncols : nt->ncols), rel->ncols);
    }
    return SQLQ_OK;
}
