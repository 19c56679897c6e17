/* change_log: log table + row triggers keeping the latest version and operation per key.
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
 * of that lock (capture_horizon.h), so a transaction that commits late is still read, and a
 * key's later writer (serialized by the row lock) always has the larger version. */
#include "change_log.h"

#include "catalog.h"
#include "change_log_options.h"
#include "change_log_internal.h"
#include "change_log_stamped.h"
#include "log.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlq_result ctx_init(sqlq_db *db, const sqlq_table *t, sqlq_log_ctx *c, sqlq_error *err)
{
    c->db = db;
    c->t = t;
    c->version_from = NULL;
    memset(&c->opts, 0, sizeof(c->opts));
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (d->capture_shape == SQLQ_CAPTURE_CHANGE_TRACKING)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "%s tables use change tracking, not a change log", d->title);
    if (d->capture_shape != SQLQ_CAPTURE_LOG_COUNTER &&
        d->capture_shape != SQLQ_CAPTURE_LOG_SEQUENCE &&
        d->capture_shape != SQLQ_CAPTURE_LOG_STAMPED)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "%s: sqlq has no change log for this database", d->title);
    sqlq_table_name canon;
    sqlq_result r = sqlq_catalog_resolve(db, NULL, &t->name, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_find(db, &canon, NULL, &c->names, err);
    return r;
}

/* The since of an update or a delete: the incarnation's, kept; on SQLite, when the row it
 * changes is an 'I' row (since left NULL), that row's version. */
static const char *since_kept(const sqlq_log_ctx *c)
{
    return sqlq_change_log_counter(c) ? ", " SQLQ_COL_SINCE " = CASE WHEN " SQLQ_COL_OP
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
    /* SQLite: an 'I' row's since is its own version, left NULL (its version is a read, one per
     * row fewer); a later change of the key stores it (since_kept). */
    const char *born_since = sqlq_change_log_counter(c) ? "NULL" : version_sql;
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
    if (r != SQLQ_OK || sqlq_change_log_stamped(c)) /* no log of an earlier sqlq on MariaDB */
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
    if (r == SQLQ_OK && !sqlq_change_log_counter(&c) && !sqlq_change_log_stamped(&c))
        r = sqlq_change_log_pg_lock_table(&c, err);
    if (r == SQLQ_OK)
        r = create_log_table(&c, types, err);
    if (r == SQLQ_OK)
        r = log_options(&c, opts, err);
    if (r == SQLQ_OK && sqlq_change_log_stamped(&c))
        r = sqlq_change_log_stamped_install(db, t, &c.names, &c.opts, err);
    else if (r == SQLQ_OK)
        r = sqlq_change_log_counter(&c) ? sqlq_change_log_sqlite_install(&c, err)
                                        : sqlq_change_log_pg_install(&c, err);
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

/* This table's triggers; with `shared`, only those, else the log's functions too. */
static sqlq_result drop_triggers(const sqlq_log_ctx *c, bool catalog, bool shared,
                                 sqlq_error *err)
{
    if (sqlq_change_log_stamped(c)) /* in the table's database, named by its own hash */
        return sqlq_change_log_stamped_drop(c->db, &c->names, err);
    if (sqlq_change_log_counter(c))
        return sqlq_change_log_sqlite_drop(c, catalog, shared, err);
    return shared ? sqlq_change_log_pg_trigger(c, false, err) : sqlq_change_log_pg_drop(c, err);
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
        r = drop_triggers(&c, catalog, shared, err);
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
    if (sqlq_change_log_stamped(&c))
        return sqlq_change_log_stamped_installed(db, &c.names, out, err);
    int64_t n = 0;
    if (sqlq_change_log_counter(&c)) {
        char names[4][96];
        sqlq_param p[4];
        for (size_t i = 0; i < 4; i++) {
            sqlq_change_log_sqlite_trigger_name(&c, i, names[i], sizeof(names[i]));
            p[i] = sqlq_param_text(names[i]);
        }
        r = sqlq_db_query_int(
            db,
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN "
            "(?, ?, ?, ?)",
            p, 4, &n, err);
        *out = r == SQLQ_OK && n == 4;
        return r;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_table(&q, &c.names.table);
    char *quoted = NULL;
    r = sqlq_sql_text_take(&q, &quoted, err);
    /* <trigger>, and inserts captured: by <trigger>_ins, or by an earlier sqlq's <trigger>
     * (tgtype bit 4: INSERT) */
    char ins[72];
    snprintf(ins, sizeof(ins), "%s_ins", c.names.trigger);
    sqlq_param p[4] = {sqlq_param_text(c.names.trigger), sqlq_param_text(quoted),
                       sqlq_param_text(c.names.trigger), sqlq_param_text(ins)};
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(
            db,
            "SELECT CASE WHEN count(*) FILTER (WHERE tgname = CAST(? AS text)) = 1 "
            "AND bool_or((CAST(tgtype AS integer) & 4) <> 0) THEN 1 ELSE 0 END "
            "FROM pg_trigger WHERE tgrelid = to_regclass(CAST(? AS text)) AND "
            "tgname IN (CAST(? AS text), CAST(? AS text))",
            p, 4, &n, err);
    free(quoted);
    *out = r == SQLQ_OK && n == 1;
    return r;
}

void sqlq_change_log_objects(const sqlq_dialect *d, const sqlq_catalog_names *n, char *out,
                             size_t size)
{
    if (d->capture_shape == SQLQ_CAPTURE_LOG_COUNTER)
        snprintf(out, size, "table %s%s, triggers %s_ai/_au/_ak/_ad", d->object_prefix,
                 n->log_table, n->trigger);
    else if (d->capture_shape == SQLQ_CAPTURE_LOG_STAMPED)
        snprintf(out, size, "table %s%s, triggers sqlq_%s_ai/_au/_ad", d->object_prefix,
                 n->log_table, n->log_table);
    else {
        char row_fn[72];
        sqlq_change_log_pg_row_function(n, row_fn, sizeof(row_fn));
        snprintf(out, size, "table %s%s, functions %s%s, %s%s, triggers %s, %s_ins",
                 d->object_prefix, n->log_table, d->object_prefix, n->log_function,
                 d->object_prefix, row_fn, n->trigger, n->trigger);
    }
}
