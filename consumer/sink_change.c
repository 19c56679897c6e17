/* sink_change: parsing and checking a change message for the --sql sink (see the header). */
#include "sink_change.h"

#include <errno.h>
#include <inttypes.h>
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
    if (json_is_string(v) && integer_column(c)) {
        errno = 0;
        long long n = strtoll(json_string_value(v), NULL, 10);
        if (errno == 0)
            return json_integer((json_int_t)n);
    }
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
                                  "column %s of the message is not in table %s", name, p->shown);
        json_t *k = c->in_key ? sqlq_sink_key_value(p->t, key, c) : NULL;
        sqlq_error ignored;
        json_t *rv_canon = k ? canonical_value(p, c, v, &ignored) : NULL;
        bool differs = k && (!rv_canon || !json_equal(k, rv_canon));
        json_decref(rv_canon);
        if (differs) {
            char *kv = json_dumps(k, JSON_ENCODE_ANY | JSON_COMPACT);
            char *rv = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            sqlq_result r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                                           "row.%s (%.100s) disagrees with the message key "
                                           "(%.100s): refusing a change whose row names another "
                                           "key",
                                           name, rv ? rv : "?", kv ? kv : "?");
            free(kv);
            free(rv);
            return r;
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

static sqlq_result take_version(json_t *o, sqlq_sink_change *c, sqlq_error *err)
{
    json_t *version = json_object_get(o, "version");
    if (!version)
        return SQLQ_OK;
    if (!json_is_integer(version))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "\"version\" is not an integer: refusing a change whose order "
                              "cannot be checked");
    json_int_t v = json_integer_value(version);
    if (v > SQLQ_SINK_VERSION_MAX || v < -SQLQ_SINK_VERSION_MAX)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "version %" PRId64 " is implausible (beyond 2^53): refusing to "
                              "remember it, it would make every later change of this key look "
                              "older",
                              (int64_t)v);
    c->has_version = true;
    c->version = (int64_t)v;
    return SQLQ_OK;
}

static sqlq_result row_change_kind(const parse_ctx *p, json_t *o, const char *op,
                                   sqlq_sink_change *out, sqlq_error *err);

static sqlq_result row_change(const parse_ctx *p, json_t *o, sqlq_error *err)
{
    const char *op = json_string_value(json_object_get(o, "op"));
    if (!op)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "change without \"op\"");
    json_t *key = NULL;
    sqlq_result r = check_key(p, json_object_get(o, "key"), err);
    if (r == SQLQ_OK)
        r = canonical_key(p, json_object_get(o, "key"), &key, err);
    sqlq_sink_change c = {.key = key};
    if (r == SQLQ_OK)
        r = take_version(o, &c, err);
    if (r == SQLQ_OK)
        r = row_change_kind(p, o, op, &c, err);
    if (r == SQLQ_OK && !c.has_version)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "%s without a \"version\": every row and batch message carries one "
                           "(refused: its order cannot be checked)",
                           op);
    if (r != SQLQ_OK) {
        json_decref(key);
        return r;
    }
    return add_change(p->l, c) == SQLQ_OK
               ? SQLQ_OK
               : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

/* What the change does, and its row checked against the (canonical) key. */
static sqlq_result row_change_kind(const parse_ctx *p, json_t *o, const char *op,
                                   sqlq_sink_change *out, sqlq_error *err)
{
    sqlq_sink_change c = *out;
    json_t *key = c.key;
    sqlq_result r = SQLQ_OK;
    if (strcmp(op, "delete") == 0) {
        c.kind = SQLQ_SINK_DELETE;
        json_t *row = json_object_get(o, "row");
        if (json_is_object(row)) /* the bridge sends null; a row given must name this key */
            r = check_row(p, key, row, err);
        if (r != SQLQ_OK)
            return r;
    } else if (strcmp(op, "insert") == 0 || strcmp(op, "update") == 0 ||
               strcmp(op, "read") == 0) { /* read: a row sent by sqlq backfill */
        c.kind = SQLQ_SINK_UPSERT;
        c.row = json_object_get(o, "row");
        if (c.row && !json_is_object(c.row) && !json_is_true(json_object_get(o, "truncated")))
            return sqlq_error_set(err, SQLQ_E_PARSE, false,
                                  "%s: \"row\" is not a JSON object (it must map column names "
                                  "to values)",
                                  op);
        if (!json_is_object(c.row))
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "%s without its row (truncated: the row did not fit in a "
                                  "message); apply it by reading the source row, or raise the "
                                  "bridge's message size",
                                  op);
        r = check_row(p, key, c.row, err);
        if (r != SQLQ_OK)
            return r;
    } else {
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unknown op \"%s\"", op);
    }
    *out = c;
    return SQLQ_OK;
}

/* The Functions shape: the key is the item's primary-key fields. */
static sqlq_result functions_change(const parse_ctx *p, json_t *o, sqlq_error *err)
{
    json_t *op = json_object_get(o, "Operation");
    json_t *item = json_object_get(o, "Item");
    if (!json_is_integer(op) || !json_is_object(item))
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "Functions-shape element without integer Operation and object Item");
    json_int_t opv = json_integer_value(op);
    if (opv < 0 || opv > 2)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unknown Operation %" PRId64, (int64_t)opv);
    sqlq_sink_change c = {.kind = opv == 2 ? SQLQ_SINK_DELETE : SQLQ_SINK_UPSERT};
    c.key = json_object();
    for (size_t i = 0; c.key && i < p->t->nkey; i++) {
        const sqlq_column *col = &p->t->columns[p->t->key[i]];
        json_t *found = sqlq_sink_key_value(p->t, item, col);
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
        c.row = item;
        sqlq_result r = json_is_true(json_object_get(o, "Truncated"))
                            ? sqlq_error_set(err, SQLQ_E_INVALID, false,
                                             "truncated Item (key fields only): cannot upsert")
                            : check_row(p, c.key, item, err);
        if (r != SQLQ_OK) {
            json_decref(c.key);
            return r;
        }
    }
    return add_change(p->l, c) == SQLQ_OK
               ? SQLQ_OK
               : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static sqlq_result collect(const parse_ctx *p, json_t *root, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    size_t i;
    json_t *e;
    if (json_is_array(root)) {
        json_array_foreach(root, i, e)
        {
            if (r == SQLQ_OK)
                r = functions_change(p, e, err);
        }
        return r;
    }
    json_t *batch = json_object_get(root, "changes");
    if (json_is_array(batch)) {
        json_array_foreach(batch, i, e)
        {
            if (r == SQLQ_OK)
                r = json_is_object(e) ? row_change(p, e, err)
                                      : sqlq_error_set(err, SQLQ_E_PARSE, false,
                                                       "changes[%zu] is not an object", i);
        }
        return r;
    }
    if (json_is_object(root) && json_object_get(root, "op"))
        return row_change(p, root, err);
    return sqlq_error_set(err, SQLQ_E_PARSE, false,
                          "not a change message: expected {\"op\",\"key\",\"row\"}, "
                          "{\"changes\":[…]} or [{\"Operation\",\"Item\"}]");
}

sqlq_result sqlq_sink_changes_parse(const sqlq_table *t, const char *shown, const char *body,
                                    size_t len, sqlq_sink_changes *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t je;
    out->root = json_loadb(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!out->root) {
        if (strstr(je.text, "duplicate"))
            return sqlq_error_set(err, SQLQ_E_PARSE, false,
                                  "body has duplicate JSON fields (%s, line %d): refusing to "
                                  "guess which one is meant",
                                  je.text, je.line);
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "body is not JSON: %s (line %d)", je.text,
                              je.line);
    }
    parse_ctx p = {t, shown, out};
    sqlq_result r = collect(&p, out->root, err);
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
