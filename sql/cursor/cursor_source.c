/* cursor_source: changes of a table read by polling a monotonic column (see the header). */
#include "cursor_source.h"

#include "catalog.h"
#include "clock.h"
#include "cursor_column.h"
#include "cursor_lag.h"
#include "cursor_pending.h"
#include "cursor_query.h"
#include "cursor_shape.h"
#include "cursor_state.h"
#include "cursor_status.h"
#include "log.h"
#include "watermark.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sqlq_cursor_source {
    sqlq_db *db;
    sqlq_cursor_state *state;
    sqlq_table *table;
    sqlq_catalog_names names;
    char *bridge;
    sqlq_keyset_col *order; /* cursor, then key columns other than the cursor */
    size_t norder;
    const char **columns;
    int soft_delete; /* column index, -1 for none */
    int batch_size, lag_ms, lease_ms;
    char rule[160]; /* the lag in force and why (resolve_lag) */
    sqlq_start_from start_from;
    bool watermark;
    char *sql_first, *sql_after, *sql_last, *sql_max;
    size_t map_first[64], map_after[64], map_last[64];
    size_t nmap_first, nmap_after, nmap_last;
    sqlq_clock clock;
    uint64_t renewed_ms;
    bool started;           /* start_from handled */
    sqlq_checkpoint cp;     /* committed */
    sqlq_checkpoint read;   /* where the next poll starts (end of the last polled batch) */
    sqlq_cursor_pending pending;
    int attempts; /* counted abandons since the checkpoint last moved */
    sqlq_watermark wm;
};

/* ---- helpers ---------------------------------------------------------------------------- */

/* Forget everything polled but not committed: the next poll starts at the checkpoint. */
static sqlq_result rewind_to_checkpoint(sqlq_cursor_source *cs)
{
    sqlq_cursor_pending_clear(&cs->pending);
    sqlq_checkpoint_clear(&cs->read);
    return sqlq_checkpoint_copy(&cs->read, &cs->cp);
}

static void free_changes(sqlq_change *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_decref(items[i].key);
        json_decref(items[i].row);
    }
    free(items);
}

/* ---- open -------------------------------------------------------------------------------- */

static sqlq_result build_queries(sqlq_cursor_source *cs, sqlq_error *err)
{
    sqlq_cursor_query q = {
        .dialect = sqlq_db_dialect(cs->db),
        .table = &cs->table->name,
        .columns = cs->columns,
        .ncolumns = cs->table->ncolumns,
        .order = cs->order,
        .norder = cs->norder,
        .defs = cs->table->columns,
        .safety_lag_ms = cs->lag_ms,
        .watermark = cs->watermark,
        .limit = cs->batch_size,
    };
    struct {
        bool after, descending, wm;
        char **out;
        size_t *map, *nmap;
    } v[] = {{false, false, cs->watermark, &cs->sql_first, cs->map_first, &cs->nmap_first},
             {true, false, cs->watermark, &cs->sql_after, cs->map_after, &cs->nmap_after},
             {false, true, false, &cs->sql_last, cs->map_last, &cs->nmap_last}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        sqlq_buf b;
        sqlq_buf_init(&b, 0);
        q.after = v[i].after;
        q.descending = v[i].descending;
        q.watermark = v[i].wm;
        q.limit = v[i].descending ? 1 : cs->batch_size;
        sqlq_result r = sqlq_cursor_query_sql(&q, &b, v[i].map, 64, v[i].nmap);
        if (r != SQLQ_OK) {
            sqlq_buf_free(&b);
            return sqlq_error_set(err, r, false, "cannot build the poll query of %s",
                                  cs->names.table_key);
        }
        *v[i].out = sqlq_buf_take(&b, NULL);
    }
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_buf_adds(&b, "SELECT max(");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(q.dialect, cs->order[0].name, &b);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(&b, ") AS m FROM ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(q.dialect, &cs->table->name, &b);
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "cannot build the watermark query");
    cs->sql_max = sqlq_buf_take(&b, NULL);
    return SQLQ_OK;
}

const char *sqlq_cursor_source_rule(const sqlq_cursor_source *cs)
{
    return cs->rule;
}

int sqlq_cursor_source_lag_ms(const sqlq_cursor_source *cs)
{
    return cs->lag_ms;
}

static sqlq_result apply_config(sqlq_cursor_source *cs, const sqlq_capture_config *cfg,
                                sqlq_error *err)
{
    if (cfg->max_batch_size < 1 || cfg->lease_s < 1 || cfg->safety_lag_ms < SQLQ_CURSOR_LAG_DEFAULT)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "cursor source: max_batch_size and lease_s must be >= 1 and "
                              "safety_lag_ms >= 0 (or -1: the database's default)");
    if (cfg->lease_s > 86400 || cfg->safety_lag_ms > 86400000)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "cursor source: lease_s and safety_lag_ms must be at most a day");
    cs->batch_size = cfg->max_batch_size;
    cs->lease_ms = cfg->lease_s * 1000;
    cs->lag_ms = cfg->safety_lag_ms;
    cs->start_from = cfg->start_from;
    cs->bridge = strdup(cfg->bridge_name && *cfg->bridge_name ? cfg->bridge_name : "default");
    return cs->bridge ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

sqlq_result sqlq_cursor_source_open(sqlq_db *db, sqlq_db *state_db, const sqlq_capture_config *cfg,
                                    sqlq_cursor_source **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_cursor_source *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    cs->db = db;
    cs->clock = sqlq_clock_system(NULL);
    sqlq_result r = apply_config(cs, cfg, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_lookup_keyed(db, cfg->table, cs->bridge, cfg->key_columns, &cs->table,
                                      &cs->names, err);
    if (r == SQLQ_OK)
        r = sqlq_cursor_column_check(db, cs->table, cfg->cursor_column, cfg->soft_delete_column,
                                 &cs->order, &cs->norder, &cs->soft_delete, err);
    if (r == SQLQ_OK)
        cs->lag_ms = sqlq_cursor_lag_resolve(sqlq_db_dialect(db), cs->order[0].cls, cs->lag_ms,
                                             cs->rule, sizeof(cs->rule));
    if (r == SQLQ_OK) {
        cs->watermark = cs->order[0].cls == SQLQ_VALUE_INT && cs->lag_ms > 0;
        cs->columns = calloc(cs->table->ncolumns, sizeof(*cs->columns));
        if (!cs->columns)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
        for (size_t i = 0; r == SQLQ_OK && i < cs->table->ncolumns; i++)
            cs->columns[i] = cs->table->columns[i].name;
    }
    if (r == SQLQ_OK)
        r = build_queries(cs, err);
    if (r == SQLQ_OK)
        r = sqlq_cursor_state_open(state_db ? state_db : db, cs->bridge, cs->names.table_key,
                                   cfg->instance_id, cs->lease_ms, &cs->state, err);
    if (r == SQLQ_OK) /* for sqlq status */
        sqlq_cursor_status_note(state_db ? state_db : db, cs->bridge, cs->names.table_key,
                                cs->rule);
    if (r != SQLQ_OK) {
        sqlq_cursor_source_close(cs);
        return r;
    }
    SQLQ_INFO("cursor_source_open",
              "bridge=%s table=%s cursor=%s class=%s lag_ms=%d batch=%d rule=\"%s\"", cs->bridge,
              cs->names.table_key, cs->order[0].name, sqlq_value_class_name(cs->order[0].cls),
              cs->lag_ms, cs->batch_size, cs->rule);
    if (cs->lag_ms == 0 && cs->order[0].cls != SQLQ_VALUE_ROWVERSION &&
        !sqlq_db_dialect(db)->serial_writer)
        SQLQ_WARN("cursor_source_no_lag",
                  "table=%s note=\"safety_lag_ms 0 was set: a transaction that commits after a "
                  "later cursor value was read is skipped for good\"",
                  cs->names.table_key);
    *out = cs;
    return SQLQ_OK;
}

void sqlq_cursor_source_close(sqlq_cursor_source *cs)
{
    if (!cs)
        return;
    if (cs->state && sqlq_cursor_state_leader(cs->state)) {
        sqlq_error e;
        sqlq_error_clear(&e);
        if (sqlq_cursor_state_resign(cs->state, &e) != SQLQ_OK)
            SQLQ_WARN("cursor_resign_failed", "table=%s err=\"%s\"", cs->names.table_key, e.message);
    }
    sqlq_cursor_state_close(cs->state);
    sqlq_cursor_pending_clear(&cs->pending);
    sqlq_checkpoint_clear(&cs->cp);
    sqlq_checkpoint_clear(&cs->read);
    sqlq_cursor_column_free(cs->order, cs->norder);
    free(cs->columns);
    free(cs->sql_first);
    free(cs->sql_after);
    free(cs->sql_last);
    free(cs->sql_max);
    free(cs->bridge);
    sqlq_table_free(cs->table);
    free(cs);
}

const sqlq_table *sqlq_cursor_source_table(const sqlq_cursor_source *cs)
{
    return cs->table;
}

bool sqlq_cursor_source_leader(const sqlq_cursor_source *cs)
{
    return sqlq_cursor_state_leader(cs->state);
}

/* ---- values ------------------------------------------------------------------------------ */

static sqlq_result version_of(const sqlq_cursor_source *cs, const json_t *v, int64_t *out,
                              sqlq_error *err)
{
    const sqlq_keyset_col *c = &cs->order[0];
    if (sqlq_keyset_version(c, v, out))
        return SQLQ_OK;
    return sqlq_error_set(err, SQLQ_E_PARSE, false,
                          "cursor %s of %s holds a value that is not %s: %.60s", c->name,
                          cs->names.table_key,
                          c->cls == SQLQ_VALUE_INT || c->cls == SQLQ_VALUE_ROWVERSION
                              ? "an integer"
                              : "an ISO 8601 time",
                          json_is_string(v) ? json_string_value(v) : "?");
}

/* Bind checkpoint `at` and the watermark per map. */
static sqlq_result bind(const sqlq_cursor_source *cs, const sqlq_checkpoint *at,
                        const size_t *map, size_t nmap, const json_t *cursor_json,
                        int64_t watermark, sqlq_param *out, sqlq_error *err)
{
    for (size_t i = 0; i < nmap; i++) {
        if (map[i] == SQLQ_CURSOR_PARAM_WATERMARK) {
            out[i] = sqlq_param_int(watermark);
            continue;
        }
        const json_t *v = map[i] == 0 ? cursor_json : json_array_get(at->key, map[i] - 1);
        if (!v)
            return sqlq_error_set(err, SQLQ_E_PARSE, false,
                                  "stored checkpoint of %s does not match its key columns",
                                  cs->names.table_key);
        sqlq_result r = sqlq_keyset_param(&cs->order[map[i]], v, &out[i], err);
        if (r != SQLQ_OK)
            return r;
    }
    return SQLQ_OK;
}

/* The checkpoint a row ends at: its cursor and key values in checkpoint form. */
static sqlq_result checkpoint_of_row(const sqlq_cursor_source *cs, const json_t *row,
                                     sqlq_checkpoint *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    char name[32];
    snprintf(name, sizeof(name), "%s0", SQLQ_CURSOR_VALUE_PREFIX);
    out->cursor_value = sqlq_keyset_value_text(json_object_get(row, name));
    out->key = json_array();
    bool ok = out->cursor_value && out->key;
    for (size_t i = 1; ok && i < cs->norder; i++) {
        snprintf(name, sizeof(name), "%s%zu", SQLQ_CURSOR_VALUE_PREFIX, i);
        json_t *v = json_object_get(row, name);
        ok = v && !json_is_null(v) && json_array_append(out->key, v) == 0;
    }
    if (!ok) {
        sqlq_checkpoint_clear(out);
        return sqlq_error_set(err, SQLQ_E_PARSE, false,
                              "a row of %s has no usable cursor or key value", cs->names.table_key);
    }
    return SQLQ_OK;
}

/* Forward a local error to the caller's (first error wins). */
static sqlq_result forward(sqlq_error *err, const sqlq_error *e)
{
    if (err && err->code == SQLQ_OK)
        *err = *e;
    return e->code;
}

/* ---- lease ------------------------------------------------------------------------------- */

static sqlq_result ensure_lease(sqlq_cursor_source *cs, bool *out_leader, sqlq_error *err)
{
    *out_leader = false;
    uint64_t now = sqlq_clock_now_ms(&cs->clock);
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_cursor_state_leader(cs->state)) {
        if (now - cs->renewed_ms < (uint64_t)cs->lease_ms / 3) {
            *out_leader = true;
            return SQLQ_OK;
        }
        sqlq_result r = sqlq_cursor_state_renew(cs->state, &e);
        if (r == SQLQ_OK) {
            cs->renewed_ms = now;
            *out_leader = true;
            return SQLQ_OK;
        }
        if (r != SQLQ_E_LEASE_LOST)
            return forward(err, &e);
        sqlq_cursor_pending_clear(&cs->pending); /* another instance re-reads them */
        return SQLQ_OK;
    }
    sqlq_checkpoint cp;
    memset(&cp, 0, sizeof(cp));
    bool leader = false;
    sqlq_result r = sqlq_cursor_state_acquire(cs->state, &leader, &cp, err);
    if (r != SQLQ_OK || !leader)
        return r;
    sqlq_checkpoint_clear(&cs->cp);
    cs->cp = cp;
    cs->attempts = 0;
    cs->started = false;
    sqlq_watermark_init(&cs->wm, (uint64_t)cs->lag_ms);
    cs->renewed_ms = now;
    *out_leader = true;
    r = rewind_to_checkpoint(cs);
    return r == SQLQ_OK ? r : sqlq_error_set(err, r, false, "out of memory");
}

/* start_from now on a table never read: the checkpoint becomes its current last row. */
static sqlq_result start(sqlq_cursor_source *cs, sqlq_error *err)
{
    if (cs->start_from != SQLQ_START_NOW || cs->cp.cursor_value || cs->cp.batch_id > 0) {
        cs->started = true;
        return SQLQ_OK;
    }
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(cs->db, cs->sql_last, NULL, 0, &rows, err);
    if (r == SQLQ_OK && json_array_size(rows) > 0) {
        sqlq_checkpoint next;
        r = checkpoint_of_row(cs, json_array_get(rows, 0), &next, err);
        if (r == SQLQ_OK)
            r = sqlq_cursor_state_commit(cs->state, &next, err);
        if (r == SQLQ_OK) {
            sqlq_checkpoint_clear(&cs->cp);
            cs->cp = next;
            r = rewind_to_checkpoint(cs);
            SQLQ_INFO("cursor_start_now", "table=%s cursor_value=%s", cs->names.table_key,
                      cs->cp.cursor_value);
        } else {
            sqlq_checkpoint_clear(&next);
        }
    }
    json_decref(rows);
    if (r == SQLQ_OK)
        cs->started = true;
    return r;
}

/* Integer cursors with a lag: sample the maximum, read up to what was seen lag ms ago. */
static sqlq_result watermark(sqlq_cursor_source *cs, bool *have, int64_t *out, sqlq_error *err)
{
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(cs->db, cs->sql_max, NULL, 0, &rows, err);
    const json_t *m = json_object_get(json_array_get(rows, 0), "m");
    uint64_t now = sqlq_clock_now_ms(&cs->clock);
    sqlq_param p;
    if (r == SQLQ_OK && m && !json_is_null(m) &&
        (r = sqlq_keyset_param(&cs->order[0], m, &p, err)) == SQLQ_OK)
        sqlq_watermark_observe(&cs->wm, now, p.i64);
    json_decref(rows);
    *have = r == SQLQ_OK && sqlq_watermark_bound(&cs->wm, now, out);
    return r;
}

/* ---- poll -------------------------------------------------------------------------------- */

static sqlq_result take_row(sqlq_cursor_source *cs, json_t *row, sqlq_change *ch,
                            sqlq_error *err)
{
    char name[32];
    snprintf(name, sizeof(name), "%s0", SQLQ_CURSOR_VALUE_PREFIX);
    sqlq_result r = version_of(cs, json_object_get(row, name), &ch->version, err);
    if (r != SQLQ_OK)
        return r;
    ch->key = json_object();
    for (size_t k = 0; ch->key && k < cs->table->nkey; k++) {
        const char *col = cs->table->columns[cs->table->key[k]].name;
        json_t *v = json_object_get(row, col);
        json_object_set_new(ch->key, col, v ? json_deep_copy(v) : json_null());
    }
    if (!ch->key)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; i < cs->norder; i++) {
        snprintf(name, sizeof(name), "%s%zu", SQLQ_CURSOR_VALUE_PREFIX, i);
        json_object_del(row, name);
    }
    bool deleted = cs->soft_delete >= 0 &&
                   sqlq_cursor_column_soft_deleted(json_object_get(row, cs->table->columns[cs->soft_delete].name));
    ch->op = deleted ? SQLQ_OP_DELETE : SQLQ_OP_UPDATE;
    ch->row = deleted ? NULL : json_incref(row);
    ch->attempts = cs->attempts + 1;
    return SQLQ_OK;
}

static sqlq_result take_rows(sqlq_cursor_source *cs, json_t *rows, sqlq_change_batch *out,
                             sqlq_error *err)
{
    size_t n = json_array_size(rows);
    if (n == 0)
        return SQLQ_OK;
    sqlq_change *items = calloc(n, sizeof(*items));
    sqlq_result r = items ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_checkpoint end, read;
    memset(&end, 0, sizeof(end));
    memset(&read, 0, sizeof(read));
    if (r == SQLQ_OK) /* before take_row strips the checkpoint columns */
        r = checkpoint_of_row(cs, json_array_get(rows, n - 1), &end, err);
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        r = take_row(cs, json_array_get(rows, i), &items[i], err);
    int64_t id = sqlq_cursor_pending_next_id(&cs->pending, cs->cp.batch_id);
    if (r == SQLQ_OK && (sqlq_checkpoint_copy(&read, &end) != SQLQ_OK ||
                         sqlq_cursor_pending_add(&cs->pending, id, &end, items, n) != SQLQ_OK))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r != SQLQ_OK) {
        free_changes(items, n);
        sqlq_checkpoint_clear(&end);
        sqlq_checkpoint_clear(&read);
        return r;
    }
    sqlq_checkpoint_clear(&cs->read); /* the next poll starts after this batch */
    cs->read = read;
    out->items = items;
    out->count = n;
    out->full = n == (size_t)cs->batch_size;
    SQLQ_DEBUG("cursor_polled", "table=%s rows=%zu batch_id=%lld cursor_value=%s",
               cs->names.table_key, n, (long long)id, read.cursor_value);
    return SQLQ_OK;
}

/* ---- the table's shape ------------------------------------------------------------------- */

/* After a poll query (which ran, or failed with `ran`): the table described again
 * (cursor_shape.h). The same: `ran`. Other columns: followed, *out_again (read the batch again
 * with the new column list). Another key, cursor or soft-delete column: SQLQ_E_INVALID. */
static sqlq_result follow_shape(sqlq_cursor_source *cs, sqlq_result ran, bool *out_again,
                                sqlq_error *err)
{
    *out_again = false;
    sqlq_cursor_shape now;
    bool changed = false;
    sqlq_result r = sqlq_cursor_shape_check(cs->db, cs->bridge, cs->names.table_key, cs->table,
                                            cs->order, cs->norder, cs->soft_delete, ran,
                                            &changed, &now, err);
    if (r != SQLQ_OK || !changed)
        return r;
    sqlq_cursor_column_free(cs->order, cs->norder);
    free(cs->columns);
    free(cs->sql_first);
    free(cs->sql_after);
    free(cs->sql_last);
    free(cs->sql_max);
    sqlq_table_free(cs->table);
    cs->table = now.table, cs->order = now.order, cs->norder = now.norder;
    cs->soft_delete = now.soft_delete, cs->columns = now.columns;
    *out_again = true;
    return build_queries(cs, err);
}

/* One read of the next batch's rows with the current column list. */
static sqlq_result read_rows(sqlq_cursor_source *cs, int64_t wm, json_t **rows, sqlq_error *err)
{
    bool after = cs->read.cursor_value != NULL;
    json_t *cursor_json = after ? sqlq_keyset_value_json(&cs->order[0], cs->read.cursor_value) : NULL;
    sqlq_param params[64];
    size_t nmap = after ? cs->nmap_after : cs->nmap_first;
    sqlq_result r = bind(cs, &cs->read, after ? cs->map_after : cs->map_first, nmap, cursor_json,
                         wm, params, err);
    if (r == SQLQ_OK)
        r = sqlq_db_query(cs->db, after ? cs->sql_after : cs->sql_first, params, nmap, rows, err);
    json_decref(cursor_json);
    return r;
}

sqlq_result sqlq_cursor_source_poll(sqlq_cursor_source *cs, sqlq_change_batch *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    bool leader = false;
    sqlq_result r = ensure_lease(cs, &leader, err);
    if (r != SQLQ_OK || !leader)
        return r;
    if (!cs->started && (r = start(cs, err)) != SQLQ_OK)
        return r;
    int64_t wm = 0;
    if (cs->watermark) {
        bool have = false;
        r = watermark(cs, &have, &wm, err);
        if (r == SQLQ_OK && !have) /* rows were seen: readable once the lag has passed */
            out->held_back_ms = sqlq_watermark_wait_ms(&cs->wm, sqlq_clock_now_ms(&cs->clock));
        if (r != SQLQ_OK || !have)
            return r;
    }
    /* The query names the columns it reads: the table is described after it. A column added,
     * dropped or renamed before the query ran is found then, and the batch read again with the
     * new list (nothing is committed before take_rows). */
    json_t *rows = NULL;
    bool again = true;
    for (int round = 0; again && round < 2; round++) {
        json_decref(rows);
        rows = NULL;
        r = read_rows(cs, wm, &rows, err);
        if (r == SQLQ_OK || r == SQLQ_E_SQL)
            r = follow_shape(cs, r, &again, err);
        again = again && r == SQLQ_OK;
    }
    if (r == SQLQ_OK && again)
        r = sqlq_error_set(err, SQLQ_E_SQL, true, "table %s changed twice during one poll",
                           cs->names.table_key);
    if (r == SQLQ_OK)
        r = take_rows(cs, rows, out, err);
    json_decref(rows);
    return r;
}

/* ---- release, commit --------------------------------------------------------------------- */

/* Commit the end of the longest prefix of fully delivered batches. */
static sqlq_result commit_ready(sqlq_cursor_source *cs, sqlq_error *err)
{
    int64_t rows = 0;
    size_t k = sqlq_cursor_pending_ready(&cs->pending, &rows);
    if (k == 0)
        return SQLQ_OK;
    const sqlq_cursor_batch *last = &cs->pending.batches[k - 1];
    sqlq_checkpoint next = {.cursor_value = last->end.cursor_value,
                            .key = last->end.key,
                            .batch_id = last->batch_id,
                            .rows_done = cs->cp.rows_done + rows};
    sqlq_result r = sqlq_cursor_state_commit(cs->state, &next, err);
    if (r == SQLQ_E_LEASE_LOST) {
        (void)rewind_to_checkpoint(cs);
        return r;
    }
    if (r != SQLQ_OK)
        return r; /* kept: the next release or advance tries again */
    sqlq_checkpoint copy;
    if (sqlq_checkpoint_copy(&copy, &next) != SQLQ_OK)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_checkpoint_clear(&cs->cp);
    cs->cp = copy;
    cs->attempts = 0;
    cs->renewed_ms = sqlq_clock_now_ms(&cs->clock);
    sqlq_cursor_pending_drop(&cs->pending, k);
    SQLQ_DEBUG("cursor_committed", "table=%s batch_id=%lld cursor_value=%s rows_done=%lld",
               cs->names.table_key, (long long)cs->cp.batch_id, cs->cp.cursor_value,
               (long long)cs->cp.rows_done);
    return SQLQ_OK;
}

sqlq_result sqlq_cursor_source_release(sqlq_cursor_source *cs, const sqlq_change *changes,
                                       size_t n, size_t *out_lost, sqlq_error *err)
{
    size_t lost = 0;
    for (size_t i = 0; i < n; i++)
        if (!sqlq_cursor_pending_mark(&cs->pending, &changes[i]))
            lost++;
    sqlq_result r = commit_ready(cs, err);
    if (r == SQLQ_E_LEASE_LOST)
        lost = n;
    if (out_lost)
        *out_lost = lost;
    return r;
}

sqlq_result sqlq_cursor_source_renew(sqlq_cursor_source *cs, const sqlq_change *changes, size_t n,
                                     sqlq_error *err)
{
    (void)changes;
    (void)n;
    if (!sqlq_cursor_state_leader(cs->state)) /* another handle of this instance polls */
        return sqlq_cursor_state_renew_owner(cs->state, err);
    sqlq_result r = sqlq_cursor_state_renew(cs->state, err);
    if (r == SQLQ_OK)
        cs->renewed_ms = sqlq_clock_now_ms(&cs->clock);
    else if (r == SQLQ_E_LEASE_LOST)
        (void)rewind_to_checkpoint(cs);
    return r;
}

sqlq_result sqlq_cursor_source_abandon(sqlq_cursor_source *cs, const sqlq_change *changes,
                                       size_t n, bool count_attempt, sqlq_error *err)
{
    (void)changes;
    (void)n;
    if (count_attempt)
        cs->attempts++;
    sqlq_result r = rewind_to_checkpoint(cs);
    return r == SQLQ_OK ? r : sqlq_error_set(err, r, false, "out of memory");
}

sqlq_result sqlq_cursor_source_advance(sqlq_cursor_source *cs, int64_t *out_version,
                                       sqlq_error *err)
{
    sqlq_result r = commit_ready(cs, err);
    if (out_version)
        *out_version = cs->cp.batch_id;
    return r;
}

/* ---- status ------------------------------------------------------------------------------ */

static sqlq_result count_after(sqlq_cursor_source *cs, const sqlq_checkpoint *at, long long *out,
                               sqlq_error *err)
{
    sqlq_cursor_query q = {.dialect = sqlq_db_dialect(cs->db),
                           .table = &cs->table->name,
                           .order = cs->order,
                           .norder = cs->norder,
                           .safety_lag_ms = cs->lag_ms,
                           .after = at->cursor_value != NULL,
                           .count = true,
                           .limit = 1};
    size_t map[64], nmap = 0;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_cursor_query_sql(&q, &b, map, 64, &nmap);
    json_t *cursor_json = q.after ? sqlq_keyset_value_json(&cs->order[0], at->cursor_value) : NULL;
    sqlq_param params[64];
    if (r != SQLQ_OK)
        r = sqlq_error_set(err, r, false, "cannot build the count query");
    if (r == SQLQ_OK)
        r = bind(cs, at, map, nmap, cursor_json, 0, params, err);
    int64_t n = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(cs->db, sqlq_buf_str(&b), params, nmap, &n, err);
    *out = (long long)n;
    json_decref(cursor_json);
    sqlq_buf_free(&b);
    return r;
}

sqlq_result sqlq_cursor_source_status_get(sqlq_cursor_source *cs, sqlq_capture_status *out,
                                          sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    sqlq_checkpoint cp;
    sqlq_lease_info lease;
    sqlq_result r = sqlq_cursor_state_read(cs->state, &cp, &lease, err);
    if (r != SQLQ_OK)
        return r;
    out->sync_version = cp.batch_id;
    r = count_after(cs, &cp, &out->pending, err);
    out->leased = (long long)sqlq_cursor_pending_outstanding(&cs->pending);
    out->owners = json_object();
    if (out->owners && lease.owner[0] && lease.expires_ms > lease.now_ms)
        json_object_set_new(out->owners, lease.owner, json_integer(1));
    sqlq_checkpoint_clear(&cp);
    return r;
}
