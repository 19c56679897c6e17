/* backfill: the current rows of a table in key order, resumable (see the header).
 *
 * The --where filter is the one place sqlq pastes user text into SQL, by design: it is an
 * explicit filter the operator writes, like psql's -c. It is wrapped in parentheses on lines
 * of its own, so a trailing "-- comment" cannot swallow the key condition that follows. */
#include "backfill.h"

#include "backfill_version.h"
#include "catalog.h"
#include "change_source.h"
#include "cursor_column.h"
#include "json_int.h"
#include "sql_text.h"
#include "clock.h"
#include "dialect.h"
#include "keyset.h"
#include "log.h"
#include "row_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEY 32

struct sqlq_backfill {
    sqlq_db *db;
    sqlq_table *table;
    sqlq_catalog_names names;
    sqlq_keyset_col order[MAX_KEY];
    size_t norder;
    char *where;
    char *sql_first, *sql_after, *sql_count;
    size_t map_after[2 * MAX_KEY];
    size_t nmap_after;
    sqlq_cursor_state *state;
    sqlq_checkpoint cp;
    char *version_sql;              /* __sqlq_floor and the __sqlq_version expression */
    int nfloor;                     /* "?" of the floor in the page's statement, bound first */
    sqlq_keyset_col version_col;    /* cursor mode: the cursor column */
    sqlq_backfill_version_source vsource;
};

void sqlq_backfill_config_default(sqlq_backfill_config *c)
{
    memset(c, 0, sizeof(*c));
    c->name = "default";
    c->page_size = 500;
    c->lease_s = 60;
}

void sqlq_backfill_page_free(sqlq_backfill_page *p)
{
    if (!p)
        return;
    json_decref(p->keys);
    json_decref(p->rows);
    json_decref(p->versions);
    sqlq_checkpoint_clear(&p->end);
    memset(p, 0, sizeof(*p));
}

static sqlq_result add_filter(sqlq_buf *out, const char *where, bool *open_where)
{
    *open_where = false;
    if (!where || !*where)
        return SQLQ_OK;
    *open_where = true;
    return sqlq_buf_printf(out, " WHERE (\n%s\n)", where);
}

sqlq_result sqlq_backfill_page_sql(const sqlq_dialect *d, const sqlq_table *t, const char *where,
                                   const char *version_sql, bool after, int page_size,
                                   sqlq_buf *out, size_t *map, size_t map_cap, size_t *out_nmap,
                                   sqlq_error *err)
{
    *out_nmap = 0;
    sqlq_keyset_col order[MAX_KEY];
    if (t->nkey == 0 || t->nkey > MAX_KEY || page_size < 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "backfill needs a primary key of 1..%d "
                              "columns and a page size >= 1", MAX_KEY);
    for (size_t i = 0; i < t->nkey; i++) {
        const sqlq_column *c = &t->columns[t->key[i]];
        const char *why = NULL;
        sqlq_value_class cls;
        if (!sqlq_keyset_classify(d, c, &cls, &why))
            return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                                  "backfill cannot page through %s by its primary key column %s "
                                  "(%s): %s", t->name.name, c->name, c->type ? c->type : "?", why);
        order[i] = (sqlq_keyset_col){c->name, c->type, cls};
    }
    sqlq_result r = sqlq_buf_adds(out, "SELECT ");
    if (r == SQLQ_OK && d->limit_top)
        r = sqlq_buf_printf(out, "TOP (%d) ", page_size);
    for (size_t i = 0; r == SQLQ_OK && i < t->ncolumns; i++) {
        r = sqlq_buf_adds(out, i ? ", " : "");
        if (r == SQLQ_OK) /* exact values (row_json.h) */
            r = sqlq_row_json_select_sql(d, NULL, &t->columns[i], out);
        if (r == SQLQ_OK && sqlq_row_json_needs_text(d, &t->columns[i]))
            r = sqlq_buf_adds(out, " AS ");
        if (r == SQLQ_OK && sqlq_row_json_needs_text(d, &t->columns[i]))
            r = sqlq_dialect_quote_ident(d, t->columns[i].name, out);
    }
    for (size_t i = 0; r == SQLQ_OK && i < t->nkey; i++) {
        r = sqlq_buf_adds(out, ", ");
        if (r == SQLQ_OK)
            r = sqlq_keyset_value_sql(d, &order[i], out);
        char alias[32];
        snprintf(alias, sizeof(alias), "__sqlq_v%zu", i);
        if (r == SQLQ_OK)
            r = sqlq_buf_adds(out, " AS ");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_ident(d, alias, out);
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_printf(out, ", %s AS ", version_sql ? version_sql : "0");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_ident(d, SQLQ_BACKFILL_VERSION_COL, out);
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " FROM ");
    if (r == SQLQ_OK)
        r = sqlq_dialect_quote_table(d, &t->name, out);
    bool open_where = false;
    if (r == SQLQ_OK)
        r = add_filter(out, where, &open_where);
    if (r == SQLQ_OK && after) {
        r = sqlq_buf_adds(out, open_where ? " AND " : " WHERE ");
        if (r == SQLQ_OK)
            r = sqlq_keyset_after_sql(d, order, t->nkey, out, map, map_cap, out_nmap);
    }
    if (r == SQLQ_OK)
        r = sqlq_buf_adds(out, " ORDER BY ");
    if (r == SQLQ_OK)
        r = sqlq_keyset_order_sql(d, order, t->nkey, out);
    if (r == SQLQ_OK && !d->limit_top)
        r = sqlq_buf_printf(out, " LIMIT %d", page_size);
    return r == SQLQ_OK ? r : sqlq_error_set(err, r, false, "cannot build the backfill query");
}

/* The cursor column's checkpoint form: its value is the version, as the cursor source sends. */
static sqlq_result cursor_version_sql(sqlq_backfill *bf, const char *cursor, char **out,
                                      sqlq_error *err)
{
    sqlq_keyset_col *order = NULL;
    size_t n = 0;
    int soft = -1;
    sqlq_result r = sqlq_cursor_column_check(bf->db, bf->table, cursor, NULL, &order, &n, &soft,
                                             err);
    if (r != SQLQ_OK)
        return r;
    bf->version_col = order[0]; /* names borrowed from bf->table */
    sqlq_cursor_column_free(order, n);
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    r = sqlq_keyset_value_sql(sqlq_db_dialect(bf->db), &bf->version_col, &b);
    *out = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

/* The change log's or change tracking's version of the key, else the floor that outranks every
 * earlier message of the key (backfill_version.h), selected first as __sqlq_floor (the page's
 * floor, for repair manifests) and then as __sqlq_version: "<F> AS __sqlq_floor, <version>". */
static sqlq_result source_version_sql(sqlq_backfill *bf, bool *have,
                                      sqlq_backfill_version_source *kind, sqlq_error *err)
{
    char *floor = NULL, *v = NULL;
    bool param = false;
    sqlq_result r = sqlq_backfill_version_sql(bf->db, &bf->names, bf->table, &floor, &v, &param,
                                              kind, err);
    *have = r == SQLQ_OK && v;
    if (!*have)
        return r;
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    if (r == SQLQ_OK &&
        (sqlq_buf_adds(&b, floor) != SQLQ_OK || sqlq_buf_adds(&b, " AS ") != SQLQ_OK ||
         sqlq_dialect_quote_ident(sqlq_db_dialect(bf->db), SQLQ_BACKFILL_FLOOR_COL, &b) !=
             SQLQ_OK ||
         sqlq_buf_printf(&b, ", %s", v) != SQLQ_OK))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    free(floor);
    free(v);
    bf->version_sql = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    bf->nfloor = param ? 2 : 0;
    return r;
}

/* Which version the rows carry (docs/messages.md, "Versions"): the cursor value with
 * cursor_column, else the change log's or change tracking's version of the key, else 0. */
static sqlq_result choose_version(sqlq_backfill *bf, const sqlq_backfill_config *cfg,
                                  sqlq_error *err)
{
    if (cfg->cursor_column && *cfg->cursor_column) {
        bf->vsource = SQLQ_BACKFILL_VERSION_CURSOR;
        return cursor_version_sql(bf, cfg->cursor_column, &bf->version_sql, err);
    }
    bool have = false;
    sqlq_backfill_version_source kind = SQLQ_BACKFILL_VERSION_NONE;
    sqlq_result r = source_version_sql(bf, &have, &kind, err);
    if (r == SQLQ_OK && have)
        bf->vsource = kind;
    if (r == SQLQ_OK && !have)
        SQLQ_WARN("backfill_version_zero",
                  "table=%s note=\"no change log, change tracking or --cursor-column: every row "
                  "carries version 0, which any later change outranks; a change older than the "
                  "backfilled state that arrives after it would be applied over it\"",
                  bf->names.table_key);
    return r;
}

const char *sqlq_backfill_version_source_name(sqlq_backfill_version_source v)
{
    static const char *const names[] = {"none", "change_log", "change_tracking", "cursor"};
    return (unsigned)v < 4 ? names[v] : "?";
}

sqlq_backfill_version_source sqlq_backfill_version_source_of(const sqlq_backfill *bf)
{
    return bf->vsource;
}

static sqlq_result build(sqlq_backfill *bf, const sqlq_backfill_config *cfg, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(bf->db);
    const sqlq_table *t = bf->table;
    sqlq_buf b;
    size_t map[2 * MAX_KEY], n = 0;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_backfill_page_sql(d, t, bf->where, bf->version_sql, false,
                                           cfg->page_size, &b, map, 2 * MAX_KEY, &n, err);
    bf->sql_first = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    if (r == SQLQ_OK)
        r = sqlq_backfill_page_sql(d, t, bf->where, bf->version_sql, true, cfg->page_size, &b,
                                   bf->map_after, 2 * MAX_KEY, &bf->nmap_after, err);
    bf->sql_after = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
    sqlq_buf_free(&b);
    if (r == SQLQ_OK) {
        bool open_where = false;
        r = sqlq_buf_adds(&b, "SELECT count(*) FROM ");
        if (r == SQLQ_OK)
            r = sqlq_dialect_quote_table(d, &t->name, &b);
        if (r == SQLQ_OK)
            r = add_filter(&b, bf->where, &open_where);
        bf->sql_count = r == SQLQ_OK ? sqlq_buf_take(&b, NULL) : NULL;
        sqlq_buf_free(&b);
        if (r != SQLQ_OK)
            r = sqlq_error_set(err, r, false, "out of memory");
    }
    for (size_t i = 0; r == SQLQ_OK && i < t->nkey; i++) {
        const sqlq_column *c = &t->columns[t->key[i]];
        const char *why = NULL;
        (void)sqlq_keyset_classify(d, c, &bf->order[i].cls, &why); /* checked by page_sql */
        bf->order[i].name = c->name;
        bf->order[i].type = c->type;
    }
    bf->norder = t->nkey;
    return r;
}

/* Take the lease, then load, start or restart the run. */
static sqlq_result start_run(sqlq_backfill *bf, const sqlq_backfill_config *cfg, sqlq_error *err)
{
    bool leader = false;
    sqlq_result r = sqlq_cursor_state_acquire(bf->state, &leader, &bf->cp, err);
    if (r == SQLQ_OK && !leader) {
        sqlq_lease_info li;
        memset(&li, 0, sizeof(li));
        if (sqlq_cursor_state_read(bf->state, NULL, &li, NULL) != SQLQ_OK)
            snprintf(li.owner, sizeof(li.owner), "unknown");
        return sqlq_error_set(err, SQLQ_E_CONFLICT, false,
                              "backfill '%s' of %s is already running (owner %s, lease expires in "
                              "%lld ms); wait for it, or give this one another --bridge-name",
                              cfg->name, bf->names.table_key, li.owner,
                              (long long)(li.expires_ms - li.now_ms));
    }
    if (r != SQLQ_OK)
        return r;
    int64_t now = sqlq_clock_wall_ms();
    if (cfg->restart) {
        r = sqlq_cursor_state_reset(bf->state, now, err);
        sqlq_checkpoint_clear(&bf->cp);
        bf->cp.run_id = now;
    } else if (bf->cp.run_id == 0) {
        bf->cp.run_id = now;
        r = sqlq_cursor_state_commit(bf->state, &bf->cp, err);
    }
    if (r == SQLQ_OK)
        SQLQ_INFO("backfill_start", "name=%s table=%s run_id=%lld rows_done=%lld resumed=%s",
                  cfg->name, bf->names.table_key, (long long)bf->cp.run_id,
                  (long long)bf->cp.rows_done, bf->cp.key ? "yes" : "no");
    return r;
}

sqlq_result sqlq_backfill_open(sqlq_db *db, sqlq_db *state_db, const sqlq_backfill_config *cfg,
                               sqlq_backfill **out, sqlq_error *err)
{
    *out = NULL;
    char ns[160];
    const char *name = cfg->name && *cfg->name ? cfg->name : "default";
    if (snprintf(ns, sizeof(ns), "%s%s", SQLQ_BACKFILL_PREFIX, name) >= 129)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "backfill name '%s' is too long "
                              "(at most 119 bytes)", name);
    if (cfg->page_size < 1 || cfg->lease_s < 1)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "page size and lease must be >= 1");
    sqlq_backfill *bf = calloc(1, sizeof(*bf));
    if (!bf)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    bf->db = db;
    sqlq_result r = SQLQ_OK;
    if (cfg->where && *cfg->where && !(bf->where = strdup(cfg->where)))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r == SQLQ_OK)
        r = sqlq_catalog_lookup_keyed(db, cfg->table, ns, cfg->key_columns, &bf->table,
                                      &bf->names, err);
    if (r == SQLQ_OK)
        r = choose_version(bf, cfg, err);
    if (r == SQLQ_OK)
        r = build(bf, cfg, err);
    if (r == SQLQ_OK)
        r = sqlq_cursor_state_open(state_db ? state_db : db, ns, bf->names.table_key,
                                   cfg->instance_id, cfg->lease_s * 1000, &bf->state, err);
    if (r == SQLQ_OK)
        r = start_run(bf, cfg, err);
    if (r != SQLQ_OK) {
        sqlq_backfill_close(bf);
        return r;
    }
    *out = bf;
    return SQLQ_OK;
}

void sqlq_backfill_close(sqlq_backfill *bf)
{
    if (!bf)
        return;
    if (bf->state && sqlq_cursor_state_leader(bf->state)) {
        sqlq_error e;
        sqlq_error_clear(&e);
        if (sqlq_cursor_state_resign(bf->state, &e) != SQLQ_OK)
            SQLQ_WARN("backfill_resign_failed", "table=%s err=\"%s\"", bf->names.table_key, e.message);
    }
    sqlq_cursor_state_close(bf->state);
    sqlq_checkpoint_clear(&bf->cp);
    sqlq_table_free(bf->table);
    free(bf->where);
    free(bf->sql_first);
    free(bf->sql_after);
    free(bf->sql_count);
    free(bf->version_sql);
    free(bf);
}

const sqlq_table *sqlq_backfill_table(const sqlq_backfill *bf)
{
    return bf->table;
}

const char *sqlq_backfill_table_key(const sqlq_backfill *bf)
{
    return bf->names.table_key;
}

const sqlq_checkpoint *sqlq_backfill_checkpoint(const sqlq_backfill *bf)
{
    return &bf->cp;
}

sqlq_result sqlq_backfill_count(sqlq_backfill *bf, int64_t *out, sqlq_error *err)
{
    return sqlq_db_query_int(bf->db, bf->sql_count, NULL, 0, out, err);
}

/* The version column of a result row as an integer: the cursor's checkpoint form converted as
 * the cursor source converts it, or the log's / change tracking's bigint (text beyond 2^53). */
static bool row_version(const sqlq_backfill *bf, const json_t *v, int64_t *out)
{
    if (bf->vsource == SQLQ_BACKFILL_VERSION_CURSOR)
        return sqlq_keyset_version(&bf->version_col, v, out);
    return sqlq_json_int64(v, out);
}

/* Split one result row into key, row, version and end-of-page checkpoint values. */
static sqlq_result take_row(sqlq_backfill *bf, json_t *row, sqlq_backfill_page *out, bool last)
{
    json_t *key = json_object();
    json_t *ckey = last ? json_array() : NULL;
    bool ok = key && (!last || ckey);
    for (size_t i = 0; ok && i < bf->norder; i++) {
        const char *col = bf->order[i].name;
        json_t *v = json_object_get(row, col);
        ok = json_object_set_new(key, col, v ? json_deep_copy(v) : json_null()) == 0;
        char alias[32];
        snprintf(alias, sizeof(alias), "__sqlq_v%zu", i);
        json_t *cv = json_object_get(row, alias);
        if (ok && last)
            ok = cv && !json_is_null(cv) && json_array_append(ckey, cv) == 0;
        json_object_del(row, alias);
    }
    int64_t version = 0, floor = 0;
    ok = ok && row_version(bf, json_object_get(row, SQLQ_BACKFILL_VERSION_COL), &version);
    json_object_del(row, SQLQ_BACKFILL_VERSION_COL);
    json_t *fv = json_object_get(row, SQLQ_BACKFILL_FLOOR_COL);
    if (ok && fv && row_version(bf, fv, &floor) && floor > out->floor)
        out->floor = floor; /* one value for the whole statement */
    json_object_del(row, SQLQ_BACKFILL_FLOOR_COL);
    ok = ok && json_array_append_new(out->keys, key) == 0 &&
         json_array_append(out->rows, row) == 0 &&
         json_array_append_new(out->versions, json_integer((json_int_t)version)) == 0;
    if (!ok) {
        json_decref(ckey);
        return SQLQ_E_NOMEM;
    }
    if (last)
        out->end.key = ckey;
    return SQLQ_OK;
}

sqlq_result sqlq_backfill_next(sqlq_backfill *bf, sqlq_backfill_page *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    bool after = bf->cp.key != NULL;
    sqlq_param params[2 * MAX_KEY + 2];
    size_t np = (size_t)bf->nfloor; /* the floor's "?", bound first */
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; after && r == SQLQ_OK && i < bf->nmap_after; i++) {
        const json_t *v = json_array_get(bf->cp.key, bf->map_after[i]);
        r = v ? sqlq_keyset_param(&bf->order[bf->map_after[i]], v, &params[np + i], err)
              : sqlq_error_set(err, SQLQ_E_PARSE, false, "stored backfill checkpoint of %s does "
                               "not match its key", bf->names.table_key);
    }
    int64_t floor = 0;
    bool txn = false;
    if (r == SQLQ_OK && bf->nfloor > 0)
        r = sqlq_backfill_floor_begin(bf->db, &bf->names, &floor, &txn, err);
    for (size_t i = 0; i < np; i++)
        params[i] = sqlq_param_int(floor);
    json_t *rows = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_query(bf->db, after ? bf->sql_after : bf->sql_first, params,
                          np + (after ? bf->nmap_after : 0), &rows, err);
    if (txn && sqlq_backfill_floor_end(bf->db, r == SQLQ_OK, err) != SQLQ_OK && r == SQLQ_OK)
        r = err ? err->code : SQLQ_E_SQL;
    if (r != SQLQ_OK) {
        json_decref(rows);
        return r;
    }
    size_t n = json_array_size(rows);
    out->keys = json_array();
    out->rows = json_array();
    out->versions = json_array();
    if (!out->keys || !out->rows || !out->versions)
        r = SQLQ_E_NOMEM;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        r = take_row(bf, json_array_get(rows, i), out, i + 1 == n);
    json_decref(rows);
    if (r != SQLQ_OK) {
        sqlq_backfill_page_free(out);
        return sqlq_error_set(err, r, false, "reading a backfill page of %s: out of memory, or a "
                              "row without a usable version", bf->names.table_key);
    }
    out->count = n;
    char floor_text[24]; /* kept with the checkpoint: the next page's manifest names it */
    snprintf(floor_text, sizeof(floor_text), "%lld", (long long)out->floor);
    out->end.cursor_value = n > 0 ? strdup(floor_text) : NULL;
    if (n > 0 && !out->end.cursor_value) {
        sqlq_backfill_page_free(out);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    out->end.batch_id = bf->cp.batch_id + 1;
    out->end.rows_done = bf->cp.rows_done + (int64_t)n;
    out->end.run_id = bf->cp.run_id;
    return SQLQ_OK;
}

sqlq_result sqlq_backfill_commit(sqlq_backfill *bf, const sqlq_backfill_page *page, sqlq_error *err)
{
    if (page->count == 0)
        return SQLQ_OK;
    sqlq_result r = sqlq_cursor_state_commit(bf->state, &page->end, err);
    sqlq_checkpoint copy;
    if (r == SQLQ_OK && sqlq_checkpoint_copy(&copy, &page->end) != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r == SQLQ_OK) {
        sqlq_checkpoint_clear(&bf->cp);
        bf->cp = copy;
    }
    return r;
}

sqlq_result sqlq_backfill_renew(sqlq_backfill *bf, sqlq_error *err)
{
    return sqlq_cursor_state_renew(bf->state, err);
}

sqlq_result sqlq_backfill_finish(sqlq_backfill *bf, sqlq_error *err)
{
    bf->cp.finished = true;
    sqlq_result r = sqlq_cursor_state_commit(bf->state, &bf->cp, err);
    if (r != SQLQ_OK)
        bf->cp.finished = false;
    return r;
}
