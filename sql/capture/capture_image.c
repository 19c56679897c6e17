/* capture_image: a route's changed columns and before image (capture_internal.h), read from
 * the columns capture_sql_image.c adds to the poll. */
#include "capture_internal.h"

#include "change_log_options.h"
#include "row_json.h"
#include "setup_hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlq_result missing(const sqlq_capture *cap, const char *key, const char *option,
                           sqlq_error *err)
{
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&cap->names.table, NULL, arg, sizeof arg);
    return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                          "key %s: the change log of table %s does not keep it: run `sqlq setup "
                          "--table %s %s` first",
                          key, cap->names.table_key, arg, option);
}

sqlq_result sqlq_capture_image_open(sqlq_capture *cap, const sqlq_capture_config *cfg,
                                    sqlq_error *err)
{
    if (!cfg->changed && !cfg->before_image)
        return SQLQ_OK;
    if (cap->leased->image_open)
        return cap->leased->image_open(cap, cfg, err);
    sqlq_result r = sqlq_capture_table_shape_describe_log(cap, &cap->log, err);
    if (r == SQLQ_E_NOT_FOUND) /* no log at all: check_source says so */
        return sqlq_error_clear(err), SQLQ_OK;
    if (r != SQLQ_OK)
        return r;
    sqlq_change_log_options kept;
    sqlq_change_log_options_of(cap->log, &kept);
    bool no_changed = cfg->changed && !kept.track_columns;
    bool no_before = cfg->before_image && !kept.before_image;
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&cap->names.table, NULL, arg, sizeof arg);
    if (no_changed && no_before) /* every missing option at once, not one run per option */
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "keys changed and before_image: the change log of table %s keeps "
                              "neither: run `sqlq setup --table %s --track-columns "
                              "--before-image` first",
                              cap->names.table_key, arg);
    if (no_changed)
        return missing(cap, "changed", "--track-columns", err);
    if (no_before)
        return missing(cap, "before_image", "--before-image", err);
    cap->spec.changed = cfg->changed;
    cap->spec.before = cfg->before_image;
    cap->spec.log = cap->log;
    return SQLQ_OK;
}

void sqlq_capture_image_close(sqlq_capture *cap)
{
    sqlq_table_free(cap->log);
    cap->log = NULL;
}

/* The map as an object: the driver gives text (SQLite, MariaDB) or, for jsonb, maybe JSON. */
static json_t *map_of(json_t *v)
{
    if (json_is_object(v))
        return json_incref(v);
    const char *text = json_string_value(v);
    return text ? json_loads(text, 0, NULL) : NULL;
}

/* The names, in table order, of the columns whose entry is above what was delivered (an
 * entry 0 is the change itself: MariaDB/MySQL's unstamped write, stamped with the row). */
static json_t *changed_names(const sqlq_capture *cap, const json_t *row, int64_t version)
{
    int64_t dv = 0;
    json_t *map = map_of(json_object_get(row, SQLQ_CAPTURE_CHANGED));
    if (!map || !sqlq_json_int64(json_object_get(row, SQLQ_CAPTURE_DELIVERED), &dv)) {
        json_decref(map);
        return NULL; /* unknown: a log row written before --track-columns */
    }
    json_t *names = json_array();
    for (size_t i = 0; names && i < cap->table->ncolumns; i++) {
        const char *name = cap->table->columns[i].name;
        int64_t at = 0;
        if (!sqlq_json_int64(json_object_get(map, name), &at))
            continue;
        if ((at == 0 ? version : at) > dv && json_array_append_new(names, json_string(name)) != 0) {
            json_decref(names);
            names = NULL;
        }
    }
    json_decref(map);
    return names;
}

/* The before image: every mirrored column, encoded as the row is; NULL when the log row holds
 * none (a key column's copy is NULL: written before --before-image, or after an insert). */
static json_t *before_row(const sqlq_capture *cap, const json_t *row)
{
    const sqlq_table *t = cap->table;
    char alias[32];
    snprintf(alias, sizeof(alias), SQLQ_CAPTURE_BEFORE "%zu", t->key[0]);
    const json_t *k = json_object_get(row, alias);
    if (!k || json_is_null(k))
        return NULL;
    json_t *out = json_object();
    for (size_t i = 0; out && i < t->ncolumns; i++) {
        snprintf(alias, sizeof(alias), SQLQ_CAPTURE_BEFORE "%zu", i);
        json_t *v = json_object_get(row, alias);
        if (!v)
            continue;
        snprintf(alias, sizeof(alias), SQLQ_CAPTURE_BEFORE_FIX "%zu", i);
        const json_t *fix = json_object_get(row, alias);
        json_t *exact = json_is_string(fix)
                            ? sqlq_row_json_fixup(cap->spec.dialect, &t->columns[i], json_incref(v), fix)
                            : json_incref(v);
        if (!exact || json_object_set_new(out, t->columns[i].name, exact) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

sqlq_result sqlq_capture_image_read(const sqlq_capture *cap, const json_t *row, sqlq_change *c,
                                    sqlq_error *err)
{
    if (cap->leased->image_read)
        return cap->leased->image_read(cap, row, c, err);
    const json_t *map = json_object_get(row, SQLQ_CAPTURE_CHANGED);
    bool known = json_is_string(map) || json_is_object(map); /* NULL: written before setup */
    if (cap->spec.changed && c->op == SQLQ_OP_UPDATE && known &&
        !(c->changed = changed_names(cap, row, c->version)))
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "table %s: unreadable changed-column map",
                              cap->names.table_key);
    if (cap->spec.before && c->op != SQLQ_OP_INSERT)
        c->before = before_row(cap, row);
    return SQLQ_OK;
}
