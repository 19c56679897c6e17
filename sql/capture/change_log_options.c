/* change_log_options: the opt-in columns of a change log (see change_log_options.h). */
#include "change_log_options.h"
#include "change_log_internal.h"

#include "catalog.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The pieces of the database's triggers (change_log_internal.h). */
static const sqlq_change_log_options_sql *parts(const sqlq_dialect *d)
{
    return sqlq_change_log_ops_of(d)->options;
}

bool sqlq_change_log_options_mirror_name(const char *name, char *out, size_t size)
{
    int n = snprintf(out, size, SQLQ_COL_BEFORE_PREFIX "%s", name);
    return n > 0 && (size_t)n < size && n <= 63; /* PostgreSQL's identifier limit */
}

bool sqlq_change_log_options_mirrors(const sqlq_table *log, const char *name)
{
    char m[128];
    if (!log || !sqlq_change_log_options_mirror_name(name, m, sizeof(m)))
        return false;
    for (size_t i = 0; i < log->ncolumns; i++)
        if (strcmp(log->columns[i].name, m) == 0)
            return true;
    return false;
}

void sqlq_change_log_options_of(const sqlq_table *log, sqlq_change_log_options *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; log && i < log->ncolumns; i++) {
        const char *n = log->columns[i].name;
        if (log->columns[i].in_key)
            continue; /* the key's own columns, whatever their names */
        if (strcmp(n, SQLQ_COL_CHANGED) == 0)
            out->track_columns = true;
        else if (strncmp(n, SQLQ_COL_BEFORE_PREFIX, strlen(SQLQ_COL_BEFORE_PREFIX)) == 0)
            out->before_image = true;
    }
}

static sqlq_result column_exists(sqlq_db *db, const char *log_table, const char *name, bool *out,
                                 sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    char bare[160];
    snprintf(bare, sizeof(bare), "%s%s", d->object_prefix, log_table);
    sqlq_param p[2] = {sqlq_param_text(bare), sqlq_param_text(name)};
    int64_t n = 0;
    sqlq_result r = sqlq_db_query_int(db, d->column_exists_sql, p, 2, &n, err);
    *out = r == SQLQ_OK && n > 0;
    return r;
}

/* The log keeps t's key columns under their own names: none of them is an option column. */
static bool is_key_column(const sqlq_table *t, const char *name)
{
    for (size_t i = 0; i < t->nkey; i++)
        if (strcasecmp(t->columns[t->key[i]].name, name) == 0)
            return true;
    return false;
}

sqlq_result sqlq_change_log_options_found(sqlq_db *db, const sqlq_table *t, const char *log_table,
                                          sqlq_change_log_options *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    char mirror[128];
    sqlq_result r = SQLQ_OK;
    if (!is_key_column(t, SQLQ_COL_CHANGED))
        r = column_exists(db, log_table, SQLQ_COL_CHANGED, &out->track_columns, err);
    if (r == SQLQ_OK && t->nkey > 0 &&
        sqlq_change_log_options_mirror_name(t->columns[t->key[0]].name, mirror, sizeof(mirror)) &&
        !is_key_column(t, mirror))
        r = column_exists(db, log_table, mirror, &out->before_image, err);
    return r;
}

/* ALTER TABLE log ADD [COLUMN] name decl, unless the log has it. */
static sqlq_result add_column(sqlq_db *db, const char *log_table, const char *name,
                              const char *decl, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    bool exists = false;
    sqlq_result r = column_exists(db, log_table, name, &exists, err);
    if (r != SQLQ_OK || exists)
        return r;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "ALTER TABLE ");
    sqlq_catalog_object(&q, log_table);
    sqlq_sql_text_add(&q, " ADD COLUMN ");
    sqlq_sql_text_ident(&q, name);
    sqlq_sql_text_add(&q, " %s", decl);
    return sqlq_change_log_exec(db, &q, err);
}

/* The log's columns and their declared types, as the dialect's key_types_sql reports them. */
static sqlq_result log_column_types(sqlq_db *db, const char *log_table, json_t **out,
                                    sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    char *target = NULL;
    sqlq_result r = SQLQ_OK;
    if (!d->schemas) {
        char bare[160];
        snprintf(bare, sizeof(bare), "%s%s", d->object_prefix, log_table);
        target = strdup(bare);
        if (!target)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    } else {
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, d);
        sqlq_catalog_object(&q, log_table);
        r = sqlq_sql_text_take(&q, &target, err);
    }
    sqlq_param p = sqlq_param_text(target);
    if (r == SQLQ_OK)
        r = sqlq_db_query(db, d->key_types_sql, &p, 1, out, err);
    free(target);
    return r;
}

/* ALTER TABLE log <the database's retype of the column>. */
static sqlq_result retype_column(sqlq_db *db, const char *log_table, const char *name,
                                 const char *type, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "ALTER TABLE ");
    sqlq_catalog_object(&q, log_table);
    parts(q.dialect)->retype(&q, name, type);
    SQLQ_INFO("before_image_retyped", "log=%s column=%s type=%s", log_table, name, type);
    return sqlq_change_log_exec(db, &q, err);
}

/* A before-image column at another type than its table column (an ALTER COLUMN ... TYPE since
 * the last setup, e.g. varchar(5) to varchar(50)) makes the trigger's copy fail: brought to
 * the column's type now. A database whose types are affinities (a copy of any value fits any
 * column) has no retype and is left alone. */
static sqlq_result retype_before_columns(sqlq_db *db, const sqlq_table *t, char *const *types,
                                         const char *log_table, sqlq_error *err)
{
    if (!parts(sqlq_db_dialect(db))->retype)
        return SQLQ_OK;
    json_t *rows = NULL;
    sqlq_result r = log_column_types(db, log_table, &rows, err);
    for (size_t i = 0; r == SQLQ_OK && i < t->ncolumns; i++) {
        char name[128];
        if (!sqlq_change_log_options_mirror_name(t->columns[i].name, name, sizeof(name)) ||
            !types[i][0])
            continue;
        size_t j;
        json_t *row;
        json_array_foreach(rows, j, row) {
            const char *n = json_string_value(json_object_get(row, "n"));
            const char *now = json_string_value(json_object_get(row, "t"));
            if (n && now && strcmp(n, name) == 0) {
                if (strcmp(now, types[i]) != 0)
                    r = retype_column(db, log_table, name, types[i], err);
                break;
            }
        }
    }
    json_decref(rows);
    return r;
}

/* The before-image columns: every column of t, with its declared type, nullable. */
static sqlq_result add_before_columns(sqlq_db *db, const sqlq_table *t, const char *log_table,
                                      sqlq_error *err)
{
    size_t *all = calloc(t->ncolumns ? t->ncolumns : 1, sizeof(size_t));
    if (!all)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < t->ncolumns; i++)
        all[i] = i;
    sqlq_table view = *t; /* every column as a "key", for the catalog's type lookup */
    view.key = all;
    view.nkey = t->ncolumns;
    char **types = NULL;
    sqlq_result r = sqlq_catalog_key_types(db, &view, &types, err);
    for (size_t i = 0; r == SQLQ_OK && i < t->ncolumns; i++) {
        char name[128], decl[300];
        if (!sqlq_change_log_options_mirror_name(t->columns[i].name, name, sizeof(name))) {
            r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                               "--before-image: column %s of %s: the name is too long for its "
                               "before-image column %s<name> (63 bytes at most)",
                               t->columns[i].name, t->name.name, SQLQ_COL_BEFORE_PREFIX);
            break;
        }
        snprintf(decl, sizeof(decl), "%s NULL", types[i]);
        r = add_column(db, log_table, name, decl, err);
    }
    if (r == SQLQ_OK)
        r = retype_before_columns(db, t, types, log_table, err);
    sqlq_catalog_key_types_free(types, t->ncolumns);
    free(all);
    return r;
}

/* The changed-column map, added to a log that has rows: a row whose latest change is an
 * insert or a delete has no update to remember ({}); an update's columns are unknown (NULL:
 * its message carries no "changed" until the key is logged anew). */
static sqlq_result add_changed_column(sqlq_db *db, const char *log_table, sqlq_error *err)
{
    bool exists = false;
    sqlq_result r = column_exists(db, log_table, SQLQ_COL_CHANGED, &exists, err);
    if (r != SQLQ_OK || exists)
        return r;
    r = add_column(db, log_table, SQLQ_COL_CHANGED, parts(sqlq_db_dialect(db))->changed_decl, err);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "UPDATE ");
    sqlq_catalog_object(&q, log_table);
    sqlq_sql_text_add(&q, " SET " SQLQ_COL_CHANGED " = '{}' WHERE " SQLQ_COL_OP " <> 'U'");
    if (r != SQLQ_OK) {
        sqlq_sql_text_free(&q);
        return r;
    }
    return sqlq_change_log_exec(db, &q, err);
}

sqlq_result sqlq_change_log_options_add_columns(sqlq_db *db, const sqlq_table *t,
                                                const char *log_table,
                                                const sqlq_change_log_options *o, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    if (o->track_columns)
        r = add_changed_column(db, log_table, err);
    if (r == SQLQ_OK && o->before_image)
        r = add_before_columns(db, t, log_table, err);
    return r;
}

void sqlq_change_log_options_names(sqlq_sql_text *q, const sqlq_table *t,
                                   const sqlq_change_log_options *o)
{
    if (o->track_columns)
        sqlq_sql_text_add(q, ", " SQLQ_COL_CHANGED);
    for (size_t i = 0; o->before_image && i < t->ncolumns; i++) {
        char name[128];
        if (sqlq_change_log_options_mirror_name(t->columns[i].name, name, sizeof(name))) {
            sqlq_sql_text_add(q, ", ");
            sqlq_sql_text_ident(q, name);
        }
    }
}

/* The columns this update changed, as {"column": version}: merge_fn(merge_fn(empty, entry),
 * entry)…, or (empty || entry || …) without one. */
static void changed_delta(sqlq_sql_text *q, const sqlq_table *t, const char *version_sql)
{
    const sqlq_change_log_options_sql *p = parts(q->dialect);
    bool chain = !p->merge_fn;
    for (size_t i = 0; !chain && i < t->ncolumns; i++)
        sqlq_sql_text_add(q, "%s", p->merge_fn);
    sqlq_sql_text_add(q, "%s%s", chain ? "(" : "", p->empty);
    for (size_t i = 0; i < t->ncolumns; i++) {
        sqlq_sql_text_add(q, "%s", chain ? " || " : ", ");
        sqlq_sql_text_add(q, "CASE WHEN ");
        p->differs(q, &t->columns[i]);
        sqlq_sql_text_add(q, " THEN %s", p->object_fn);
        sqlq_sql_text_literal(q, t->columns[i].name);
        sqlq_sql_text_add(q, ", %s) ELSE %s END%s", version_sql ? version_sql : "0", p->empty,
                          chain ? "" : ")");
    }
    if (chain)
        sqlq_sql_text_add(q, ")");
}

void sqlq_change_log_options_values(sqlq_sql_text *q, const sqlq_table *t,
                                    const sqlq_change_log_options *o, char op,
                                    const char *version_sql)
{
    if (o->track_columns) {
        sqlq_sql_text_add(q, ", ");
        if (op == 'U')
            changed_delta(q, t, version_sql);
        else
            sqlq_sql_text_add(q, op == 'I' ? "'{}'" : "NULL");
    }
    for (size_t i = 0; o->before_image && i < t->ncolumns; i++) {
        char name[128];
        if (!sqlq_change_log_options_mirror_name(t->columns[i].name, name, sizeof(name)))
            continue;
        sqlq_sql_text_add(q, ", ");
        if (op == 'I')
            sqlq_sql_text_add(q, "NULL");
        else
            sqlq_sql_text_col(q, "OLD.", t->columns[i].name);
    }
}

bool sqlq_change_log_options_use_version(const sqlq_change_log_options *o, char op)
{
    return o->track_columns && op == 'U'; /* changed_delta */
}

/* col = the new row's value: ", col = excluded.col", or "col = VALUES(col), " where the list
 * is an ON DUPLICATE KEY UPDATE written first. */
static void take_new(sqlq_sql_text *q, const char *name)
{
    bool my = parts(q->dialect)->on_duplicate_key;
    sqlq_sql_text_add(q, "%s", my ? "" : ", ");
    sqlq_sql_text_ident(q, name);
    sqlq_sql_text_add(q, my ? " = VALUES(" : " = excluded.");
    sqlq_sql_text_ident(q, name);
    sqlq_sql_text_add(q, "%s", my ? "), " : "");
}

void sqlq_change_log_options_updates(sqlq_sql_text *q, const sqlq_table *t,
                                     const sqlq_change_log_options *o, char op,
                                     const char *log_name)
{
    if (o->track_columns && op == 'I')
        take_new(q, SQLQ_COL_CHANGED);
    else if (o->track_columns && op == 'U')
        parts(q->dialect)->merge(q, t, log_name);
    for (size_t i = 0; o->before_image && i < t->ncolumns; i++) {
        char name[128];
        if (sqlq_change_log_options_mirror_name(t->columns[i].name, name, sizeof(name)))
            take_new(q, name);
    }
}
