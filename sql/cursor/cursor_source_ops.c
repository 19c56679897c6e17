/* cursor_source_ops: the cursor source (cursor_source.h) behind the change-source seam
 * (change_source.h): it keeps its own lease (one a table) and checkpoint, so every capture
 * call is passed to it; setup installs nothing and says what a cursor cannot see. */
#include "cursor_source.h"

#include "catalog.h"
#include "change_source.h"
#include "cursor_column.h"
#include "cursor_state.h"
#include "table_key.h"

/* What the cursor cannot give: a predicate on changes, changed columns, before images. */
static sqlq_result check_config(const sqlq_capture_config *cfg, sqlq_error *err)
{
    if (cfg->where && cfg->where[0])
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "key where: not available with source cursor (change log and "
                              "change tracking only)");
    if (cfg->changed || cfg->before_image)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "key %s: not available with source cursor (a cursor sees rows, not "
                              "changes; use the change log)",
                              cfg->changed ? "changed" : "before_image");
    return SQLQ_OK;
}

static sqlq_result open_cursor(sqlq_db *db, const sqlq_capture_config *cfg, void **out,
                               sqlq_error *err)
{
    sqlq_result r = check_config(cfg, err);
    sqlq_cursor_source *cs = NULL;
    if (r == SQLQ_OK)
        r = sqlq_cursor_source_open(db, NULL, cfg, &cs, err);
    *out = cs;
    return r;
}

static void close_cursor(void *src)
{
    sqlq_cursor_source_close(src);
}

static const sqlq_table *table(const void *src)
{
    return sqlq_cursor_source_table(src);
}

static sqlq_result poll(void *src, sqlq_change_batch *out, sqlq_error *err)
{
    return sqlq_cursor_source_poll(src, out, err);
}

static sqlq_result release(void *src, const sqlq_change *changes, size_t n, size_t *out_lost,
                           sqlq_error *err)
{
    return sqlq_cursor_source_release(src, changes, n, out_lost, err);
}

/* One lease covers the table: none of the changes is lost on its own. */
static sqlq_result renew(void *src, const sqlq_change *changes, size_t n, size_t *out_lost,
                         sqlq_error *err)
{
    if (out_lost)
        *out_lost = 0;
    return sqlq_cursor_source_renew(src, changes, n, err);
}

static sqlq_result abandon(void *src, const sqlq_change *changes, size_t n, bool count_attempt,
                           sqlq_error *err)
{
    return sqlq_cursor_source_abandon(src, changes, n, count_attempt, err);
}

static sqlq_result advance(void *src, int64_t *out_version, sqlq_error *err)
{
    return sqlq_cursor_source_advance(src, out_version, err);
}

static sqlq_result status(void *src, sqlq_capture_status *out, sqlq_error *err)
{
    return sqlq_cursor_source_status_get(src, out, err);
}

/* The table, its key and the cursor column, changing nothing. */
static sqlq_result check(sqlq_db *db, const sqlq_capture_config *cfg, json_t *warnings,
                         sqlq_error *err)
{
    (void)warnings;
    sqlq_table_name tn;
    sqlq_table *t = NULL;
    sqlq_keyset_col *order = NULL;
    size_t norder = 0;
    int soft = -1;
    sqlq_result r = check_config(cfg, err);
    if (r == SQLQ_OK)
        r = sqlq_table_name_parse(cfg->table, &tn, err);
    if (r == SQLQ_OK)
        r = sqlq_table_key_describe(db, &tn, cfg->key_columns, &t, err);
    if (r == SQLQ_OK)
        r = sqlq_cursor_column_check(db, t, cfg->cursor_column, cfg->soft_delete_column, &order,
                                     &norder, &soft, err);
    sqlq_cursor_column_free(order, norder);
    sqlq_table_free(t);
    return r;
}

/* Nothing is installed: the column is checked, and what a cursor cannot see said plainly. */
static sqlq_result install(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    const sqlq_capture_config *cfg = s->cfg;
    sqlq_result r = sqlq_capture_check(db, cfg, err);
    if (r != SQLQ_OK)
        return r;
    const char *t = cfg->table;
    bool ok = sqlq_source_setup_say(s, "%s: cursor source on column %s: nothing installed in the "
                                       "table (read access is enough; the bridge keeps its "
                                       "checkpoint in sqlq's state tables)",
                                    t, cfg->cursor_column);
    if (cfg->soft_delete_column)
        ok = ok && sqlq_source_setup_say(s, "%s: note: hard deletes (DELETE) are NOT visible to a "
                                            "cursor; rows with %s set are published as deletes",
                                         t, cfg->soft_delete_column);
    else
        ok = ok && sqlq_source_setup_say(s, "%s: note: deletes are NOT visible to a cursor: use a "
                                            "soft-delete column (--soft-delete-column) or the "
                                            "change log (sqlq setup without --source cursor)",
                                         t);
    ok = ok && sqlq_source_setup_say(s, "%s: note: rows committed later than --safety-lag-ms "
                                        "after their cursor value are never read (see "
                                        "docs/cursor-source.md)",
                                     t);
    return ok ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

/* The cursor checkpoints of the table (of one bridge). */
static sqlq_result drop(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    long long removed = 0;
    sqlq_result r =
        sqlq_catalog_lookup_keyed(db, s->cfg->table, NULL, SQLQ_CATALOG_ANY_KEY, &t, &n, err);
    if (r == SQLQ_OK)
        r = sqlq_cursor_state_forget(db, n.table_key, s->cfg->bridge_name, &removed, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_drop_if_unused(db, NULL, err);
    sqlq_table_free(t);
    if (r == SQLQ_OK &&
        !sqlq_source_setup_say(s, "%s: %lld cursor checkpoint%s removed (nothing was installed "
                                  "in the table)",
                               s->cfg->table, removed, removed == 1 ? "" : "s"))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    return r;
}

const sqlq_change_source_ops sqlq_cursor_change_source = {
    .name = "cursor",
    .title = "cursor",
    .kind = SQLQ_SOURCE_CURSOR,
    .open = open_cursor,
    .close = close_cursor,
    .table = table,
    .poll = poll,
    .release = release,
    .renew = renew,
    .abandon = abandon,
    .advance = advance,
    .status = status,
    .check = check,
    .install = install,
    .drop = drop,
};
