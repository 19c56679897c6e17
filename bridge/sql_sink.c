#include "sql_sink.h"

#include "buf.h"
#include "codec.h"
#include "db.h"
#include "dialect.h"
#include "log.h"
#include "sink_param.h"
#include "table.h"
#include "upsert.h"
#include "version_guard.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sqlq_sql_sink {
    char *conn;
    sqlq_table_name name;
    char shown[600]; /* the table as the user wrote it, for messages */
    sqlq_table *table;
    sqlq_dialect_kind dialect;
    bool guard;                 /* skip changes not newer than the last applied (version) */
    sqlq_table_name versions;   /* the guard's state table */
    char target[600];           /* the target as stored in the state table */
    pthread_mutex_t write_lock; /* SQLite: one writer at a time */
};

typedef struct sink_worker {
    sqlq_sql_sink *s;
    sqlq_db *db;
    bool broken; /* the connection failed: reconnect before the next message */
} sink_worker;

typedef enum { CHANGE_UPSERT, CHANGE_DELETE } change_kind;

typedef struct change {
    change_kind kind;
    json_t *key; /* borrowed or owned (functions shape), see owned_key */
    json_t *row; /* borrowed; NULL for a delete */
    bool owned_key;
    bool has_version; /* row and batch formats carry one; the Functions shape does not */
    int64_t version;
} change;

typedef struct change_list {
    change *items;
    size_t n;
} change_list;

/* ---- create / destroy ---- */

sqlq_result sqlq_sql_sink_create(const char *conn, const char *table, const char *version_table,
                                 sqlq_sql_sink **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_sql_sink *s = calloc(1, sizeof(*s));
    if (!s || !(s->conn = strdup(conn ? conn : ""))) {
        free(s);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    pthread_mutex_init(&s->write_lock, NULL);
    snprintf(s->shown, sizeof(s->shown), "%s", table ? table : "");
    sqlq_result r = sqlq_table_name_parse(table ? table : "", &s->name, err);
    sqlq_db *db = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_connect(conn, &db, err);
    if (r == SQLQ_OK) {
        s->dialect = sqlq_db_dialect(db);
        r = sqlq_table_describe(db, &s->name, &s->table, err);
        if (r == SQLQ_E_NOT_FOUND) {
            sqlq_error_clear(err);
            r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                               "--table %s: the table does not exist in the target database "
                               "(create it first: the sink never creates tables)",
                               s->shown);
        }
    }
    if (r == SQLQ_OK && version_table && *version_table) {
        s->guard = true;
        sqlq_table_name_format(&s->name, s->target, sizeof(s->target));
        r = sqlq_table_name_parse(version_table, &s->versions, err);
        if (r == SQLQ_OK)
            r = sqlq_version_guard_install(db, &s->versions, err);
    }
    sqlq_db_close(db);
    if (r != SQLQ_OK) {
        sqlq_sql_sink_destroy(s);
        return r;
    }
    *out = s;
    return SQLQ_OK;
}

void sqlq_sql_sink_destroy(sqlq_sql_sink *s)
{
    if (!s)
        return;
    sqlq_table_free(s->table);
    pthread_mutex_destroy(&s->write_lock);
    free(s->conn);
    free(s);
}

/* ---- columns and keys ---- */

/* Exact name first, then a unique case-insensitive match (SQL Server "CustomerId" onto a
 * PostgreSQL "customerid"). */
static const sqlq_column *find_column(const sqlq_table *t, const char *name)
{
    const sqlq_column *c = sqlq_table_column(t, name);
    if (c)
        return c;
    const sqlq_column *found = NULL;
    for (size_t i = 0; i < t->ncolumns; i++) {
        if (strcasecmp(t->columns[i].name, name) == 0) {
            if (found)
                return NULL;
            found = &t->columns[i];
        }
    }
    return found;
}

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

static sqlq_result check_key(const sqlq_sql_sink *s, json_t *key, sqlq_error *err)
{
    char want[300];
    key_names(s->table, want, sizeof(want));
    if (!json_is_object(key))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "change without a \"key\" object");
    const char *name;
    json_t *v;
    size_t matched = 0;
    json_object_foreach(key, name, v)
    {
        const sqlq_column *c = find_column(s->table, name);
        if (!c || !c->in_key)
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "message key column %s is not in the primary key of %s (%s)",
                                  name, s->shown, want);
        matched++;
    }
    if (matched != s->table->nkey)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "message key has %zu column(s) but the primary key of %s is (%s)",
                              matched, s->shown, want);
    return SQLQ_OK;
}

static sqlq_result check_row(const sqlq_sql_sink *s, json_t *row, sqlq_error *err)
{
    const char *name;
    json_t *v;
    json_object_foreach(row, name, v)
    {
        if (!find_column(s->table, name))
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "column %s of the message is not in table %s", name, s->shown);
    }
    return SQLQ_OK;
}

/* ---- message shapes ---- */

static sqlq_result add_change(change_list *l, change c)
{
    change *grown = realloc(l->items, (l->n + 1) * sizeof(*grown));
    if (!grown) {
        if (c.owned_key)
            json_decref(c.key);
        return SQLQ_E_NOMEM;
    }
    l->items = grown;
    l->items[l->n++] = c;
    return SQLQ_OK;
}

static void changes_free(change_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->items[i].owned_key)
            json_decref(l->items[i].key);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static sqlq_result row_change(const sqlq_sql_sink *s, json_t *o, change_list *l, sqlq_error *err)
{
    const char *op = json_string_value(json_object_get(o, "op"));
    if (!op)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "change without \"op\"");
    json_t *key = json_object_get(o, "key");
    sqlq_result r = check_key(s, key, err);
    if (r != SQLQ_OK)
        return r;
    change c = {.key = key};
    json_t *version = json_object_get(o, "version");
    if (json_is_integer(version)) {
        c.has_version = true;
        c.version = (int64_t)json_integer_value(version);
    }
    if (strcmp(op, "delete") == 0) {
        c.kind = CHANGE_DELETE;
    } else if (strcmp(op, "insert") == 0 || strcmp(op, "update") == 0 ||
               strcmp(op, "read") == 0) { /* read: a row sent by sqlq backfill */
        c.kind = CHANGE_UPSERT;
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
        r = check_row(s, c.row, err);
        if (r != SQLQ_OK)
            return r;
    } else {
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unknown op \"%s\"", op);
    }
    return add_change(l, c) == SQLQ_OK ? SQLQ_OK
                                       : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

/* The Functions shape: the key is the item's primary-key fields. */
static sqlq_result functions_change(const sqlq_sql_sink *s, json_t *o, change_list *l,
                                    sqlq_error *err)
{
    json_t *op = json_object_get(o, "Operation");
    json_t *item = json_object_get(o, "Item");
    if (!json_is_integer(op) || !json_is_object(item))
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "Functions-shape element without integer Operation and object Item");
    json_int_t opv = json_integer_value(op);
    if (opv < 0 || opv > 2)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unknown Operation %" PRId64, (int64_t)opv);
    change c = {.kind = opv == 2 ? CHANGE_DELETE : CHANGE_UPSERT, .owned_key = true};
    c.key = json_object();
    for (size_t i = 0; c.key && i < s->table->nkey; i++) {
        const sqlq_column *col = &s->table->columns[s->table->key[i]];
        const char *name;
        json_t *v, *found = NULL;
        json_object_foreach(item, name, v)
        {
            if (find_column(s->table, name) == col)
                found = v;
        }
        if (!found) {
            json_decref(c.key);
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "Item lacks primary-key column %s of %s", col->name, s->shown);
        }
        json_object_set(c.key, col->name, found);
    }
    if (!c.key)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (c.kind == CHANGE_UPSERT) {
        c.row = item;
        sqlq_result r = json_is_true(json_object_get(o, "Truncated"))
                            ? sqlq_error_set(err, SQLQ_E_INVALID, false,
                                             "truncated Item (key fields only): cannot upsert")
                            : check_row(s, item, err);
        if (r != SQLQ_OK) {
            json_decref(c.key);
            return r;
        }
    }
    return add_change(l, c) == SQLQ_OK ? SQLQ_OK
                                       : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static sqlq_result collect(const sqlq_sql_sink *s, json_t *root, change_list *l, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    size_t i;
    json_t *e;
    if (json_is_array(root)) {
        json_array_foreach(root, i, e)
        {
            if (r == SQLQ_OK)
                r = functions_change(s, e, l, err);
        }
        return r;
    }
    json_t *batch = json_object_get(root, "changes");
    if (json_is_array(batch)) {
        json_array_foreach(batch, i, e)
        {
            if (r == SQLQ_OK)
                r = json_is_object(e) ? row_change(s, e, l, err)
                                      : sqlq_error_set(err, SQLQ_E_PARSE, false,
                                                       "changes[%zu] is not an object", i);
        }
        return r;
    }
    if (json_is_object(root) && json_object_get(root, "op"))
        return row_change(s, root, l, err);
    return sqlq_error_set(err, SQLQ_E_PARSE, false,
                          "not a change message: expected {\"op\",\"key\",\"row\"}, "
                          "{\"changes\":[…]} or [{\"Operation\",\"Item\"}]");
}

static sqlq_result parse(const sqlq_sql_sink *s, const char *body, size_t len, json_t **root,
                         change_list *l, sqlq_error *err)
{
    json_error_t je;
    *root = json_loadb(body, len, JSON_DECODE_ANY, &je);
    if (!*root)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "body is not JSON: %s (line %d)", je.text,
                              je.line);
    sqlq_result r = collect(s, *root, l, err);
    if (r != SQLQ_OK) {
        changes_free(l);
        json_decref(*root);
        *root = NULL;
    }
    return r;
}

sqlq_result sqlq_sql_sink_check(const sqlq_sql_sink *s, const char *body, size_t len,
                                sqlq_error *err)
{
    json_t *root;
    change_list l = {0};
    sqlq_result r = parse(s, body, len, &root, &l, err);
    if (r == SQLQ_OK) {
        changes_free(&l);
        json_decref(root);
    }
    return r;
}

/* ---- applying ---- */

static json_t *key_value(const sqlq_sql_sink *s, json_t *key, const sqlq_column *col)
{
    const char *name;
    json_t *v;
    json_object_foreach(key, name, v)
    {
        if (find_column(s->table, name) == col)
            return v;
    }
    return NULL;
}

static sqlq_result apply_delete(sqlq_sql_sink *s, sqlq_db *db, const change *c, sqlq_error *err)
{
    const char **names = calloc(s->table->nkey, sizeof(char *));
    sqlq_sink_params ps;
    sqlq_result r = sqlq_sink_params_init(&ps, s->table->nkey);
    if (!names || r != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < s->table->nkey; i++) {
        const sqlq_column *col = &s->table->columns[s->table->key[i]];
        names[i] = col->name;
        r = sqlq_sink_params_add(&ps, s->dialect, col, key_value(s, c->key, col), err);
    }
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    if (r == SQLQ_OK)
        r = sqlq_upsert_delete_sql(s->dialect, &s->name, names, s->table->nkey, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&sql), ps.p, ps.n, NULL, err);
    sqlq_buf_free(&sql);
    sqlq_sink_params_free(&ps);
    free(names);
    return r;
}

static sqlq_result apply_upsert(sqlq_sql_sink *s, sqlq_db *db, const change *c, sqlq_error *err)
{
    size_t cap = json_object_size(c->row) + s->table->nkey;
    const char **names = calloc(cap, sizeof(char *));
    const char **key = calloc(s->table->nkey, sizeof(char *));
    sqlq_sink_params ps;
    sqlq_result r = sqlq_sink_params_init(&ps, cap);
    if (!names || !key || r != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    size_t n = 0;
    const char *name;
    json_t *v;
    json_object_foreach(c->row, name, v)
    {
        const sqlq_column *col = find_column(s->table, name);
        if (r == SQLQ_OK && col) {
            names[n++] = col->name;
            r = sqlq_sink_params_add(&ps, s->dialect, col, v, err);
        }
    }
    /* Key columns missing from the row come from the key. */
    for (size_t i = 0; r == SQLQ_OK && i < s->table->nkey; i++) {
        const sqlq_column *col = &s->table->columns[s->table->key[i]];
        key[i] = col->name;
        bool present = false;
        for (size_t j = 0; j < n; j++)
            present = present || names[j] == col->name;
        if (!present) {
            names[n++] = col->name;
            r = sqlq_sink_params_add(&ps, s->dialect, col, key_value(s, c->key, col), err);
        }
    }
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    if (r == SQLQ_OK)
        r = sqlq_upsert_sql(s->dialect, &s->name, names, n, key, s->table->nkey, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&sql), ps.p, ps.n, NULL, err);
    sqlq_buf_free(&sql);
    sqlq_sink_params_free(&ps);
    free(names);
    free(key);
    return r;
}

/* With the guard, a versioned change applies only when newer than the last one applied for
 * its key (*out_apply false: skip it, it is a redelivery or arrived out of order). */
static sqlq_result claim(sqlq_sql_sink *s, sqlq_db *db, const change *c, bool *out_apply,
                         sqlq_error *err)
{
    *out_apply = true;
    if (!s->guard || !c->has_version)
        return SQLQ_OK;
    char *key = json_dumps(c->key, JSON_SORT_KEYS | JSON_COMPACT);
    if (!key)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    char hash[65];
    sqlq_version_guard_key_hash(key, hash);
    sqlq_result r =
        sqlq_version_guard_claim(db, &s->versions, s->target, hash, c->version, out_apply, err);
    if (r == SQLQ_OK && !*out_apply)
        SQLQ_DEBUG("sink.skipped",
                   "table=%s key=%s version=%lld note=\"not newer than the last "
                   "applied\"",
                   s->shown, key, (long long)c->version);
    free(key);
    return r;
}

static sqlq_result apply(sqlq_sql_sink *s, sqlq_db *db, const char *body, size_t len,
                         sqlq_error *err)
{
    json_t *root;
    change_list l = {0};
    sqlq_result r = parse(s, body, len, &root, &l, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_db_begin(db, err);
    size_t applied = 0;
    for (size_t i = 0; r == SQLQ_OK && i < l.n; i++) {
        bool go;
        r = claim(s, db, &l.items[i], &go, err);
        if (r != SQLQ_OK || !go)
            continue;
        r = l.items[i].kind == CHANGE_DELETE ? apply_delete(s, db, &l.items[i], err)
                                             : apply_upsert(s, db, &l.items[i], err);
        applied++;
    }
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    else
        SQLQ_DEBUG("sink.applied", "table=%s changes=%zu applied=%zu", s->shown, l.n, applied);
    changes_free(&l);
    json_decref(root);
    return r;
}

/* ---- the handler ---- */

static sqlq_result sink_open(void *ctx, void **out, sqlq_error *err)
{
    sink_worker *w = calloc(1, sizeof(*w));
    if (!w)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    w->s = ctx;
    sqlq_result r = sqlq_db_connect(w->s->conn, &w->db, err);
    if (r != SQLQ_OK) {
        free(w);
        return r;
    }
    *out = w;
    return SQLQ_OK;
}

static void sink_close(void *ctx)
{
    sink_worker *w = ctx;
    if (!w)
        return;
    sqlq_db_close(w->db);
    free(w);
}

static bool connection_lost(const sqlq_error *err)
{
    return strncmp(err->sqlstate, "08", 2) == 0 || strcmp(err->sqlstate, "57P01") == 0;
}

static sqlq_result sink_handle(void *ctx, const sqlq_delivery *d, sqlq_error *err)
{
    sink_worker *w = ctx;
    sqlq_sql_sink *s = w->s;
    if (w->broken) {
        sqlq_db_close(w->db);
        w->db = NULL;
        sqlq_result r = sqlq_db_connect(s->conn, &w->db, err);
        if (r != SQLQ_OK)
            return r;
        w->broken = false;
    }
    bool serial = s->dialect == SQLQ_DIALECT_SQLITE;
    if (serial)
        pthread_mutex_lock(&s->write_lock);
    sqlq_result r = apply(s, w->db, d->body, d->body_len, err);
    if (serial)
        pthread_mutex_unlock(&s->write_lock);
    if (r == SQLQ_E_SQL && connection_lost(err))
        w->broken = true;
    return r;
}

sqlq_handler sqlq_sql_sink_bind(sqlq_sql_sink *s)
{
    sqlq_handler h = {.handle = sink_handle, .open = sink_open, .close = sink_close, .ctx = s};
    return h;
}

sqlq_result sqlq_sql_sink_apply_once(sqlq_sql_sink *s, const char *body, size_t len,
                                     sqlq_error *err)
{
    sqlq_db *db = NULL;
    sqlq_result r = sqlq_db_connect(s->conn, &db, err);
    if (r == SQLQ_OK)
        r = apply(s, db, body, len, err);
    sqlq_db_close(db);
    return r;
}
