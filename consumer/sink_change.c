/* sink_change: a change message, read by the message library (msg_parse.h), checked against the
 * --sql sink's table (see the header). */
#include "sink_change.h"

#include "json_int.h"
#include "msg_parse.h"

#include <errno.h>
#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

json_t *sqlq_sink_key_value(const sqlq_table *t, json_t *key, const sqlq_column *col)
{
    const char *name;
    json_t *v;
    json_object_foreach(key, name, v)
    {
        if (sqlq_table_column(t, name) == col)
            return v;
    }
    return NULL;
}

/* A defect of the message itself, which no change to the table can cure: the error becomes
 * SQLQ_E_REJECTED (poisoned at once), keeping its words. */
static sqlq_result defect(sqlq_error *err)
{
    if (err)
        err->code = SQLQ_E_REJECTED;
    return SQLQ_E_REJECTED;
}

typedef struct parse_ctx {
    const sqlq_table *t;
    const char *shown;
    sqlq_sink_changes *l;
} parse_ctx;

static void key_names(const sqlq_table *t, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < t->nkey && at < size; i++) {
        int n = snprintf(out + at, size - at, "%s%s", i ? ", " : "", t->columns[t->key[i]].name);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

static bool integer_column(const sqlq_column *c)
{
    return c->sql_type == SQL_TINYINT || c->sql_type == SQL_SMALLINT ||
           c->sql_type == SQL_INTEGER || c->sql_type == SQL_BIGINT;
}

static bool text_column(const sqlq_column *c)
{
    return c->sql_type == SQL_CHAR || c->sql_type == SQL_VARCHAR ||
           c->sql_type == SQL_LONGVARCHAR || c->sql_type == SQL_WCHAR ||
           c->sql_type == SQL_WVARCHAR || c->sql_type == SQL_WLONGVARCHAR;
}

/* Decimal digits as the bridge writes an integer too large for a JSON number (no sign but -,
 * no leading zero, no space). */
static bool integer_text(const char *s)
{
    if (*s == '-')
        s++;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1]))
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    return *s == '\0';
}

/* The one form of a key value the sink remembers versions under and binds: the database would
 * coerce "12", "12 " and 12 to one key, so a key spelled another way must not get a version
 * history of its own (it would let an old change overwrite a newer one). Integer columns take a
 * JSON integer or the bridge's digits for a value beyond 2^53 (an integer again when it fits
 * 64 bits); text columns take a string; no key value is null, an object or an array. NULL with
 * err set when v cannot be this column's key. */
static json_t *canonical_value(const parse_ctx *p, const sqlq_column *c, json_t *v,
                               sqlq_error *err)
{
    if (!v || json_is_null(v) || json_is_object(v) || json_is_array(v) ||
        (integer_column(c) && !json_is_integer(v) &&
         !(json_is_string(v) && integer_text(json_string_value(v)))) ||
        (text_column(c) && !json_is_string(v))) {
        char *shown = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        sqlq_error_set(err, SQLQ_E_INVALID, false,
                       "key column %s of %s is %s: the message gives %.100s, which the database "
                       "would read as another spelling of a key (refused: its version history "
                       "would be another key's)",
                       c->name, p->shown,
                       integer_column(c) ? "an integer column"
                       : text_column(c)  ? "a text column"
                                         : "part of the primary key",
                       shown ? shown : "nothing");
        free(shown);
        return NULL;
    }
    int64_t n = 0;
    if (json_is_string(v) && integer_column(c) && sqlq_json_int64(v, &n))
        return json_integer((json_int_t)n);
    return json_incref(v);
}

/* The message's key in its one canonical form (canonical_value), under the table's column
 * names: what the sink binds, and what the version guard hashes. */
static sqlq_result canonical_key(const parse_ctx *p, json_t *key, json_t **out, sqlq_error *err)
{
    *out = json_object();
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < p->t->nkey; i++) {
        const sqlq_column *c = &p->t->columns[p->t->key[i]];
        json_t *v = canonical_value(p, c, sqlq_sink_key_value(p->t, key, c), err);
        if (!v || json_object_set_new(*out, c->name, v) != 0) {
            json_decref(*out);
            *out = NULL;
            return v ? sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory") : err->code;
        }
    }
    return SQLQ_OK;
}

static sqlq_result check_key(const parse_ctx *p, json_t *key, sqlq_error *err)
{
    char want[300];
    key_names(p->t, want, sizeof(want));
    if (!json_is_object(key))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "change without a \"key\" object");
    const char *name;
    json_t *v;
    size_t matched = 0;
    json_object_foreach(key, name, v)
    {
        const sqlq_column *c = sqlq_table_column(p->t, name);
        if (!c || !c->in_key)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "message key column %s is not in the primary key of %s (%s)",
                                  name, p->shown, want);
        matched++;
    }
    if (matched != p->t->nkey)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "message key has %zu column(s) but the primary key of %s is (%s)",
                              matched, p->shown, want);
    return SQLQ_OK;
}

sqlq_result sqlq_sink_key_canonical(const sqlq_table *t, const char *shown, json_t *key,
                                    json_t **out, sqlq_error *err)
{
    *out = NULL;
    parse_ctx p;
    memset(&p, 0, sizeof(p));
    p.t = t;
    p.shown = shown;
    sqlq_result r = check_key(&p, key, err);
    return r == SQLQ_OK ? canonical_key(&p, key, out, err) : r;
}

/* Every column of the row exists, and the row's key columns hold the key's values (the sink
 * checks the version against the key: a row naming another key would overwrite another row). */
static sqlq_result check_row(const parse_ctx *p, json_t *key, json_t *row, sqlq_error *err)
{
    const char *name;
    json_t *v;
    json_object_foreach(row, name, v)
    {
        const sqlq_column *c = sqlq_table_column(p->t, name);
        if (!c)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "column %s of the message is not in table %s: the table lacks "
                                  "it (add it with ALTER TABLE and restart the consumer, which "
                                  "reads the table's columns at start; retried until then, then "
                                  "poisoned: requeue it after)",
                                  name, p->shown);
        json_t *k = c->in_key ? sqlq_sink_key_value(p->t, key, c) : NULL;
        sqlq_error ignored;
        json_t *rv_canon = k ? canonical_value(p, c, v, &ignored) : NULL;
        bool differs = k && (!rv_canon || !json_equal(k, rv_canon));
        json_decref(rv_canon);
        if (differs) {
            char *kv = json_dumps(k, JSON_ENCODE_ANY | JSON_COMPACT);
            char *rv = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "row.%s (%.100s) disagrees with the message key (%.100s): refusing a "
                           "change whose row names another key",
                           name, rv ? rv : "?", kv ? kv : "?");
            free(kv);
            free(rv);
            return defect(err);
        }
    }
    return SQLQ_OK;
}

static sqlq_result add_change(sqlq_sink_changes *l, sqlq_sink_change c)
{
    sqlq_sink_change *grown = realloc(l->items, (l->n + 1) * sizeof(*grown));
    if (!grown) {
        json_decref(c.key);
        return SQLQ_E_NOMEM;
    }
    l->items = grown;
    l->items[l->n++] = c;
    return SQLQ_OK;
}

/* A change of the row or batch shape: its key is the table's primary key, its row names that
 * key, an upsert has its row, and it carries a version to order by. */
static sqlq_result row_change(const parse_ctx *p, const sqlq_msg_change *m, sqlq_error *err)
{
    const char *op = sqlq_op_name(m->op);
    json_t *key = NULL;
    sqlq_result r = check_key(p, m->key, err);
    if (r == SQLQ_OK)
        r = canonical_key(p, m->key, &key, err);
    sqlq_sink_change c = {.key = key, .has_version = m->has_version, .version = m->version,
                          .read = m->op == SQLQ_OP_READ};
    c.kind = m->op == SQLQ_OP_DELETE ? SQLQ_SINK_DELETE : SQLQ_SINK_UPSERT;
    c.row = c.kind == SQLQ_SINK_UPSERT ? m->row : NULL;
    if (r == SQLQ_OK && c.kind == SQLQ_SINK_UPSERT && !c.row) {
        sqlq_error_set(err, SQLQ_E_INVALID, false,
                       "%s without its row (truncated: the row is larger than one queue "
                       "message can carry, 65,536 bytes after base64, the queue service's own "
                       "limit; --format batch does not help): the sink cannot apply it. Send "
                       "fewer columns (the bridge's --columns or --exclude-columns), or consume "
                       "with a handler that does a read-back of the row from the source by its "
                       "key",
                       op);
        r = defect(err);
    }
    if (r == SQLQ_OK && m->row) /* a delete's row, when given, must name this key too */
        r = check_row(p, key, m->row, err);
    if (r == SQLQ_OK && !c.has_version) {
        sqlq_error_set(err, SQLQ_E_INVALID, false,
                       "%s without a \"version\": every row and batch message carries one "
                       "(refused: its order cannot be checked)",
                       op);
        r = defect(err);
    }
    if (r != SQLQ_OK) {
        json_decref(key);
        return r;
    }
    return add_change(p->l, c) == SQLQ_OK
               ? SQLQ_OK
               : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

/* The Functions shape: the key is the item's primary-key fields. */
static sqlq_result functions_change(const parse_ctx *p, const sqlq_msg_change *m,
                                    sqlq_error *err)
{
    sqlq_sink_change c = {.kind = m->op == SQLQ_OP_DELETE ? SQLQ_SINK_DELETE : SQLQ_SINK_UPSERT};
    c.key = json_object();
    for (size_t i = 0; c.key && i < p->t->nkey; i++) {
        const sqlq_column *col = &p->t->columns[p->t->key[i]];
        json_t *found = sqlq_sink_key_value(p->t, m->row, col);
        if (!found) {
            json_decref(c.key);
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "Item lacks primary-key column %s of %s", col->name, p->shown);
        }
        json_t *v = canonical_value(p, col, found, err);
        if (!v) {
            json_decref(c.key);
            return err->code;
        }
        json_object_set_new(c.key, col->name, v);
    }
    if (!c.key)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (c.kind == SQLQ_SINK_UPSERT) {
        c.row = m->row;
        sqlq_result r = SQLQ_OK;
        if (m->truncated) {
            sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "truncated Item (key fields only): cannot upsert");
            r = defect(err);
        } else {
            r = check_row(p, c.key, m->row, err);
        }
        if (r != SQLQ_OK) {
            json_decref(c.key);
            return r;
        }
    }
    return add_change(p->l, c) == SQLQ_OK
               ? SQLQ_OK
               : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

sqlq_result sqlq_sink_changes_parse(const sqlq_table *t, const char *shown, const char *body,
                                    size_t len, sqlq_sink_changes *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    sqlq_msg_parsed m;
    sqlq_result r = sqlq_msg_parse(body, len, &m, err);
    if (r == SQLQ_E_PARSE || r == SQLQ_E_INVALID)
        return defect(err); /* not a change message: not JSON, no key, … */
    if (r != SQLQ_OK)
        return r;
    parse_ctx p = {t, shown, out};
    for (size_t i = 0; r == SQLQ_OK && i < m.n; i++)
        r = m.format == SQLQ_FORMAT_FUNCTIONS ? functions_change(&p, &m.items[i], err)
                                              : row_change(&p, &m.items[i], err);
    out->root = m.root; /* the rows borrowed above live in it */
    m.root = NULL;
    sqlq_msg_parsed_free(&m);
    if (r != SQLQ_OK)
        sqlq_sink_changes_free(out);
    return r;
}

void sqlq_sink_changes_free(sqlq_sink_changes *l)
{
    for (size_t i = 0; i < l->n; i++)
        json_decref(l->items[i].key);
    free(l->items);
    json_decref(l->root);
    memset(l, 0, sizeof(*l));
}
