/* change_log: log table + row triggers keeping the latest version and operation per key.
 *
 * Log table (catalog.h names): the key columns with the user's types, sqlq_version, sqlq_op
 * ('I', 'U', 'D'), primary key = the key. Every row trigger upserts the key's row, so the log
 * holds one row per key with its latest change. An UPDATE that changes the key logs a delete
 * of the old key and an insert of the new one.
 *
 * Versions. SQLite: a counter row bumped inside the trigger; SQLite has one writer at a time, so
 * versions commit in order. PostgreSQL: the writing transaction's id (xid8 as bigint); readers
 * take only versions below the oldest running transaction (capture_sql.c), so a transaction
 * that commits late is still read. Rows of one transaction share a version. */
#include "change_log.h"

#include "catalog.h"
#include "log.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct log_ctx {
    sqlq_db *db;
    const sqlq_table *t;
    sqlq_catalog_names names;
} log_ctx;

static sqlq_result ctx_init(sqlq_db *db, const sqlq_table *t, log_ctx *c, sqlq_error *err)
{
    c->db = db;
    c->t = t;
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    if (d == SQLQ_DIALECT_MSSQL)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "SQL Server tables use change tracking, not a change log");
    sqlq_table_name canon;
    sqlq_result r = sqlq_catalog_resolve(db, NULL, &t->name, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_make(d, &canon, NULL, &c->names, err);
    return r;
}

/* INSERT INTO log (key…, sqlq_version, sqlq_op) VALUES (<row>.key…, <version>, '<op>')
 * ON CONFLICT (key…) DO UPDATE SET version, op. */
static void upsert(sqlq_sql_text *q, const log_ctx *c, const char *row, char op,
                   const char *version_sql)
{
    sqlq_sql_text_add(q, "INSERT INTO ");
    if (q->dialect == SQLQ_DIALECT_SQLITE) {
        char name[96];
        snprintf(name, sizeof(name), "sqlq_%s", c->names.log_table);
        sqlq_sql_text_ident(q, name); /* trigger bodies take unqualified names only */
    } else {
        sqlq_catalog_object(q, c->names.log_table);
    }
    sqlq_sql_text_add(q, " (");
    sqlq_catalog_key_list(q, c->t, "");
    sqlq_sql_text_add(q, ", " SQLQ_COL_VERSION ", " SQLQ_COL_OP ") VALUES (");
    sqlq_catalog_key_list(q, c->t, row);
    sqlq_sql_text_add(q, ", %s, '%c') ON CONFLICT (", version_sql, op);
    sqlq_catalog_key_list(q, c->t, "");
    sqlq_sql_text_add(q, ") DO UPDATE SET " SQLQ_COL_VERSION " = excluded." SQLQ_COL_VERSION
                         ", " SQLQ_COL_OP " = excluded." SQLQ_COL_OP ";");
}

/* old key IS new key, column by column (NULL-safe). */
static void same_key(sqlq_sql_text *q, const log_ctx *c)
{
    for (size_t i = 0; i < c->t->nkey; i++) {
        const char *name = c->t->columns[c->t->key[i]].name;
        sqlq_sql_text_add(q, "%s", i ? " AND " : "");
        sqlq_sql_text_col(q, "OLD.", name);
        sqlq_sql_text_add(q, " IS ");
        sqlq_sql_text_col(q, "NEW.", name);
    }
}

static const char SQLITE_BUMP[] = "UPDATE sqlq_counter SET value = value + 1 WHERE name = 'version'; ";
static const char SQLITE_VERSION[] = "(SELECT value FROM sqlq_counter WHERE name = 'version')";

static const char *const SQLITE_TRIGGERS[] = {"_ai", "_au", "_ak", "_ad"};

static void sqlite_trigger_name(const log_ctx *c, size_t i, char *out, size_t size)
{
    snprintf(out, size, "%s%s", c->names.trigger, SQLITE_TRIGGERS[i]);
}

static sqlq_result sqlite_trigger_sql(const log_ctx *c, size_t i, char **out, sqlq_error *err)
{
    static const char *const events[] = {"INSERT", "UPDATE", "UPDATE", "DELETE"};
    char name[96];
    sqlite_trigger_name(c, i, name, sizeof(name));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, SQLQ_DIALECT_SQLITE);
    sqlq_sql_text_add(&q, "CREATE TRIGGER ");
    sqlq_sql_text_ident(&q, name);
    sqlq_sql_text_add(&q, " AFTER %s ON ", events[i]);
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_sql_text_add(&q, " FOR EACH ROW ");
    if (i == 1 || i == 2) {
        sqlq_sql_text_add(&q, "WHEN %s(", i == 2 ? "NOT " : "");
        same_key(&q, c);
        sqlq_sql_text_add(&q, ") ");
    }
    sqlq_sql_text_add(&q, "BEGIN %s", SQLITE_BUMP);
    if (i == 0)
        upsert(&q, c, "NEW.", 'I', SQLITE_VERSION);
    else if (i == 1)
        upsert(&q, c, "NEW.", 'U', SQLITE_VERSION);
    else
        upsert(&q, c, "OLD.", 'D', SQLITE_VERSION);
    if (i == 2) {
        sqlq_sql_text_add(&q, " %s", SQLITE_BUMP);
        upsert(&q, c, "NEW.", 'I', SQLITE_VERSION);
    }
    sqlq_sql_text_add(&q, " END");
    return sqlq_sql_text_take(&q, out, err);
}

static sqlq_result exec_text(sqlq_db *db, sqlq_sql_text *q, sqlq_error *err)
{
    char *sql = NULL;
    sqlq_result r = sqlq_sql_text_take(q, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, NULL, 0, NULL, err);
    free(sql);
    return r;
}

static sqlq_result create_log_table(const log_ctx *c, char *const *types, sqlq_error *err)
{
    sqlq_dialect_kind d = sqlq_db_dialect(c->db);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "CREATE TABLE IF NOT EXISTS ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, " (");
    sqlq_catalog_key_defs(&q, c->t, types);
    sqlq_sql_text_add(&q, ", " SQLQ_COL_VERSION " bigint NOT NULL, " SQLQ_COL_OP
                          " char(1) NOT NULL, PRIMARY KEY (");
    sqlq_catalog_key_list(&q, c->t, "");
    sqlq_sql_text_add(&q, "))");
    sqlq_result r = exec_text(c->db, &q, err);
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
    if (d == SQLQ_DIALECT_SQLITE)
        sqlq_catalog_object(&q, ix);
    else
        sqlq_sql_text_ident(&q, ix);
    sqlq_sql_text_add(&q, " ON ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, " (" SQLQ_COL_VERSION ", ");
    sqlq_catalog_key_list(&q, c->t, "");
    sqlq_sql_text_add(&q, ")");
    r = exec_text(c->db, &q, err);
    if (r != SQLQ_OK)
        return r;
    snprintf(ix, sizeof(ix), "ix_%s", c->names.log_table);
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "DROP INDEX IF EXISTS ");
    sqlq_catalog_object(&q, ix);
    return exec_text(c->db, &q, err);
}

static sqlq_result sqlite_drop_triggers(const log_ctx *c, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < 4; i++) {
        char name[96];
        sqlite_trigger_name(c, i, name, sizeof(name));
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, SQLQ_DIALECT_SQLITE);
        sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
        sqlq_sql_text_ident(&q, name);
        r = exec_text(c->db, &q, err);
    }
    return r;
}

static sqlq_result sqlite_install(const log_ctx *c, sqlq_error *err)
{
    sqlq_result r = sqlite_drop_triggers(c, err);
    for (size_t i = 0; r == SQLQ_OK && i < 4; i++) {
        char *sql = NULL;
        r = sqlite_trigger_sql(c, i, &sql, err);
        if (r == SQLQ_OK)
            r = sqlq_db_exec(c->db, sql, NULL, 0, NULL, err);
        free(sql);
    }
    return r;
}

/* A dollar-quote tag that does not occur in the body (identifiers could contain $sqlq$). */
static void dollar_tag(const char *body, char *tag, size_t size)
{
    snprintf(tag, size, "$sqlq$");
    for (int n = 1; strstr(body, tag) && n < 1000; n++)
        snprintf(tag, size, "$sqlq%d$", n);
}

static sqlq_result pg_function_sql(const log_ctx *c, char **out, sqlq_error *err)
{
    static const char xid[] = "CAST(CAST(pg_current_xact_id() AS text) AS bigint)";
    sqlq_sql_text body;
    sqlq_sql_text_init(&body, SQLQ_DIALECT_POSTGRES);
    sqlq_sql_text_add(&body, " BEGIN IF TG_OP = 'INSERT' THEN ");
    upsert(&body, c, "NEW.", 'I', xid);
    sqlq_sql_text_add(&body, " ELSIF TG_OP = 'UPDATE' THEN IF (");
    sqlq_catalog_key_list(&body, c->t, "OLD.");
    sqlq_sql_text_add(&body, ") IS NOT DISTINCT FROM (");
    sqlq_catalog_key_list(&body, c->t, "NEW.");
    sqlq_sql_text_add(&body, ") THEN ");
    upsert(&body, c, "NEW.", 'U', xid);
    sqlq_sql_text_add(&body, " ELSE ");
    upsert(&body, c, "OLD.", 'D', xid);
    sqlq_sql_text_add(&body, " ");
    upsert(&body, c, "NEW.", 'I', xid);
    sqlq_sql_text_add(&body, " END IF; ELSE ");
    upsert(&body, c, "OLD.", 'D', xid);
    sqlq_sql_text_add(&body, " END IF; RETURN NULL; END ");
    char *text = NULL;
    sqlq_result r = sqlq_sql_text_take(&body, &text, err);
    if (r != SQLQ_OK)
        return r;
    char tag[16];
    dollar_tag(text, tag, sizeof(tag));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, SQLQ_DIALECT_POSTGRES);
    sqlq_sql_text_add(&q, "CREATE OR REPLACE FUNCTION ");
    sqlq_catalog_object(&q, c->names.log_function);
    sqlq_sql_text_add(&q, "() RETURNS trigger LANGUAGE plpgsql AS %s%s%s", tag, text, tag);
    free(text);
    return sqlq_sql_text_take(&q, out, err);
}

static sqlq_result pg_trigger(const log_ctx *c, bool create, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, SQLQ_DIALECT_POSTGRES);
    sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
    sqlq_sql_text_ident(&q, c->names.trigger);
    sqlq_sql_text_add(&q, " ON ");
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_result r = exec_text(c->db, &q, err);
    if (r != SQLQ_OK || !create)
        return r;
    sqlq_sql_text_init(&q, SQLQ_DIALECT_POSTGRES);
    sqlq_sql_text_add(&q, "CREATE TRIGGER ");
    sqlq_sql_text_ident(&q, c->names.trigger);
    sqlq_sql_text_add(&q, " AFTER INSERT OR UPDATE OR DELETE ON ");
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_sql_text_add(&q, " FOR EACH ROW EXECUTE FUNCTION ");
    sqlq_catalog_object(&q, c->names.log_function);
    sqlq_sql_text_add(&q, "()");
    return exec_text(c->db, &q, err);
}

static sqlq_result pg_install(const log_ctx *c, sqlq_error *err)
{
    char *fn = NULL;
    sqlq_result r = pg_function_sql(c, &fn, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(c->db, fn, NULL, 0, NULL, err);
    free(fn);
    if (r == SQLQ_OK)
        r = pg_trigger(c, true, err);
    return r;
}

static void object_display(const log_ctx *c, char *out, size_t size)
{
    if (sqlq_db_dialect(c->db) == SQLQ_DIALECT_SQLITE)
        snprintf(out, size, "sqlq_%s", c->names.log_table);
    else
        snprintf(out, size, "sqlq.%s", c->names.log_table);
}

sqlq_result sqlq_change_log_install(sqlq_db *db, const sqlq_table *t, sqlq_error *err)
{
    log_ctx c;
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
    if (r == SQLQ_OK)
        r = create_log_table(&c, types, err);
    if (r == SQLQ_OK)
        r = sqlq_db_dialect(db) == SQLQ_DIALECT_SQLITE ? sqlite_install(&c, err)
                                                        : pg_install(&c, err);
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

sqlq_result sqlq_change_log_drop(sqlq_db *db, const sqlq_table *t, sqlq_error *err)
{
    log_ctx c;
    sqlq_result r = ctx_init(db, t, &c, err);
    bool catalog = false;
    if (r == SQLQ_OK)
        r = sqlq_catalog_exists(db, &catalog, err);
    if (r == SQLQ_OK)
        r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_catalog_ddl_lock(db, err);
    sqlq_dialect_kind d = sqlq_db_dialect(db);
    if (r == SQLQ_OK)
        r = d == SQLQ_DIALECT_SQLITE ? sqlite_drop_triggers(&c, err) : pg_trigger(&c, false, err);
    sqlq_sql_text q;
    if (r == SQLQ_OK && d == SQLQ_DIALECT_POSTGRES) {
        sqlq_sql_text_init(&q, d);
        sqlq_sql_text_add(&q, "DROP FUNCTION IF EXISTS ");
        sqlq_catalog_object(&q, c.names.log_function);
        sqlq_sql_text_add(&q, "()");
        r = exec_text(db, &q, err);
    }
    if (r == SQLQ_OK) {
        sqlq_sql_text_init(&q, d);
        sqlq_sql_text_add(&q, "DROP TABLE IF EXISTS ");
        sqlq_catalog_object(&q, c.names.log_table);
        r = exec_text(db, &q, err);
    }
    if (r == SQLQ_OK && catalog)
        r = sqlq_catalog_unregister(db, "log", "", c.names.table_key, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(db);
        return r;
    }
    SQLQ_INFO("change_log_dropped", "table=%s", c.names.table_key);
    return sqlq_catalog_drop_if_unused(db, NULL, err);
}

sqlq_result sqlq_change_log_installed(sqlq_db *db, const sqlq_table *t, bool *out, sqlq_error *err)
{
    *out = false;
    log_ctx c;
    sqlq_result r = ctx_init(db, t, &c, err);
    bool table = false;
    if (r == SQLQ_OK)
        r = sqlq_catalog_object_exists(db, c.names.log_table, &table, err);
    if (r != SQLQ_OK || !table)
        return r;
    int64_t n = 0;
    if (sqlq_db_dialect(db) == SQLQ_DIALECT_SQLITE) {
        char names[4][96];
        sqlq_param p[4];
        for (size_t i = 0; i < 4; i++) {
            sqlite_trigger_name(&c, i, names[i], sizeof(names[i]));
            p[i] = sqlq_param_text(names[i]);
        }
        r = sqlq_db_query_int(db,
                              "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN "
                              "(?, ?, ?, ?)",
                              p, 4, &n, err);
        *out = r == SQLQ_OK && n == 4;
        return r;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, SQLQ_DIALECT_POSTGRES);
    sqlq_sql_text_table(&q, &c.names.table);
    char *quoted = NULL;
    r = sqlq_sql_text_take(&q, &quoted, err);
    sqlq_param p[2] = {sqlq_param_text(quoted), sqlq_param_text(c.names.trigger)};
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(db,
                              "SELECT count(*) FROM pg_trigger WHERE tgrelid = "
                              "to_regclass(CAST(? AS text)) AND tgname = CAST(? AS text)",
                              p, 2, &n, err);
    free(quoted);
    *out = r == SQLQ_OK && n == 1;
    return r;
}
