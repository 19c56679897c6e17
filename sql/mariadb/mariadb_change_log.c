/* mariadb_change_log: MariaDB/MySQL change log triggers and the stamping transaction (see
 * mariadb_change_log.h and docs/capture.md). Log rows: the key, sqlq_version (0 until
 * stamped), sqlq_op, sqlq_since (0 while the key's current row was born in the unstamped
 * change, set to the stamp's version then; NULL when older than the log). */
#include "mariadb_change_log.h"
#include "change_log_internal.h"

#include <string.h>

#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const EVENTS[] = {"INSERT", "UPDATE", "DELETE"};
static const char *const SUFFIX[] = {"_ai", "_au", "_ad"};

void sqlq_change_log_stamped_trigger(const sqlq_catalog_names *n, int i, char *out, size_t size)
{
    snprintf(out, size, "sqlq_%s%s", n->log_table, SUFFIX[i]);
}

static void trigger_ident(sqlq_sql_text *q, const sqlq_catalog_names *n, int i)
{
    char name[96];
    sqlq_change_log_stamped_trigger(n, i, name, sizeof(name));
    if (n->table.schema[0]) {
        sqlq_sql_text_ident(q, n->table.schema);
        sqlq_sql_text_add(q, ".");
    }
    sqlq_sql_text_ident(q, name);
}

/* INSERT INTO log (key…, version, op, since) VALUES (<row>.key…, 0, op, since) ON DUPLICATE
 * KEY UPDATE: an insert starts a new incarnation (since 0: the stamp's version); an update or
 * a delete keeps the since of the incarnation it changes. */
static void upsert(sqlq_sql_text *q, const sqlq_table *t, const sqlq_catalog_names *n,
                   const sqlq_change_log_options *o, const char *row, char op)
{
    bool born = op == 'I';
    sqlq_sql_text_add(q, "INSERT INTO ");
    sqlq_catalog_object(q, n->log_table);
    sqlq_sql_text_add(q, " (");
    sqlq_catalog_key_list(q, t, "");
    sqlq_sql_text_add(q, ", " SQLQ_COL_VERSION ", " SQLQ_COL_OP ", " SQLQ_COL_SINCE);
    sqlq_change_log_options_names(q, t, o);
    sqlq_sql_text_add(q, ") VALUES (");
    sqlq_catalog_key_list(q, t, row);
    sqlq_sql_text_add(q, ", 0, '%c', %s", op, born ? "0" : "NULL");
    sqlq_change_log_options_values(q, t, o, op, NULL);
    /* the options' assignments first: they read the version before it is reset */
    sqlq_sql_text_add(q, ") ON DUPLICATE KEY UPDATE ");
    sqlq_change_log_options_updates(q, t, o, op, n->log_table);
    sqlq_sql_text_add(q, SQLQ_COL_VERSION " = 0, " SQLQ_COL_OP " = '%c'%s;", op,
                      born ? ", " SQLQ_COL_SINCE " = 0" : "");
}

/* MySQL 8 has no CREATE OR REPLACE TRIGGER: there a second setup drops the trigger first. */
static bool is_mysql(sqlq_db *db)
{
    return strncmp(sqlq_db_dbms_name(db), "MySQL", 5) == 0;
}

static sqlq_result drop_trigger_first(sqlq_db *db, const sqlq_catalog_names *n, int i,
                                      sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
    trigger_ident(&q, n, i);
    return sqlq_change_log_exec(db, &q, err);
}

/* MariaDB: CREATE OR REPLACE, so the old trigger stays until the new one is in place (no write
 * goes uncaptured during a second setup); MySQL: DROP then CREATE (a second setup leaves a moment
 * without the trigger: run it when the table is quiet, docs/dialects.md). An update that changes
 * the key logs a delete of the old key and an insert of the new one. */
static sqlq_result create_trigger(sqlq_db *db, const sqlq_table *t, const sqlq_catalog_names *n,
                                  const sqlq_change_log_options *o, int i, sqlq_error *err)
{
    bool mysql = is_mysql(db);
    if (mysql) {
        sqlq_result d = drop_trigger_first(db, n, i, err);
        if (d != SQLQ_OK)
            return d;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, mysql ? "CREATE TRIGGER " : "CREATE OR REPLACE TRIGGER ");
    trigger_ident(&q, n, i);
    sqlq_sql_text_add(&q, " AFTER %s ON ", EVENTS[i]);
    sqlq_sql_text_table(&q, &n->table);
    sqlq_sql_text_add(&q, " FOR EACH ROW BEGIN ");
    if (i == 0) {
        upsert(&q, t, n, o, "NEW.", 'I');
    } else if (i == 2) {
        upsert(&q, t, n, o, "OLD.", 'D');
    } else {
        sqlq_sql_text_add(&q, "IF ");
        for (size_t k = 0; k < t->nkey; k++) {
            const char *name = t->columns[t->key[k]].name;
            sqlq_sql_text_add(&q, "%s", k ? " AND " : "");
            sqlq_sql_text_col(&q, "OLD.", name);
            sqlq_sql_text_add(&q, " <=> ");
            sqlq_sql_text_col(&q, "NEW.", name);
        }
        sqlq_sql_text_add(&q, " THEN ");
        upsert(&q, t, n, o, "NEW.", 'U');
        sqlq_sql_text_add(&q, " ELSE ");
        upsert(&q, t, n, o, "OLD.", 'D');
        sqlq_sql_text_add(&q, " ");
        upsert(&q, t, n, o, "NEW.", 'I');
        sqlq_sql_text_add(&q, " END IF;");
    }
    sqlq_sql_text_add(&q, " END");
    return sqlq_change_log_exec(db, &q, err);
}

sqlq_result sqlq_change_log_stamped_install(sqlq_db *db, const sqlq_table *t,
                                            const sqlq_catalog_names *n,
                                            const sqlq_change_log_options *o, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    for (int i = 0; r == SQLQ_OK && i < 3; i++)
        r = create_trigger(db, t, n, o, i, err);
    return r;
}

sqlq_result sqlq_change_log_stamped_drop(sqlq_db *db, const sqlq_catalog_names *n, sqlq_error *err)
{
    sqlq_result r = SQLQ_OK;
    for (int i = 0; r == SQLQ_OK && i < 3; i++) {
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, sqlq_db_dialect(db));
        sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
        trigger_ident(&q, n, i);
        r = sqlq_change_log_exec(db, &q, err);
    }
    return r;
}

sqlq_result sqlq_change_log_stamped_installed(sqlq_db *db, const sqlq_catalog_names *n, bool *out,
                                              sqlq_error *err)
{
    char names[3][96];
    sqlq_param p[4] = {sqlq_param_text(n->table.schema)};
    for (int i = 0; i < 3; i++) {
        sqlq_change_log_stamped_trigger(n, i, names[i], sizeof(names[i]));
        p[i + 1] = sqlq_param_text(names[i]);
    }
    int64_t count = 0;
    sqlq_result r = sqlq_db_query_int(db,
                                      "SELECT count(*) FROM information_schema.triggers WHERE "
                                      "trigger_schema = ? AND trigger_name IN (?, ?, ?)",
                                      p, 4, &count, err);
    *out = r == SQLQ_OK && count == 3;
    return r;
}

/* UPDATE (the unstamped rows nobody holds, locked now) STRAIGHT_JOIN log SET since, version.
 * The derived table is read first (STRAIGHT_JOIN) with FOR UPDATE SKIP LOCKED: the log rows
 * an open transaction wrote are locked by it and passed over, never waited for; a plain
 * UPDATE … WHERE version = 0 would wait for them (measured on MariaDB 10.11). The log is then
 * reached by its primary key only (FORCE INDEX): on a small log the optimizer otherwise scans
 * it, and an UPDATE's scan locks, so waits for, every row it reads. LAST_INSERT_ID() is the
 * version the counter handed this transaction. */
static sqlq_result stamp_sql(sqlq_db *db, const sqlq_table *t, const sqlq_catalog_names *n,
                             int limit, char **out, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "UPDATE (SELECT ");
    sqlq_catalog_key_list(&q, t, "");
    sqlq_sql_text_add(&q, " FROM ");
    sqlq_catalog_object(&q, n->log_table);
    sqlq_sql_text_add(&q, " WHERE " SQLQ_COL_VERSION " = 0 ORDER BY ");
    sqlq_catalog_key_list(&q, t, "");
    sqlq_sql_text_add(&q, " LIMIT %d FOR UPDATE SKIP LOCKED) p STRAIGHT_JOIN ", limit);
    sqlq_catalog_object(&q, n->log_table);
    sqlq_sql_text_add(&q, " l FORCE INDEX (PRIMARY) ON ");
    for (size_t k = 0; k < t->nkey; k++) {
        const char *name = t->columns[t->key[k]].name;
        sqlq_sql_text_add(&q, "%s", k ? " AND " : "");
        sqlq_sql_text_col(&q, "l.", name);
        sqlq_sql_text_add(&q, " = ");
        sqlq_sql_text_col(&q, "p.", name);
    }
    sqlq_sql_text_add(&q, " SET l." SQLQ_COL_SINCE " = IF(l." SQLQ_COL_SINCE
                          " = 0, LAST_INSERT_ID(), l." SQLQ_COL_SINCE "), l." SQLQ_COL_VERSION
                          " = LAST_INSERT_ID()");
    return sqlq_sql_text_take(&q, out, err);
}

/* The counter row's lock, taken first and held to the commit, serialises stamping
 * transactions: a version is handed out only after every smaller one has committed, so a
 * reader that has seen version v has seen every row stamped at or below v. */
sqlq_result sqlq_change_log_stamp(sqlq_db *db, const sqlq_table *t, const sqlq_catalog_names *n,
                                  int limit, long long *out_stamped, int64_t *out_version,
                                  sqlq_error *err)
{
    *out_stamped = 0;
    *out_version = 0;
    char *sql = NULL;
    sqlq_result r = stamp_sql(db, t, n, limit > 0 ? limit : 1, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK) {
        free(sql);
        return r;
    }
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "UPDATE ");
    sqlq_catalog_object(&q, "counter");
    sqlq_sql_text_add(&q, " SET value = LAST_INSERT_ID(value + 1) WHERE name = 'version'");
    r = sqlq_change_log_exec(db, &q, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, NULL, 0, out_stamped, err);
    if (r == SQLQ_OK && *out_stamped > 0)
        r = sqlq_db_query_int(db, "SELECT LAST_INSERT_ID()", NULL, 0, out_version, err);
    free(sql);
    if (r == SQLQ_OK && *out_stamped > 0)
        return sqlq_db_commit(db, err);
    sqlq_db_rollback(db); /* nothing stamped: the version is not used */
    return r;
}
