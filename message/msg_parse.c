/* msg_parse: a message body read back into changes (see the header). */
#include "msg_parse.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static sqlq_result add(sqlq_msg_parsed *p, sqlq_msg_change c, sqlq_error *err)
{
    sqlq_msg_change *grown = realloc(p->items, (p->n + 1) * sizeof(*grown));
    if (!grown)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory reading a message");
    p->items = grown;
    p->items[p->n++] = c;
    return SQLQ_OK;
}

static sqlq_result read_version(json_t *o, sqlq_msg_change *c, sqlq_error *err)
{
    json_t *version = json_object_get(o, "version");
    if (!version)
        return SQLQ_OK;
    if (!json_is_integer(version))
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "\"version\" is not an integer: refusing a change whose order "
                              "cannot be checked");
    json_int_t v = json_integer_value(version);
    if (v > SQLQ_MSG_VERSION_MAX || v < -SQLQ_MSG_VERSION_MAX)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "version %" PRId64 " is implausible (beyond 2^53): refusing to "
                              "remember it, it would make every later change of this key look "
                              "older",
                              (int64_t)v);
    c->has_version = true;
    c->version = (int64_t)v;
    return SQLQ_OK;
}

/* The row of a change: a delete's only when it is an object (the bridge sends null); an
 * insert, update or read must carry an object unless it says it was truncated. */
static sqlq_result read_row(json_t *o, sqlq_msg_change *c, sqlq_error *err)
{
    json_t *row = json_object_get(o, "row");
    const char *op = sqlq_op_name(c->op);
    c->row = json_is_object(row) ? row : NULL;
    if (c->op == SQLQ_OP_DELETE || c->truncated || c->row)
        return SQLQ_OK;
    if (row)
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "%s: \"row\" is not a JSON object (it must map column names to "
                              "values)",
                              op);
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "%s without its row, and not marked truncated: only a change too large "
                          "for a message leaves its row out",
                          op);
}

/* One change of the row shape (alone, or an element of a batch). */
static sqlq_result row_change(sqlq_msg_parsed *p, json_t *o, sqlq_error *err)
{
    const char *op = json_string_value(json_object_get(o, "op"));
    sqlq_msg_change c = {.key = json_object_get(o, "key"),
                         .truncated = json_is_true(json_object_get(o, "truncated"))};
    if (!op)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "change without \"op\"");
    if (!sqlq_op_parse(op, &c.op))
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unknown op \"%.64s\"", op);
    if (!json_is_object(c.key))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "change without a \"key\" object");
    sqlq_result r = read_version(o, &c, err);
    if (r == SQLQ_OK)
        r = read_row(o, &c, err);
    return r == SQLQ_OK ? add(p, c, err) : r;
}

/* One element of the Functions shape: the key fields are in Item. */
static sqlq_result functions_change(sqlq_msg_parsed *p, json_t *o, sqlq_error *err)
{
    json_t *op = json_object_get(o, "Operation");
    json_t *item = json_object_get(o, "Item");
    if (!json_is_integer(op) || !json_is_object(item))
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "Functions-shape element without integer Operation and object Item");
    json_int_t opv = json_integer_value(op);
    if (opv < 0 || opv > 2)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unknown Operation %" PRId64, (int64_t)opv);
    sqlq_msg_change c = {.op = (sqlq_op)opv,
                         .row = item,
                         .truncated = json_is_true(json_object_get(o, "Truncated"))};
    return add(p, c, err);
}

static sqlq_result collect(sqlq_msg_parsed *p, json_t *root, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    size_t i;
    json_t *e;
    if (json_is_array(root)) {
        p->format = SQLQ_FORMAT_FUNCTIONS;
        json_array_foreach(root, i, e)
        {
            if (r == SQLQ_OK)
                r = functions_change(p, e, err);
        }
        return r;
    }
    json_t *batch = json_object_get(root, "changes");
    if (json_is_array(batch)) {
        p->format = SQLQ_FORMAT_BATCH;
        json_array_foreach(batch, i, e)
        {
            if (r == SQLQ_OK)
                r = json_is_object(e) ? row_change(p, e, err)
                                      : sqlq_error_set(err, SQLQ_E_PARSE, false,
                                                       "changes[%zu] is not an object", i);
        }
        return r;
    }
    if (json_is_object(root) && json_object_get(root, "op")) {
        p->format = SQLQ_FORMAT_ROW;
        return row_change(p, root, err);
    }
    return sqlq_error_set(err, SQLQ_E_PARSE, false,
                          "not a change message: expected {\"op\",\"key\",\"row\"}, "
                          "{\"changes\":[…]} or [{\"Operation\",\"Item\"}]");
}

sqlq_result sqlq_msg_parse(const char *body, size_t len, sqlq_msg_parsed *out, sqlq_error *err)
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
    sqlq_result r = collect(out, out->root, err);
    if (r != SQLQ_OK)
        sqlq_msg_parsed_free(out);
    return r;
}

void sqlq_msg_parsed_free(sqlq_msg_parsed *p)
{
    free(p->items);
    json_decref(p->root);
    memset(p, 0, sizeof(*p));
}
