/* capture_table_shape: the watched table's shape under a running capture (see capture_internal.h).
 *
 * The poll reads the current row as r.* (capture_sql.c), so it always carries the columns the
 * table has when the poll runs: a column added, dropped, renamed or retyped needs no restart
 * and fails no poll. Each poll compares the result set's columns (names and ODBC types) with
 * those of the previous one; on a difference the table is described again (the cached
 * description follows it) and the change is logged. The change log records keys: a change of
 * the primary key (other columns, a key column renamed or retyped) makes its rows name other
 * rows, so it stops the capture with an error saying what to do. The key is compared through
 * m_key, the catalog's key read by the poll statement itself (an uncorrelated subquery: once
 * per statement), with the value read at open. */
#include "capture_internal.h"
#include "capture_stop.h"

#include "log.h"
#include "row_json.h"
#include "setup_hint.h"
#include "table_key.h"

#include <inttypes.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the key ----------------------------------------------------------------------------- */

static const char *shape_text(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? s : "(none: the table, its primary key or its key's unique index is gone)";
}

/* SQLQ_E_INVALID, not transient, saying what the operator must do; logged as an error. */
static sqlq_result key_changed(const sqlq_capture *cap, const char *was, const char *now,
                               const char *how, sqlq_error *err)
{
    sqlq_error_clear(err); /* replaces the SQL error the change caused, if any */
    SQLQ_ERROR("table_key_changed", "bridge=%s table=%s was=\"%s\" now=\"%s\" note=\"%s\"",
               cap->bridge, cap->names.table_key, was, now, how);
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&cap->names.table, NULL, arg, sizeof arg);
    sqlq_result r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "the key of table %s changed (%s; was: %s; now: %s): its "
                          "change log is keyed by the old key, so capture cannot go on. Stop "
                          "the bridge, run `sqlq setup --table %s --drop --force` (changes not "
                          "yet delivered go with the old log: it lists them; read them back "
                          "with a backfill), then `sqlq setup --table %s` again",
                          cap->names.table_key, how, was, now, arg, arg);
    sqlq_error_reason(err, SQLQ_STOP_KEY_CHANGED);
    return r;
}

static void adopt(sqlq_capture *cap, sqlq_table *now, json_t *shape);
static sqlq_result read_key(sqlq_capture *cap, json_t **out, sqlq_error *err, int64_t *out_src);

/* A unique index of the key made again over the same columns (in another order, under another
 * name): the key, in the log's order, is the same, so capture goes on. The key statements are
 * rebuilt for the new index, key_seen is read again, and the poll runs again (shape_moved). */
static sqlq_result key_index_again(sqlq_capture *cap, sqlq_table *t, sqlq_error *err)
{
    SQLQ_INFO("table_key_index_changed", "bridge=%s table=%s index=%s note=\"a unique index "
              "on the same key columns: capture goes on with the change log's key\"",
              cap->bridge, cap->names.table_key, t->key_index ? t->key_index : "");
    adopt(cap, t, NULL);
    cap->shape_moved = true;
    sqlq_capture_stmt_free(&cap->key_stmt);
    sqlq_result r = sqlq_capture_sql_key_stmt(&cap->spec, &cap->key_stmt, err);
    json_t *now = NULL;
    if (r == SQLQ_OK)
        r = read_key(cap, &now, err, NULL);
    const char *s = json_string_value(now);
    if (r == SQLQ_OK && s) {
        char *copy = strdup(s);
        if (!copy)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        free(copy ? cap->key_seen : NULL);
        cap->key_seen = copy ? copy : cap->key_seen;
    }
    json_decref(now);
    if (r == SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_CONFLICT, true, "table %s: its key's index changed: "
                           "poll again", cap->names.table_key);
    return r;
}

/* m_key of a poll (or of the key statement) against the one read at open; the message
 * names both keys as the catalog describes them (m_key itself may be column numbers). */
static sqlq_result check_key(sqlq_capture *cap, const json_t *m_key, sqlq_error *err)
{
    const char *now = json_string_value(m_key);
    if (now && cap->key_seen && strcmp(now, cap->key_seen) == 0)
        return SQLQ_OK;
    char was[300], is[300];
    sqlq_table_key_text(cap->table, was, sizeof(was));
    snprintf(is, sizeof(is), "%s", shape_text(m_key));
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_table *t = NULL;
    bool again = cap->table->key_index &&
                 sqlq_table_key_describe_again(cap->db, cap->table, &t, &e) == SQLQ_OK;
    if (!again && now && sqlq_table_key_describe_again(cap->db, cap->table, &t, &e) == SQLQ_OK)
        sqlq_table_key_text(t, is, sizeof(is));
    if (again && sqlq_table_compare(cap->table, t) == SQLQ_TABLE_SAME)
        return key_index_again(cap, t, err); /* takes t */
    if (again)
        sqlq_table_key_text(t, is, sizeof(is));
    sqlq_table_free(t);
    return key_changed(cap, was, is, "found by a poll", err);
}

/* The key statement's row: m_key (JSON null when the key is gone) and m_src. */
static sqlq_result read_key(sqlq_capture *cap, json_t **out, sqlq_error *err, int64_t *out_src)
{
    json_t *rows = NULL;
    sqlq_result r = sqlq_capture_query(cap, &cap->key_stmt, NULL, &rows, err);
    json_t *row = json_array_get(rows, 0);
    *out = r == SQLQ_OK ? json_incref(json_object_get(row, SQLQ_CAPTURE_KEY_NOW)) : NULL;
    if (r == SQLQ_OK && !*out)
        *out = json_null();
    if (out_src && (r != SQLQ_OK || !sqlq_json_int64(
                                        json_object_get(row, SQLQ_CAPTURE_SOURCE_OBJECTS), out_src)))
        *out_src = -1;
    json_decref(rows);
    return r;
}

/* The objects feeding the change log (triggers) or change tracking are still there. */
static sqlq_result check_source_objects(const sqlq_capture *cap, int64_t n, sqlq_error *err)
{
    int64_t want = sqlq_capture_sql_source_objects(&cap->spec);
    if (n == want)
        return SQLQ_OK;
    const char *what = cap->leased->objects_gone;
    SQLQ_ERROR("capture_source_gone", "bridge=%s table=%s found=%" PRId64 " expected=%" PRId64
               " note=\"%s\"", cap->bridge, cap->names.table_key, n, want, what);
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&cap->names.table, NULL, arg, sizeof arg);
    sqlq_result r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                          "table %s: %s, so its changes are not recorded and would be missed. "
                          "Run `sqlq setup --table %s` again (writes made meanwhile were not "
                          "captured)",
                          cap->names.table_key, what, arg);
    sqlq_error_reason(err, SQLQ_STOP_SOURCE_GONE);
    return r;
}

sqlq_result sqlq_capture_table_shape_check_key(sqlq_capture *cap, sqlq_error *err)
{
    json_t *now = NULL;
    int64_t src = 0;
    sqlq_result r = read_key(cap, &now, err, &src);
    if (r == SQLQ_OK)
        r = check_key(cap, now, err);
    if (r == SQLQ_OK)
        r = check_source_objects(cap, src, err);
    json_decref(now);
    return r;
}

/* Take a new description of the table. The poll statements were built from the old one (their
 * exact-value columns name its columns): they are rebuilt before the next poll, and the poll
 * that found the change is rolled back and run again. */
static void adopt(sqlq_capture *cap, sqlq_table *now, json_t *shape)
{
    bool fixups_moved = sqlq_table_compare(cap->table, now) != SQLQ_TABLE_SAME;
    sqlq_table_free(cap->table);
    cap->table = now;
    cap->spec.table = now;
    json_decref(cap->row_shape);
    cap->row_shape = shape ? json_incref(shape) : NULL;
    cap->shape_moved = cap->shape_moved || fixups_moved;
}

sqlq_result sqlq_capture_table_shape_failed(sqlq_capture *cap, sqlq_result failed, sqlq_error *err)
{
    if (failed != SQLQ_E_SQL || !cap->table)
        return failed;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_table *now = NULL;
    if (sqlq_table_key_describe_again(cap->db, cap->table, &now, &e) != SQLQ_OK)
        return failed; /* the first error is the one to report */
    sqlq_table_change ch = sqlq_table_compare(cap->table, now);
    if (ch == SQLQ_TABLE_KEY_CHANGED) {
        char how[200], was[300], is[300];
        snprintf(how, sizeof(how), "a poll failed: %.160s", err ? err->message : "");
        sqlq_table_key_text(cap->table, was, sizeof(was));
        sqlq_table_key_text(now, is, sizeof(is));
        failed = key_changed(cap, was, is, how, err);
    } else if (ch != SQLQ_TABLE_SAME) { /* a column the statement named is gone or renamed */
        char what[400];
        sqlq_table_change_text(cap->table, now, what, sizeof(what));
        SQLQ_INFO("table_shape_changed", "bridge=%s table=%s %s columns=%zu note=\"messages "
                  "carry the new columns from now on\"",
                  cap->bridge, cap->names.table_key, what, now->ncolumns);
        adopt(cap, now, NULL);
        return failed; /* the caller sees shape_moved and polls again */
    }
    sqlq_table_free(now);
    return failed;
}

sqlq_result sqlq_capture_table_shape_describe_log(sqlq_capture *cap, sqlq_table **out, sqlq_error *err)
{
    sqlq_table_name log;
    memset(&log, 0, sizeof(log));
    if (!cap->spec.dialect->schemas) {
        snprintf(log.name, sizeof(log.name), "%s%s", cap->spec.dialect->object_prefix,
                 cap->names.log_table);
    } else {
        snprintf(log.schema, sizeof(log.schema), "sqlq");
        snprintf(log.name, sizeof(log.name), "%s", cap->names.log_table);
    }
    return sqlq_table_describe(cap->db, &log, out, err);
}

/* The change log's key columns (its primary key) must be the table's key: a key changed while
 * no bridge ran is found here, before a poll reads the old log with the new key. */
static sqlq_result check_log_key(sqlq_capture *cap, sqlq_error *err)
{
    sqlq_table *lt = NULL;
    sqlq_result r = sqlq_capture_table_shape_describe_log(cap, &lt, err);
    if (r != SQLQ_OK)
        return r;
    const sqlq_table *t = cap->table;
    bool same = lt->nkey == t->nkey;
    for (size_t k = 0; same && k < t->nkey; k++) {
        const sqlq_column *a = &lt->columns[lt->key[k]], *b = &t->columns[t->key[k]];
        /* SQLite: setup may have left out a declared type it would not paste into DDL */
        same = strcmp(a->name, b->name) == 0 && (!a->type[0] || strcmp(a->type, b->type) == 0);
    }
    if (!same) {
        char was[300], now[300];
        sqlq_table_key_text(lt, was, sizeof(was));
        sqlq_table_key_text(t, now, sizeof(now));
        r = key_changed(cap, was, now, "since `sqlq setup` made its change log", err);
    }
    sqlq_table_free(lt);
    return r;
}

sqlq_result sqlq_capture_table_shape_open(sqlq_capture *cap, sqlq_error *err)
{
    sqlq_result r = sqlq_capture_sql_key_stmt(&cap->spec, &cap->key_stmt, err);
    if (r == SQLQ_OK && !cap->spec.log_sql->tracked)
        r = check_log_key(cap, err);
    json_t *now = NULL;
    if (r == SQLQ_OK)
        r = read_key(cap, &now, err, NULL);
    const char *s = json_string_value(now);
    if (r == SQLQ_OK && !s)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false, "table %s has no primary key now",
                           cap->names.table_key),
        sqlq_error_reason(err, SQLQ_STOP_KEY_CHANGED);
    if (r == SQLQ_OK && !(cap->key_seen = strdup(s)))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    json_decref(now);
    return r;
}

void sqlq_capture_table_shape_close(sqlq_capture *cap)
{
    sqlq_capture_stmt_free(&cap->key_stmt);
    free(cap->key_seen);
    cap->key_seen = NULL;
    json_decref(cap->row_shape);
    cap->row_shape = NULL;
}

/* ---- the row's columns ------------------------------------------------------------------- */

/* Whether the columns of a result (the r.* part) are the described table's, by name. */
static bool names_match(const sqlq_table *t, const json_t *shape)
{
    if (json_array_size(shape) != t->ncolumns)
        return false;
    for (size_t i = 0; i < t->ncolumns; i++) {
        const char *n = json_string_value(json_object_get(json_array_get(shape, i), "name"));
        if (!n || strcmp(n, t->columns[i].name) != 0)
            return false;
    }
    return true;
}

/* The row's columns differ from the last poll's: describe the table again and follow it, or
 * stop when its key changed. */
static sqlq_result follow(sqlq_capture *cap, json_t *shape, sqlq_error *err)
{
    sqlq_table *now = NULL;
    sqlq_result r = sqlq_table_key_describe_again(cap->db, cap->table, &now, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_table_change ch = sqlq_table_compare(cap->table, now);
    if (ch == SQLQ_TABLE_KEY_CHANGED) {
        char was[300], is[300];
        sqlq_table_key_text(cap->table, was, sizeof(was));
        sqlq_table_key_text(now, is, sizeof(is));
        sqlq_table_free(now);
        return key_changed(cap, was, is, "found by a poll", err);
    }
    char what[400];
    sqlq_table_change_text(cap->table, now, what, sizeof(what));
    if (ch != SQLQ_TABLE_SAME)
        SQLQ_INFO("table_shape_changed", "bridge=%s table=%s %s columns=%zu note=\"messages "
                  "carry the new columns from now on\"",
                  cap->bridge, cap->names.table_key, what, now->ncolumns);
    else /* the driver described the same columns otherwise */
        SQLQ_DEBUG("result_columns_changed", "bridge=%s table=%s", cap->bridge,
                   cap->names.table_key);
    adopt(cap, now, shape);
    return SQLQ_OK;
}

static sqlq_result check_row_shape(sqlq_capture *cap, json_t *shape, sqlq_error *err)
{
    if (cap->row_shape ? json_equal(cap->row_shape, shape) : names_match(cap->table, shape)) {
        if (!cap->row_shape)
            cap->row_shape = json_incref(shape);
        return SQLQ_OK;
    }
    return follow(cap, shape, err);
}

/* One result row as the object change_from_row reads: the poll's own columns (up to m_key) by
 * name, and the row's columns as an object under SQLQ_CAPTURE_ROW. */
/* The number of exact-value columns at the end of a poll built from table t (capture_sql.c's
 * fixup_columns: one for each column sqlq_row_json_needs_fixup, in table order). */
static size_t fixup_count(const sqlq_capture *cap)
{
    size_t n = 0;
    for (size_t i = 0; i < cap->table->ncolumns; i++)
        n += sqlq_row_json_needs_fixup(cap->spec.dialect, &cap->table->columns[i]);
    return n;
}

/* Put the exact values (the last fixups of values) in place of the driver's in row. */
static bool apply_fixups(const sqlq_capture *cap, json_t *row, const json_t *values, size_t first)
{
    size_t at = first;
    for (size_t i = 0; i < cap->table->ncolumns; i++) {
        const sqlq_column *c = &cap->table->columns[i];
        if (!sqlq_row_json_needs_fixup(cap->spec.dialect, c))
            continue;
        json_t *v = json_object_get(row, c->name);
        const json_t *fix = json_array_get(values, at++);
        if (!v || !json_is_string(fix))
            continue;
        json_t *exact = sqlq_row_json_fixup(cap->spec.dialect, c, json_incref(v), fix);
        if (!exact || json_object_set_new(row, c->name, exact) != 0)
            return false;
    }
    return true;
}

static json_t *row_object(const sqlq_capture *cap, const json_t *cols, size_t split, size_t end,
                          const json_t *values)
{
    json_t *o = json_object(), *row = json_object();
    bool ok = o && row;
    for (size_t i = 0; ok && i < end; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(cols, i), "name"));
        json_t *v = json_array_get(values, i);
        ok = name && json_object_set(i <= split ? o : row, name, v) == 0;
    }
    if (ok && end < json_array_size(values))
        ok = apply_fixups(cap, row, values, end);
    if (ok && json_object_set_new(o, SQLQ_CAPTURE_ROW, row) == 0)
        return o;
    json_decref(o);
    json_decref(ok ? NULL : row);
    return NULL;
}

sqlq_result sqlq_capture_table_shape_poll(sqlq_capture *cap, const sqlq_capture_stmt *st,
                                    const sqlq_capture_values *v, json_t **out_rows,
                                    sqlq_error *err)
{
    *out_rows = NULL;
    json_t *cols = NULL, *values = NULL;
    sqlq_result r = sqlq_capture_query_values(cap, st, v, &cols, &values, err);
    if (r != SQLQ_OK)
        return r;
    size_t split = json_array_size(cols);
    for (size_t i = 0; split == json_array_size(cols) && i < split; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(cols, i), "name"));
        if (name && strcmp(name, SQLQ_CAPTURE_KEY_NOW) == 0)
            split = i;
    }
    size_t nfix = split < json_array_size(cols) ? fixup_count(cap) : 0;
    size_t end = json_array_size(cols) - nfix; /* the r.* part is (split, end) */
    json_t *shape = NULL, *rows = json_array();
    if (split == json_array_size(cols) || end <= split || !rows)
        r = sqlq_error_set(err, SQLQ_E_PARSE, false, "unexpected poll result from %s",
                           cap->names.table_key);
    if (r == SQLQ_OK && json_array_size(values) > 0)
        r = check_key(cap, json_array_get(json_array_get(values, 0), split), err);
    if (r == SQLQ_OK && !(shape = json_array()))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = split + 1; r == SQLQ_OK && i < end; i++)
        if (json_array_append(shape, json_array_get(cols, i)) != 0)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r == SQLQ_OK)
        r = check_row_shape(cap, shape, err);
    if (r == SQLQ_OK && cap->shape_moved) /* rows read with the old exact-value columns */
        r = sqlq_error_set(err, SQLQ_E_CONFLICT, true, "table %s changed shape: poll again",
                           cap->names.table_key);
    for (size_t i = 0; r == SQLQ_OK && i < json_array_size(values); i++)
        if (json_array_append_new(rows, row_object(cap, cols, split, end,
                                                   json_array_get(values, i))) != 0)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    json_decref(shape);
    json_decref(cols);
    json_decref(values);
    if (r != SQLQ_OK) {
        json_decref(rows);
        return r;
    }
    *out_rows = rows;
    return SQLQ_OK;
}
