/* route_filter: which changes and columns one route publishes (route_filter.h). */
#include "route_filter.h"

#include <stdlib.h>
#include <string.h>

#define ALL_OPS ((1u << SQLQ_OP_INSERT) | (1u << SQLQ_OP_UPDATE) | (1u << SQLQ_OP_DELETE))

/* Split "a, b,c" into trimmed names; empty names are refused. */
static sqlq_result split_names(const char *key, const char *text, char **out, size_t *n,
                               sqlq_error *err)
{
    *n = 0;
    for (const char *p = text; *p;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *b = p, *e = end;
        while (b < e && (*b == ' ' || *b == '\t'))
            b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (b == e)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "key %s: '%s' is not allowed (comma-separated names, none empty)",
                                  key, text);
        if (*n == SQLQ_ROUTE_FILTER_MAX_COLUMNS)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "key %s: '%s' is not allowed (at most %d names)", key, text,
                                  SQLQ_ROUTE_FILTER_MAX_COLUMNS);
        out[*n] = strndup(b, (size_t)(e - b));
        if (!out[*n])
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        (*n)++;
        p = comma ? comma + 1 : end;
    }
    return SQLQ_OK;
}

static sqlq_result parse_ops(const char *ops, unsigned *out, sqlq_error *err)
{
    char *names[SQLQ_ROUTE_FILTER_MAX_COLUMNS];
    size_t n = 0;
    sqlq_result r = split_names("ops", ops, names, &n, err);
    *out = 0;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        sqlq_op op;
        if (!sqlq_op_parse(names[i], &op) || op == SQLQ_OP_READ)
            r = sqlq_error_set(
                err, SQLQ_E_INVALID, false,
                "key ops: '%s' is not allowed (a comma-separated subset of insert,update,delete)",
                names[i]);
        else
            *out |= 1u << op;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    return r;
}

sqlq_result sqlq_route_filter_parse(const char *columns, const char *exclude_columns,
                                    const char *ops, sqlq_route_filter *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    out->ops = ALL_OPS;
    bool has_cols = columns && *columns, has_excl = exclude_columns && *exclude_columns;
    if (has_cols && has_excl)
        return sqlq_error_set(
            err, SQLQ_E_INVALID, false,
            "keys columns and exclude_columns: only one of them may be set (columns "
            "'%s', exclude_columns '%s')",
            columns, exclude_columns);
    sqlq_result r = SQLQ_OK;
    if (ops && *ops)
        r = parse_ops(ops, &out->ops, err);
    out->exclude = has_excl;
    if (r == SQLQ_OK && (has_cols || has_excl))
        r = split_names(has_cols ? "columns" : "exclude_columns",
                        has_cols ? columns : exclude_columns, out->columns, &out->ncolumns, err);
    if (r != SQLQ_OK)
        sqlq_route_filter_free(out);
    return r;
}

void sqlq_route_filter_free(sqlq_route_filter *f)
{
    for (size_t i = 0; i < f->ncolumns; i++)
        free(f->columns[i]);
    f->ncolumns = 0;
}

bool sqlq_route_filter_publishes(const sqlq_route_filter *f, sqlq_op op)
{
    return op == SQLQ_OP_READ || (f->ops & (1u << op)) != 0;
}

bool sqlq_route_filter_decide(const sqlq_route_filter *f, sqlq_op op, bool unmatched,
                              sqlq_op *out_op)
{
    *out_op = op;
    if (unmatched && op == SQLQ_OP_INSERT)
        return false;
    if (unmatched && op == SQLQ_OP_UPDATE)
        *out_op = SQLQ_OP_DELETE;
    return sqlq_route_filter_publishes(f, *out_op);
}

static bool named(const sqlq_route_filter *f, const char *column)
{
    for (size_t i = 0; i < f->ncolumns; i++)
        if (strcmp(f->columns[i], column) == 0)
            return true;
    return false;
}

json_t *sqlq_route_filter_row(const sqlq_route_filter *f, json_t *row, const json_t *key)
{
    if (!row || f->ncolumns == 0)
        return json_incref(row);
    json_t *out = json_object();
    const char *column;
    json_t *v;
    json_object_foreach(row, column, v)
    {
        bool keep = json_object_get(key, column) || named(f, column) != f->exclude;
        if (keep && out && json_object_set(out, column, v) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

json_t *sqlq_route_filter_names(const sqlq_route_filter *f, json_t *names, const json_t *key)
{
    if (!names || f->ncolumns == 0)
        return json_incref(names);
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        const char *column = json_string_value(v);
        bool keep = column && (json_object_get(key, column) || named(f, column) != f->exclude);
        if (keep && out && json_array_append(out, v) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

const char *sqlq_route_filter_unknown(const sqlq_route_filter *f, const char *const *columns,
                                      size_t n)
{
    for (size_t i = 0; i < f->ncolumns; i++) {
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = strcmp(f->columns[i], columns[j]) == 0;
        if (!found)
            return f->columns[i];
    }
    return NULL;
}
