/* table_key: a table's key: its primary key or a unique index named with --key-columns (see
 * the header). The dialect's unique_keys_sql lists the unique indexes: per column of each, in
 * index order: index_name, seq (1-based), column_name (NULL for an expression), nulls_equal
 * and usable (0: partial, invalid or deferrable). */
#include "table_key.h"

#include "buf.h"
#include "capture_stop.h"
#include "json_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_MAX 32
#define INDEXES_MAX 64

typedef struct unique_index {
    char name[256];
    size_t col[KEY_MAX]; /* indexes into the table's columns */
    size_t n;
    bool usable;      /* not partial, not on an expression, valid, immediate */
    bool nulls_equal; /* PostgreSQL 15 NULLS NOT DISTINCT */
    bool nullable;    /* a column may be NULL */
} unique_index;

typedef struct unique_list {
    unique_index ix[INDEXES_MAX];
    size_t n;
} unique_list;

/* Append to out[*at] without overflowing: text is cut, out stays terminated. */
static void add(char *out, size_t size, size_t *at, const char *text)
{
    int n = snprintf(out + *at, size - *at, "%s", text);
    if (n > 0)
        *at += (size_t)n < size - *at ? (size_t)n : size - *at - 1;
}

/* The table's name as messages show it (schema.name). */
typedef struct shown_name {
    char text[600];
} shown_name;

static shown_name shown(const sqlq_table *t)
{
    shown_name n;
    sqlq_table_name_format(&t->name, n.text, sizeof(n.text));
    return n;
}

static unique_index *index_named(unique_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->ix[i].name, name) == 0)
            return &l->ix[i];
    if (l->n == INDEXES_MAX)
        return NULL;
    unique_index *x = &l->ix[l->n++];
    memset(x, 0, sizeof(*x));
    snprintf(x->name, sizeof(x->name), "%s", name);
    x->usable = true;
    return x;
}

static long long int_of(json_t *row, const char *key)
{
    json_t *v = json_object_get(row, key);
    int64_t n = 0;
    if (json_is_true(v))
        return 1;
    return sqlq_json_int64(v, &n) ? (long long)n : 0;
}

/* One catalog row: a column of a unique index. */
static void add_row(const sqlq_table *t, unique_list *l, json_t *row)
{
    const char *name = json_string_value(json_object_get(row, "index_name"));
    unique_index *x = name ? index_named(l, name) : NULL;
    if (!x)
        return;
    const char *col = json_string_value(json_object_get(row, "column_name"));
    const sqlq_column *c = col ? sqlq_table_column(t, col) : NULL;
    x->usable = x->usable && c && int_of(row, "usable") != 0 && x->n < KEY_MAX;
    x->nulls_equal = x->nulls_equal || int_of(row, "nulls_equal") != 0;
    if (c && x->n < KEY_MAX) {
        x->col[x->n++] = (size_t)(c - t->columns);
        x->nullable = x->nullable || c->nullable;
    }
}

static sqlq_result list_unique(sqlq_db *db, const sqlq_table *t, unique_list *out, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    out->n = 0;
    if (!d->unique_keys_sql)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "table %s: a key other than the primary key (--key-columns) is not "
                              "supported on %s: %s",
                              shown(t).text, d->title,
                              d->primary_key_only_why ? d->primary_key_only_why
                                                      : "sqlq cannot list its unique indexes");
    sqlq_buf quoted;
    sqlq_buf_init(&quoted, 4096);
    sqlq_param p[3];
    size_t np = 0;
    sqlq_result r = SQLQ_OK;
    if (!d->schemas) { /* SQLite: pragma_index_list(name, schema), pragma_index_info(…, schema) */
        const char *schema = t->name.schema[0] ? t->name.schema : "main";
        p[0] = sqlq_param_text(t->name.name);
        p[1] = sqlq_param_text(schema);
        p[2] = sqlq_param_text(schema);
        np = 3;
    } else {
        r = sqlq_table_describe_params(d, &t->name, &quoted, p, &np);
    }
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, d->unique_keys_sql, p, np, &rows, err);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        add_row(t, out, row);
    }
    json_decref(rows);
    sqlq_buf_free(&quoted);
    return r;
}

/* "idx (a, b), other (c; may be NULL)" or "none", for messages. */
static void describe_list(const sqlq_table *t, const unique_list *l, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < l->n; i++) {
        const unique_index *x = &l->ix[i];
        add(out, size, &at, i ? ", " : "");
        add(out, size, &at, x->name);
        add(out, size, &at, " (");
        for (size_t k = 0; k < x->n; k++) {
            add(out, size, &at, k ? ", " : "");
            add(out, size, &at, t->columns[x->col[k]].name);
        }
        if (!x->usable)
            add(out, size, &at,
                x->n ? "; partial, on an expression or deferrable" : "an expression");
        else if (x->nullable)
            add(out, size, &at, "; a column may be NULL");
        add(out, size, &at, ")");
    }
    if (at == 0)
        add(out, size, &at, "none");
}

/* The columns named in text, as indexes into t's columns; SQLQ_E_INVALID naming a bad one. */
static sqlq_result parse_names(const sqlq_table *t, const char *text, size_t *cols, size_t *n,
                               sqlq_error *err)
{
    *n = 0;
    for (const char *p = text; *p;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *e = end;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(e - p < 255 ? e - p : 255), p);
        const sqlq_column *c = name[0] ? sqlq_table_column(t, name) : NULL;
        if (!c || *n == KEY_MAX)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "key key_columns: '%s' is not allowed (comma-separated columns "
                                  "of table %s, at most %d%s%s)",
                                  text, shown(t).text, KEY_MAX, name[0] ? "; no column " : "",
                                  name);
        for (size_t k = 0; k < *n; k++)
            if (cols[k] == (size_t)(c - t->columns))
                return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                      "key key_columns: '%s' is not allowed (column %s twice)",
                                      text, c->name);
        cols[(*n)++] = (size_t)(c - t->columns);
        p = comma ? comma + 1 : end;
    }
    if (*n == 0)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "key key_columns: '%s' is not allowed (names of columns of table %s)",
                              text, shown(t).text);
    return SQLQ_OK;
}

/* Whether a and b hold the same column indexes, in any order. */
static bool same_set(const size_t *a, size_t na, const size_t *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = a[i] == b[j];
        if (!found)
            return false;
    }
    return true;
}

/* Make x t's key, in the index's column order, or in order[] (the same columns) when given. */
static sqlq_result adopt(sqlq_table *t, const unique_index *x, const size_t *order,
                         sqlq_error *err)
{
    char *name = strdup(x->name);
    if (!name)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < t->ncolumns; i++) {
        t->columns[i].in_key = false;
        t->columns[i].key_pos = 0;
    }
    for (size_t k = 0; k < x->n; k++) { /* t->key has room for every column */
        size_t col = order ? order[k] : x->col[k];
        t->key[k] = col;
        t->columns[col].in_key = true;
        t->columns[col].key_pos = (int)k + 1;
    }
    t->nkey = x->n;
    free(t->key_index);
    t->key_index = name;
    return SQLQ_OK;
}

static sqlq_result refuse_nullable(const sqlq_table *t, const unique_index *x, const char *text,
                                   sqlq_error *err)
{
    const char *col = "";
    for (size_t k = 0; k < x->n; k++)
        if (t->columns[x->col[k]].nullable)
            col = t->columns[x->col[k]].name;
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "key key_columns: '%s' of table %s: column %s of unique index %s may be "
                          "NULL%s; sqlq needs NOT NULL key columns (its change log stores keys NOT "
                          "NULL and matches them with =, under which NULL matches nothing): "
                          "ALTER the column to NOT NULL, or name other columns",
                          text, shown(t).text, col, x->name,
                          x->nulls_equal ? " (NULLS NOT DISTINCT does not help: see "
                                           "docs/capture.md)"
                                         : "");
}

/* Key t by the columns cols[n] (key_columns: how they were named, for messages), in the
 * index's order, or in the order named when keep_order (a change log's key: an index made
 * again over the same columns in another order keeps the log's key). */
static sqlq_result use_columns(sqlq_db *db, sqlq_table *t, const size_t *cols, size_t n,
                               const char *key_columns, bool keep_order, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    if (!t->key_index && same_set(cols, n, t->key, t->nkey))
        return SQLQ_OK; /* the primary key itself */
    unique_list *l = calloc(1, sizeof(*l));
    if (!l)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    r = list_unique(db, t, l, err);
    const unique_index *fit = NULL, *nullable = NULL;
    for (size_t i = 0; r == SQLQ_OK && i < l->n; i++) {
        const unique_index *x = &l->ix[i];
        if (!x->usable || !same_set(cols, n, x->col, x->n))
            continue;
        if (x->nullable)
            nullable = x;
        else if (!fit || memcmp(x->col, cols, n * sizeof(cols[0])) == 0)
            fit = x; /* one in the order named (a change log's) before another order */
    }
    if (r == SQLQ_OK && fit) {
        r = adopt(t, fit, keep_order ? cols : NULL, err);
    } else if (r == SQLQ_OK && nullable) {
        r = refuse_nullable(t, nullable, key_columns, err);
    } else if (r == SQLQ_OK) {
        char have[1200];
        describe_list(t, l, have, sizeof(have));
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "key key_columns: '%s' of table %s: no unique index or constraint is "
                           "on exactly these columns (its unique indexes: %s)",
                           key_columns, shown(t).text, have);
    }
    free(l);
    return r;
}

sqlq_result sqlq_table_key_use(sqlq_db *db, sqlq_table *t, const char *key_columns, sqlq_error *err)
{
    size_t cols[KEY_MAX], n = 0;
    bool fresh = err && err->code == SQLQ_OK;
    sqlq_result r = parse_names(t, key_columns, cols, &n, err);
    r = r == SQLQ_OK ? use_columns(db, t, cols, n, key_columns, false, err) : r;
    if (r == SQLQ_E_INVALID && fresh) /* the columns given are refused: a configuration error */
        sqlq_error_reason(err, SQLQ_STOP_KEY_REFUSED);
    return r;
}

/* other's key columns as columns of t (by exact name, else sqlq_table_column's match). */
static bool map_key(const sqlq_table *t, const sqlq_table *other, size_t *cols, size_t *n,
                    const char **missing)
{
    *n = 0;
    *missing = NULL;
    for (size_t k = 0; k < other->nkey && k < KEY_MAX; k++) {
        const char *name = other->columns[other->key[k]].name;
        const sqlq_column *c = sqlq_table_column(t, name);
        if (!c) {
            *missing = name;
            return false;
        }
        cols[(*n)++] = (size_t)(c - t->columns);
    }
    return other->nkey > 0 && other->nkey <= KEY_MAX;
}

sqlq_result sqlq_table_key_use_like(sqlq_db *db, sqlq_table *t, const sqlq_table *other,
                                    sqlq_error *err)
{
    size_t cols[KEY_MAX], n = 0;
    const char *missing = NULL;
    char names[2048];
    sqlq_table_key_names(other, names, sizeof(names));
    if (!map_key(t, other, cols, &n, &missing))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "key key_columns: '%s' of table %s: %s%s",
                              names, shown(t).text, missing ? "no column " : "no key columns",
                              missing ? missing : "");
    return use_columns(db, t, cols, n, names, true, err);
}

bool sqlq_table_key_same(const sqlq_table *t, const sqlq_table *other)
{
    size_t cols[KEY_MAX], n = 0;
    const char *missing = NULL;
    return map_key(t, other, cols, &n, &missing) && same_set(cols, n, t->key, t->nkey);
}

sqlq_result sqlq_table_key_require(sqlq_db *db, const sqlq_table *t, sqlq_error *err)
{
    if (t->nkey > 0)
        return SQLQ_OK;
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (!d->unique_keys_sql && d->primary_key_only_why)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "table %s has no primary key; sqlq needs one to identify rows on "
                              "%s (%s; --key-columns cannot stand in for it)",
                              shown(t).text, d->title, d->primary_key_only_why);
    if (!d->unique_keys_sql)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "table %s has no primary key; sqlq needs one to identify rows on %s",
                              shown(t).text, d->title);
    char have[1200] = "unknown";
    unique_list *l = calloc(1, sizeof(*l));
    sqlq_error ignored;
    sqlq_error_clear(&ignored);
    if (l && list_unique(db, t, l, &ignored) == SQLQ_OK)
        describe_list(t, l, have, sizeof(have));
    free(l);
    return sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "table %s has no primary key; sqlq needs one to identify rows, or name "
                          "the columns of a unique index of NOT NULL columns with --key-columns "
                          "(its unique indexes: %s)",
                          shown(t).text, have);
}

sqlq_result sqlq_table_key_use_sole_unique(sqlq_db *db, sqlq_table *t, sqlq_error *err)
{
    if (t->nkey > 0)
        return SQLQ_OK;
    if (!sqlq_db_dialect(db)->unique_keys_sql)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "table %s has no primary key to upsert by (on %s sqlq does not "
                              "read unique indexes)",
                              shown(t).text, sqlq_db_dialect(db)->title);
    unique_list *l = calloc(1, sizeof(*l));
    if (!l)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_result r = list_unique(db, t, l, err);
    const unique_index *fit = NULL;
    size_t nfit = 0;
    for (size_t i = 0; r == SQLQ_OK && i < l->n; i++)
        if (l->ix[i].usable && !l->ix[i].nullable && nfit++ == 0)
            fit = &l->ix[i];
    if (r == SQLQ_OK && nfit == 1) {
        r = adopt(t, fit, NULL, err);
    } else if (r == SQLQ_OK) {
        char have[1200];
        describe_list(t, l, have, sizeof(have));
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "table %s has no primary key and %s unique index of NOT NULL columns "
                           "to upsert by (its unique indexes: %s)",
                           shown(t).text, nfit ? "more than one" : "no", have);
    }
    free(l);
    return r;
}

sqlq_result sqlq_table_key_describe(sqlq_db *db, const sqlq_table_name *name,
                                    const char *key_columns, sqlq_table **out, sqlq_error *err)
{
    if (!key_columns || !*key_columns)
        return sqlq_table_describe(db, name, out, err);
    sqlq_result r = sqlq_table_describe_any(db, name, out, err);
    if (r == SQLQ_OK)
        r = sqlq_table_key_use(db, *out, key_columns, err);
    if (r != SQLQ_OK) {
        sqlq_table_free(*out);
        *out = NULL;
    }
    return r;
}

sqlq_result sqlq_table_key_describe_again(sqlq_db *db, const sqlq_table *was, sqlq_table **out,
                                          sqlq_error *err)
{
    if (!was->key_index)
        return sqlq_table_describe(db, &was->name, out, err);
    sqlq_result r = sqlq_table_describe_any(db, &was->name, out, err);
    if (r == SQLQ_OK)
        r = sqlq_table_key_use_like(db, *out, was, err);
    if (r != SQLQ_OK) {
        sqlq_table_free(*out);
        *out = NULL;
    }
    return r;
}

void sqlq_table_key_names(const sqlq_table *t, char *out, size_t size)
{
    size_t at = 0;
    if (size == 0)
        return;
    out[0] = '\0';
    for (size_t k = 0; t && k < t->nkey; k++) {
        add(out, size, &at, k ? "," : "");
        add(out, size, &at, t->columns[t->key[k]].name);
    }
}

bool sqlq_table_key_is(const sqlq_table *t, const char *names)
{
    size_t cols[KEY_MAX], n = 0;
    sqlq_error ignored;
    sqlq_error_clear(&ignored);
    return parse_names(t, names, cols, &n, &ignored) == SQLQ_OK &&
           same_set(cols, n, t->key, t->nkey);
}
