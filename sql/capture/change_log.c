/* change_log: log table + row triggers keeping the latest version and operation per key; the
 * triggers are each database's (change_log_internal.h: sqlq_change_log_ops).
 *
 * Log table (catalog.h names): the key columns with the user's types, sqlq_version, sqlq_op
 * ('I', 'U', 'D'), sqlq_since (the version whose insert created the key's current row; NULL
 * when that is older than the log), primary key = the key. Every trigger upserts the key's
 * row (PostgreSQL: inserted rows once per INSERT statement), so the log holds one row per key
 * with its latest change. An UPDATE that changes the key logs a delete of the old key and an
 * insert of the new one.
 *
 * Versions. SQLite: one above the log's newest version and a floor; one writer at a time, so
 * versions commit in order. PostgreSQL: nextval of the log's sequence, evaluated inside the
 * upsert into the log, which holds the log's ROW EXCLUSIVE lock before it runs (the plan cache
 * locks a statement's target before execution); readers bound what they read by the holders
 * of that lock (pg_horizon.h), so a transaction that commits late is still read, and a
 * key's later writer (serialized by the row lock) always has the larger version. */
#include "change_log.h"

#include "capture_internal.h"
#include "catalog.h"
#include "change_log_options.h"
#include "change_log_internal.h"
#include "change_source.h"
#include "log.h"
#include "setup_hint.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const sqlq_change_log_ops *sqlq_change_log_ops_of(const sqlq_dialect *d)
{
    const sqlq_change_source_ops *s = sqlq_change_source_find(d, SQLQ_SOURCE_CHANGE_LOG);
    return s && s->leased ? s->leased->change_log : NULL;
}

static sqlq_result ctx_init(sqlq_db *db, const sqlq_table *t, sqlq_log_ctx *c, sqlq_error *err)
{
    c->db = db;
    c->t = t;
    c->version_from = NULL;
    memset(&c->opts, 0, sizeof(c->opts));
    const sqlq_dialect *d = sqlq_db_dialect(db);
    const sqlq_change_source_ops *dflt = sqlq_change_source_find(d, SQLQ_SOURCE_AUTO);
    c->ops = sqlq_change_log_ops_of(d);
    if (!c->ops && dflt)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "%s tables use %s, not a change log", d->title, dflt->title);
    if (!c->ops)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "%s: sqlq has no change log for this database", d->title);
    sqlq_table_name canon;
    sqlq_result r = sqlq_catalog_resolve(db, NULL, &t->name, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_find(db, &canon, NULL, &c->names, err);
    return r;
}

/* The since of an update or a delete: the incarnation's, kept; where an 'I' row's since is
 * left NULL (born_since_null), when the row it changes is one, that row's version. */
static const char *since_kept(const sqlq_log_ctx *c)
{
    return c->ops->born_since_null ? ", " SQLQ_COL_SINCE " = CASE WHEN " SQLQ_COL_OP
                                        " = 'I' THEN " SQLQ_COL_VERSION " ELSE " SQLQ_COL_SINCE
                                        " END"
                                      : "";
}

/* INSERT INTO log (key…, sqlq_version, sqlq_op, sqlq_since) VALUES (<row>.key…, <version>,
 * '<op>', <since>) ON CONFLICT (key…) DO UPDATE SET version, op[, since]; with
 * c->version_from, SELECT <row>.key…, <version>, '<op>', <since> FROM <version_from> instead of
 * the VALUES list (the version is then a column of that FROM item, evaluated once). An insert
 * starts a new incarnation of the key: since = its version. An update or a delete keeps the
 * since of the incarnation it changes (NULL when the log holds no row of the key: older than
 * the log). */
void sqlq_change_log_upsert(sqlq_sql_text *q, const sqlq_log_ctx *c, const char *row, char op,
                            const char *version_sql)
{
    bool born = op == 'I';
    /* born_since_null: an 'I' row's since is its own version, left NULL (its version is a
     * read, one per row fewer); a later change of the key stores it (since_kept). */
    const char *born_since = c->ops->born_since_null ? "NULL" : version_sql;
    sqlq_sql_text_add(q, "INSERT INTO ");
    if (!q->dialect->schemas) {
        char name[96];
        snprintf(name, sizeof(name), "%s%s", q->dialect->object_prefix, c->names.log_table);
        sqlq_sql_text_ident(q, name); /* trigger bodies take unqualified names only */
    } else {
        sqlq_catalog_object(q, c->names.log_table);
    }
    sqlq_sql_text_add(q, " (");
    sqlq_catalog_key_list(q, c->t, "");
    sqlq_sql_text_add(q, ", " SQLQ_COL_VERSION ", " SQLQ_COL_OP ", " SQLQ_COL_SINCE);
    sqlq_change_log_options_names(q, c->t, &c->opts);
    sqlq_sql_text_add(q, ") %s", c->version_from ? "SELECT " : "VALUES (");
    sqlq_catalog_key_list(q, c->t, row);
    sqlq_sql_text_add(q, ", %s, '%c', %s", version_sql, op, born ? born_since : "NULL");
    sqlq_change_log_options_values(q, c->t, &c->opts, op, version_sql);
    if (c->version_from)
        sqlq_sql_text_add(q, " FROM %s", c->version_from);
    else
        sqlq_sql_text_add(q, ")");
    sqlq_sql_text_add(q, " ON CONFLICT (");
    sqlq_catalog_key_list(q, c->t, "");
    sqlq_sql_text_add(q,
                      ") DO UPDATE SET " SQLQ_COL_VERSION " = excluded." SQLQ_COL_VERSION
                      ", " SQLQ_COL_OP " = excluded." SQLQ_COL_OP "%s",
                      born ? ", " SQLQ_COL_SINCE " = excluded." SQLQ_COL_SINCE : since_kept(c));
    sqlq_change_log_options_updates(q, c->t, &c->opts, op, c->names.log_table);
    sqlq_sql_text_add(q, ";");
}

/* old key IS new key, column by column (NULL-safe). */
void sqlq_change_log_same_key(sqlq_sql_text *q, const sqlq_log_ctx *c)
{
    for (size_t i = 0; i < c->t->nkey; i++) {
        const char *name = c->t->columns[c->t->key[i]].name;
        sqlq_sql_text_add(q, "%s", i ? " AND " : "");
        sqlq_sql_text_col(q, "OLD.", name);
        sqlq_sql_text_add(q, " IS ");
        sqlq_sql_text_col(q, "NEW.", name);
    }
}

sqlq_result sqlq_change_log_exec(sqlq_db *db, sqlq_sql_text *q, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_result r = sqlq_sql_text_take(q, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, NULL, 0, NULL, err);
    free(sql);
    return r;
}

/* A log created by an earlier sqlq has no since column: add it. Its insert rows began their
 * key's current row (since = version); for the others that is older than the log (NULL: an
 * update stays an update). */
static sqlq_result add_since_column(const sqlq_log_ctx *c, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(c->db);
    char name[96];
    snprintf(name, sizeof(name), "%s%s", d->object_prefix, c->names.log_table);
    sqlq_param p[2] = {sqlq_param_text(name), sqlq_param_text(SQLQ_COL_SINCE)};
    int64_t n = 0;
    sqlq_result r = sqlq_db_query_int(c->db, d->column_exists_sql, p, 2, &n, err);
    if (r != SQLQ_OK || n > 0)
        return r;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "ALTER TABLE ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, " ADD COLUMN " SQLQ_COL_SINCE " bigint NULL");
    r = sqlq_change_log_exec(c->db, &q, err);
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "UPDATE ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q,
                      " SET " SQLQ_COL_SINCE " = " SQLQ_COL_VERSION " WHERE " SQLQ_COL_OP " = 'I'");
    if (r == SQLQ_OK)
        r = sqlq_change_log_exec(c->db, &q, err);
    else
        sqlq_sql_text_free(&q);
    return r;
}

static sqlq_result create_log_table(const sqlq_log_ctx *c, char *const *types, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(c->db);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "CREATE TABLE IF NOT EXISTS ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, " (");
    sqlq_catalog_key_defs(&q, c->t, types);
    sqlq_sql_text_add(&q, ", " SQLQ_COL_VERSION " bigint NOT NULL, " SQLQ_COL_OP
                          " char(1) NOT NULL, " SQLQ_COL_SINCE " bigint NULL, PRIMARY KEY (");
    sqlq_catalog_key_list(&q, c->t, "");
    sqlq_sql_text_add(&q, "))");
    sqlq_result r = sqlq_change_log_exec(c->db, &q, err);
    if (r == SQLQ_OK)
        r = add_since_column(c, err);
    if (r != SQLQ_OK)
        return r;
    /* The poll reads in (version, key) order up to the batch limit: an index in that order
     * lets it stop there. Version alone left a sort of every change sharing a version (on
     * PostgreSQL, one per writing transaction: a bulk load is one version) or, on SQLite with
     * a key other than the rowid, of the whole backlog. An index of an earlier setup on
     * (version) alone, ix_*, is replaced. */
    char ix[96];
    snprintf(ix, sizeof(ix), "ixk_%s", c->names.log_table);
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "CREATE INDEX IF NOT EXISTS ");
    if (!d->schemas) /* one namespace: the index takes sqlq's prefix */
        sqlq_catalog_object(&q, ix);
    else
        sqlq_sql_text_ident(&q, ix);
    sqlq_sql_text_add(&q, " ON ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, " (" SQLQ_COL_VERSION ", ");
    sqlq_catalog_key_list(&q, c->t, "");
    sqlq_sql_text_add(&q, ")");
    r = sqlq_change_log_exec(c->db, &q, err);
    if (r != SQLQ_OK || !c->ops->legacy_index)
        return r;
    snprintf(ix, sizeof(ix), "ix_%s", c->names.log_table);
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "DROP INDEX IF EXISTS ");
    sqlq_catalog_object(&q, ix);
    return sqlq_change_log_exec(c->db, &q, err);
}

static void object_display(const sqlq_log_ctx *c, char *out, size_t size)
{
    snprintf(out, size, "%s%s", sqlq_db_dialect(c->db)->object_prefix, c->names.log_table);
}

sqlq_result sqlq_change_log_install(sqlq_db *db, const sqlq_table *t, sqlq_error *err)
{
    sqlq_change_log_options none = {false, false};
    return sqlq_change_log_install_with(db, t, &none, err);
}

/* What the log keeps: what this setup asks for and what an earlier setup asked for (the
 * options stay until --drop), with the columns added when missing. */
static sqlq_result log_options(sqlq_log_ctx *c, const sqlq_change_log_options *want,
                               sqlq_error *err)
{
    sqlq_change_log_options had;
    sqlq_result r = sqlq_change_log_options_found(c->db, c->t, c->names.log_table, &had, err);
    c->opts.track_columns = want->track_columns || had.track_columns;
    c->opts.before_image = want->before_image || had.before_image;
    if (r == SQLQ_OK)
        r = sqlq_change_log_options_add_columns(c->db, c->t, c->names.log_table, &c->opts, err);
    return r;
}

sqlq_result sqlq_change_log_install_with(sqlq_db *db, const sqlq_table *t,
                                         const sqlq_change_log_options *opts, sqlq_error *err)
{
    sqlq_log_ctx c;
    sqlq_result r = ctx_init(db, t, &c, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_check_key(t, err);
    char **types = NULL;
    if (r == SQLQ_OK)
        r = sqlq_catalog_key_types(db, t, &types, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_ensure(db, err);
    if (r != SQLQ_OK) {
        sqlq_catalog_key_types_free(types, t->nkey);
        return r;
    }
    char display[128];
    object_display(&c, display, sizeof(display));
    r = sqlq_db_begin(db, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK) /* a log another table has: neither reuse nor rewrite it */
        r = sqlq_catalog_log_check(db, &c.names, err);
    if (r == SQLQ_OK && c.ops->lock_table)
        r = c.ops->lock_table(&c, err);
    if (r == SQLQ_OK)
        r = create_log_table(&c, types, err);
    if (r == SQLQ_OK)
        r = log_options(&c, opts, err);
    if (r == SQLQ_OK)
        r = c.ops->install(&c, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_register(db, "log", "", c.names.table_key, display, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    sqlq_catalog_key_types_free(types, t->nkey);
    if (r == SQLQ_OK)
        SQLQ_INFO("change_log_installed", "table=%s log=%s", c.names.table_key, display);
    return r;
}

/* Whether the registry lists c's log against another table too (sqlq_catalog_log_check): then
 * that table's, and only this table's own triggers may go. */
static sqlq_result log_shared(const sqlq_log_ctx *c, bool *out, sqlq_error *err)
{
    sqlq_error why;
    sqlq_error_clear(&why);
    sqlq_result r = sqlq_catalog_log_check(c->db, &c->names, &why);
    *out = r == SQLQ_E_CONFLICT;
    if (*out)
        SQLQ_WARN("change_log_kept", "table=%s note=\"%s\"", c->names.table_key, why.message);
    if (r == SQLQ_OK || *out)
        return SQLQ_OK;
    return sqlq_error_set(err, r, why.transient, "%s", why.message);
}

sqlq_result sqlq_change_log_drop(sqlq_db *db, const sqlq_table *t, bool *out_shared,
                                 sqlq_error *err)
{
    if (out_shared)
        *out_shared = false;
    sqlq_log_ctx c;
    sqlq_result r = ctx_init(db, t, &c, err);
    bool catalog = false, shared = false;
    if (r == SQLQ_OK)
        r = sqlq_catalog_exists(db, &catalog, err);
    if (r == SQLQ_OK)
        r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_catalog_ddl_lock(db, err);
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (r == SQLQ_OK)
        r = log_shared(&c, &shared, err);
    if (r == SQLQ_OK)
        r = c.ops->drop(&c, catalog, shared, err);
    sqlq_sql_text q;
    if (r == SQLQ_OK && !shared) {
        sqlq_sql_text_init(&q, d);
        sqlq_sql_text_add(&q, "DROP TABLE IF EXISTS ");
        sqlq_catalog_object(&q, c.names.log_table);
        r = sqlq_change_log_exec(db, &q, err);
    }
    if (r == SQLQ_OK && catalog)
        r = sqlq_catalog_unregister(db, "log", "", c.names.table_key, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        return r;
    }
    SQLQ_INFO("change_log_dropped", "table=%s log=%s", c.names.table_key,
              shared ? "kept" : "dropped");
    if (out_shared)
        *out_shared = shared;
    return sqlq_catalog_drop_if_unused(db, NULL, err);
}

sqlq_result sqlq_change_log_installed(sqlq_db *db, const sqlq_table *t, bool *out, sqlq_error *err)
{
    *out = false;
    sqlq_log_ctx c;
    sqlq_result r = ctx_init(db, t, &c, err);
    bool table = false;
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, c.names.log_table, &table, err);
    if (r != SQLQ_OK || !table)
        return r;
    return c.ops->installed(&c, out, err);
}

/* The log's version of the row's key, else the floor F the database gives (0 on a log whose
 * rows are stamped later: not stamped yet, which F covers too); NULL when the log is not
 * installed. */
sqlq_result sqlq_change_log_backfill_version(sqlq_db *db, const sqlq_catalog_names *n,
                                             const sqlq_table *t, char **out_floor,
                                             char **out_version, bool *out_param,
                                             sqlq_error *err)
{
    *out_floor = *out_version = NULL;
    *out_param = false;
    bool have = false;
    sqlq_result r = sqlq_change_log_installed(db, t, &have, err);
    if (r != SQLQ_OK || !have)
        return r;
    const sqlq_change_source_ops *src = sqlq_change_source_find(n->dialect, SQLQ_SOURCE_CHANGE_LOG);
    sqlq_sql_text f, q;
    sqlq_sql_text_init(&f, n->dialect);
    src->leased->change_log->backfill_floor_sql(&f, n, out_param);
    r = sqlq_sql_text_take(&f, out_floor, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text_init(&q, n->dialect);
    sqlq_sql_text_add(&q, "COALESCE((SELECT %s FROM ",
                      src->leased->sql->unstamped ? "NULLIF(l." SQLQ_COL_VERSION ", 0)"
                                                  : "l." SQLQ_COL_VERSION);
    sqlq_catalog_object(&q, n->log_table);
    sqlq_sql_text_add(&q, " l WHERE ");
    for (size_t i = 0; i < t->nkey; i++) {
        const char *name = t->columns[t->key[i]].name;
        sqlq_sql_text_add(&q, "%sl.", i ? " AND " : "");
        sqlq_sql_text_ident(&q, name);
        sqlq_sql_text_add(&q, " = ");
        sqlq_sql_text_table(&q, &t->name);
        sqlq_sql_text_add(&q, ".");
        sqlq_sql_text_ident(&q, name);
    }
    sqlq_sql_text_add(&q, "), %s)", *out_floor);
    r = sqlq_sql_text_take(&q, out_version, err);
    if (r != SQLQ_OK) {
        free(*out_floor);
        *out_floor = NULL;
    }
    return r;
}

/* What the log keeps beyond the key, as setup reports it. */
static const char *options_text(const sqlq_change_log_options *o)
{
    if (o->track_columns && o->before_image)
        return "; keeps changed columns and before images";
    if (o->track_columns)
        return "; keeps changed columns";
    return o->before_image ? "; keeps before images" : "";
}

sqlq_result sqlq_change_log_setup_install(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    sqlq_result r = sqlq_capture_setup_lookup(db, s, s->cfg->key_columns, &t, &n, err);
    if (r != SQLQ_OK)
        return r;
    bool before = false;
    sqlq_change_log_options kept = s->options;
    if ((r = sqlq_change_log_installed(db, t, &before, err)) != SQLQ_OK ||
        (r = sqlq_change_log_install_with(db, t, &s->options, err)) != SQLQ_OK ||
        (r = sqlq_change_log_options_found(db, t, n.log_table, &kept, err)) != SQLQ_OK) {
        /* what the table or the options ask for cannot be (a name too long for its
         * before-image column, a log another table has, …): the operator's input, like a
         * usage error */
        s->usage = r == SQLQ_E_INVALID || r == SQLQ_E_UNSUPPORTED || r == SQLQ_E_CONFLICT;
        sqlq_table_free(t);
        return r;
    }
    const sqlq_dialect *d = sqlq_db_dialect(db);
    char objects[512] = "";
    const sqlq_change_source_ops *src = sqlq_change_source_find(d, SQLQ_SOURCE_CHANGE_LOG);
    if (src && src->describe)
        src->describe(d, &n, objects, sizeof(objects));
    if (!sqlq_source_setup_say(s, "%s: change log %s: %s%s", n.table_key,
                               before ? "already installed (triggers refreshed)" : "installed",
                               objects, options_text(&kept)))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&n.table, NULL, arg, sizeof arg);
    if (kept.track_columns || kept.before_image)
        SQLQ_WARN("triggers_name_columns",
                  "table=%s note=\"the triggers of --track-columns/--before-image name every "
                  "column: after ALTER TABLE ADD, DROP, RENAME COLUMN or ALTER COLUMN TYPE "
                  "run sqlq setup --table %s again at once; until then %s (docs/capture.md)\"",
                  n.table_key, arg, sqlq_change_log_ops_of(d)->options->stale_triggers);
    sqlq_table_free(t);
    return r;
}

sqlq_result sqlq_change_log_setup_drop(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    sqlq_result r = sqlq_capture_drop_leases(db, s, &t, &n, err);
    bool shared = false;
    if (r == SQLQ_OK && !s->cfg->bridge_name)
        r = sqlq_change_log_drop(db, t, &shared, err);
    bool said = true;
    if (r == SQLQ_OK && !s->cfg->bridge_name && shared)
        said = sqlq_source_setup_say(s, "%s: triggers removed; change log %s%s kept: it is "
                                        "registered to another table too (see the warning)",
                                     n.table_key, n.dialect->object_prefix, n.log_table);
    else if (r == SQLQ_OK && !s->cfg->bridge_name)
        said = sqlq_source_setup_say(s, "%s: change log and triggers removed", n.table_key);
    sqlq_table_free(t);
    return said ? r : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}
