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
#include "change_log_stamped.h"
#include "log.h"
#include "sql_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct log_ctx {
    sqlq_db *db;
    const sqlq_table *t;
    sqlq_catalog_names names;
    const char *version_from; /* PostgreSQL: the FROM item that takes the version; NULL: VALUES */
    sqlq_change_log_options opts; /* what the log keeps beyond the key (change_log_options.h) */
} log_ctx;

/* The two change logs: SQLite's (triggers bump a counter) or PostgreSQL's (a plpgsql function
 * takes the next value of a sequence); ctx_init refuses every other capture shape. */
static bool counter_log(const log_ctx *c)
{
    return sqlq_db_dialect(c->db)->capture_shape == SQLQ_CAPTURE_LOG_COUNTER;
}

/* MariaDB/MySQL's log: triggers write unstamped rows (change_log_stamped.c). */
static bool stamped_log(const log_ctx *c)
{
    return sqlq_db_dialect(c->db)->capture_shape == SQLQ_CAPTURE_LOG_STAMPED;
}

static sqlq_result ctx_init(sqlq_db *db, const sqlq_table *t, log_ctx *c, sqlq_error *err)
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
        d->capture_shape != SQLQ_CAPTURE_LOG_SEQUENCE && d->capture_shape != SQLQ_CAPTURE_LOG_STAMPED)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "%s: sqlq has no change log for this database", d->title);
    sqlq_table_name canon;
    sqlq_result r = sqlq_catalog_resolve(db, NULL, &t->name, &canon, err);
    if (r == SQLQ_OK)
        r = sqlq_catalog_names_make(d, &canon, NULL, &c->names, err);
    return r;
}

/* The since of an update or a delete: the incarnation's, kept; on SQLite, when the row it
 * changes is an 'I' row (since left NULL), that row's version. */
static const char *since_kept(const log_ctx *c)
{
    return counter_log(c) ? ", " SQLQ_COL_SINCE " = CASE WHEN " SQLQ_COL_OP " = 'I' THEN "
                            SQLQ_COL_VERSION " ELSE " SQLQ_COL_SINCE " END"
                          : "";
}

/* INSERT INTO log (key…, sqlq_version, sqlq_op, sqlq_since) VALUES (<row>.key…, <version>,
 * '<op>', <since>) ON CONFLICT (key…) DO UPDATE SET version, op[, since]; with
 * c->version_from, SELECT <row>.key…, <version>, '<op>', <since> FROM <version_from> instead of
 * the VALUES list (the version is then a column of that FROM item, evaluated once). An insert
 * starts a new incarnation of the key: since = its version. An update or a delete keeps the
 * since of the incarnation it changes (NULL when the log holds no row of the key: older than
 * the log). */
static void upsert(sqlq_sql_text *q, const log_ctx *c, const char *row, char op,
                   const char *version_sql)
{
    bool born = op == 'I';
    /* SQLite: an 'I' row's since is its own version, left NULL (its version is a read, one per
     * row fewer); a later change of the key stores it (since_kept). */
    const char *born_since = counter_log(c) ? "NULL" : version_sql;
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
    sqlq_sql_text_add(q, ") DO UPDATE SET " SQLQ_COL_VERSION " = excluded." SQLQ_COL_VERSION
                         ", " SQLQ_COL_OP " = excluded." SQLQ_COL_OP "%s",
                      born ? ", " SQLQ_COL_SINCE " = excluded." SQLQ_COL_SINCE : since_kept(c));
    sqlq_change_log_options_updates(q, c->t, &c->opts, op, c->names.log_table);
    sqlq_sql_text_add(q, ";");
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

/* The transition table of the PostgreSQL INSERT statement trigger. */
#define PG_INSERTED "sqlq_inserted"

/* SQLite's next version: one above the newest version in the log (the top of its (version, key)
 * index: a read, no counter row written per change) and above the floor `floor_v`, fixed when
 * the triggers are created (sqlite_floor). Housekeeping never deletes the log's newest row, so
 * the log's top never goes down: versions only grow (docs/capture.md, Versions). */
static sqlq_result sqlite_version_sql(const log_ctx *c, int64_t floor_v, char **out,
                                      sqlq_error *err)
{
    char name[96];
    const sqlq_dialect *d = sqlq_db_dialect(c->db);
    snprintf(name, sizeof(name), "%s%s", d->object_prefix, c->names.log_table);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "(max(coalesce((SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_sql_text_ident(&q, name); /* trigger bodies take unqualified names only */
    sqlq_sql_text_add(&q, "), 0), %lld) + 1)", (long long)floor_v);
    return sqlq_sql_text_take(&q, out, err);
}

static const char *const SQLITE_TRIGGERS[] = {"_ai", "_au", "_ak", "_ad"};

static void sqlite_trigger_name(const log_ctx *c, size_t i, char *out, size_t size)
{
    snprintf(out, size, "%s%s", c->names.trigger, SQLITE_TRIGGERS[i]);
}

static sqlq_result sqlite_trigger_sql(const log_ctx *c, size_t i, int64_t floor_v, char **out,
                                     sqlq_error *err)
{
    static const char *const events[] = {"INSERT", "UPDATE", "UPDATE", "DELETE"};
    char *v = NULL;
    sqlq_result r = sqlite_version_sql(c, floor_v, &v, err);
    if (r != SQLQ_OK)
        return r;
    char name[96];
    sqlite_trigger_name(c, i, name, sizeof(name));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
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
    sqlq_sql_text_add(&q, "BEGIN ");
    if (i == 0)
        upsert(&q, c, "NEW.", 'I', v);
    else if (i == 1)
        upsert(&q, c, "NEW.", 'U', v);
    else
        upsert(&q, c, "OLD.", 'D', v);
    if (i == 2) { /* the second read sees the delete's row: the insert's version is above it */
        sqlq_sql_text_add(&q, " ");
        upsert(&q, c, "NEW.", 'I', v);
    }
    sqlq_sql_text_add(&q, " END");
    free(v);
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

/* A log created by an earlier sqlq has no since column: add it. Its insert rows began their
 * key's current row (since = version); for the others that is older than the log (NULL: an
 * update stays an update). */
static sqlq_result add_since_column(const log_ctx *c, sqlq_error *err)
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
    r = exec_text(c->db, &q, err);
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "UPDATE ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, " SET " SQLQ_COL_SINCE " = " SQLQ_COL_VERSION " WHERE " SQLQ_COL_OP
                          " = 'I'");
    if (r == SQLQ_OK)
        r = exec_text(c->db, &q, err);
    else
        sqlq_sql_text_free(&q);
    return r;
}

static sqlq_result create_log_table(const log_ctx *c, char *const *types, sqlq_error *err)
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
    sqlq_result r = exec_text(c->db, &q, err);
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
    r = exec_text(c->db, &q, err);
    if (r != SQLQ_OK || stamped_log(c)) /* no log of an earlier sqlq on MariaDB */
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
        sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
        sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
        sqlq_sql_text_ident(&q, name);
        r = exec_text(c->db, &q, err);
    }
    return r;
}

/* Raises the counter row 'version' to the log's newest version (and, with `syncs`, to every
 * bridge's sync version of the table) and reads it back into *floor_v. The counter only grows:
 * the triggers of an earlier sqlq bumped it per change, and a floor taken from it at a later
 * setup or after a drop is never below one taken before. */
static sqlq_result sqlite_floor(const log_ctx *c, bool syncs, int64_t *floor_v, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "UPDATE ");
    sqlq_catalog_object(&q, "counter");
    sqlq_sql_text_add(&q, " SET value = max(value, coalesce((SELECT max(" SQLQ_COL_VERSION
                          ") FROM ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, "), 0)");
    if (syncs) {
        sqlq_sql_text_add(&q, ", coalesce((SELECT max(sync_version) FROM ");
        sqlq_catalog_object(&q, "state");
        sqlq_sql_text_add(&q, " WHERE table_name = ");
        sqlq_sql_text_literal(&q, c->names.table_key);
        sqlq_sql_text_add(&q, "), 0)");
    }
    sqlq_sql_text_add(&q, ") WHERE name = 'version'");
    sqlq_result r = exec_text(c->db, &q, err);
    if (r == SQLQ_OK && floor_v)
        r = sqlq_db_query_int(c->db, "SELECT value FROM sqlq_counter WHERE name = 'version'", NULL,
                              0, floor_v, err);
    return r;
}

/* The triggers, and before the log goes the floor is raised to its newest version: a log set up
 * again later starts above every version this one handed out. */
static sqlq_result sqlite_drop(const log_ctx *c, bool catalog, sqlq_error *err)
{
    bool log = false;
    sqlq_result r = sqlite_drop_triggers(c, err);
    if (r == SQLQ_OK && catalog)
        r = sqlq_catalog_object_exists(c->db, c->names.log_table, &log, err);
    if (r == SQLQ_OK && log)
        r = sqlite_floor(c, false, NULL, err);
    return r;
}

static sqlq_result sqlite_install(const log_ctx *c, sqlq_error *err)
{
    int64_t floor_v = 0;
    sqlq_result r = sqlite_floor(c, true, &floor_v, err);
    if (r == SQLQ_OK)
        r = sqlite_drop_triggers(c, err);
    for (size_t i = 0; r == SQLQ_OK && i < 4; i++) {
        char *sql = NULL;
        r = sqlite_trigger_sql(c, i, floor_v, &sql, err);
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

void sqlq_change_log_sequence(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "ver_%s", n->log_table + strlen("log_"));
}

void sqlq_change_log_channel(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "sqlq.%s", n->log_table);
}

/* The wake-up of waiting bridges, as an expression: one notification per transaction and
 * channel whatever the number of rows (PostgreSQL folds identical notifications of a
 * transaction), delivered at commit, never for a rolled-back one. PostgreSQL refuses to PREPARE
 * a transaction that ran NOTIFY, so on a server that allows prepared transactions the trigger
 * stays silent unless the setting sqlq.notify says 'on' (ALTER DATABASE … SET sqlq.notify = on:
 * no writer of a watched table uses PREPARE TRANSACTION); 'off' silences it everywhere. */
static void pg_notify_sql(const log_ctx *c, sqlq_sql_text *body)
{
    char channel[72];
    sqlq_change_log_channel(&c->names, channel, sizeof(channel));
    sqlq_sql_text_add(body, "CASE WHEN (CASE current_setting('sqlq.notify', true) WHEN 'on' THEN "
                            "true WHEN 'off' THEN false ELSE "
                            "current_setting('max_prepared_transactions') = '0' END) THEN pg_notify(");
    sqlq_sql_text_literal(body, channel);
    sqlq_sql_text_add(body, ", '') END");
}

/* The version sequence as a string literal of its qualified name, for nextval() and setval(). */
static sqlq_result sequence_literal(const log_ctx *c, sqlq_sql_text *into, sqlq_error *err)
{
    char seq[72];
    sqlq_change_log_sequence(&c->names, seq, sizeof(seq));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_catalog_object(&q, seq);
    char *name = NULL;
    sqlq_result r = sqlq_sql_text_take(&q, &name, err);
    if (r == SQLQ_OK)
        sqlq_sql_text_literal(into, name);
    free(name);
    return r;
}

/* The FROM item of the trigger's upserts: (SELECT nextval(<sequence>) AS sqlq_version,
 * <notify> AS sqlq_notify) sqlq_next; for the inserted rows of a statement, (SELECT key…,
 * nextval(…), <notify> FROM sqlq_inserted) sqlq_next, a version per row. A subquery whose list
 * holds volatile functions is not pulled up into the INSERT, so each is evaluated once per row
 * of the subquery, in the executor: after the plan cache locked the statement's target, the
 * log, in ROW EXCLUSIVE mode (to the end of the transaction), and after the user's statement
 * locked the keys' rows. */
static sqlq_result pg_version_from(const log_ctx *c, bool inserted, char **out, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "(SELECT ");
    if (inserted) { /* key columns cannot be named sqlq_*: no clash with the two below */
        sqlq_catalog_key_list(&q, c->t, PG_INSERTED ".");
        sqlq_sql_text_add(&q, ", ");
    }
    sqlq_sql_text_add(&q, "nextval(");
    sqlq_result r = sequence_literal(c, &q, err);
    sqlq_sql_text_add(&q, ") AS " SQLQ_COL_VERSION ", ");
    pg_notify_sql(c, &q);
    sqlq_sql_text_add(&q, " AS sqlq_notify%s) sqlq_next", inserted ? " FROM " PG_INSERTED : "");
    if (r != SQLQ_OK) {
        sqlq_sql_text_free(&q);
        return r;
    }
    return sqlq_sql_text_take(&q, out, err);
}

/* The trigger function, for two triggers (pg_trigger): once per INSERT statement, one upsert
 * of the statement's inserted rows (its transition table); once per updated or deleted row,
 * one upsert (two for an update that changes the key: delete the old key, insert the new one).
 * Each takes its versions in its FROM item (pg_version_from): a key's later writer gets a
 * larger version, and a reader that finds no holder of the log's lock knows every version up
 * to the sequence value it read before is final (docs/capture.md). */
static sqlq_result pg_function_body(const log_ctx *c, char **out, sqlq_error *err)
{
    static const char v[] = "sqlq_next." SQLQ_COL_VERSION;
    log_ctx pc = *c, ps = *c;
    char *from = NULL, *from_inserted = NULL;
    sqlq_result r = pg_version_from(c, false, &from, err);
    if (r == SQLQ_OK)
        r = pg_version_from(c, true, &from_inserted, err);
    if (r != SQLQ_OK) {
        free(from);
        return r;
    }
    pc.version_from = from;
    ps.version_from = from_inserted;
    sqlq_sql_text body;
    sqlq_sql_text_init(&body, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&body, " #variable_conflict use_column\nBEGIN IF TG_LEVEL = 'STATEMENT' THEN ");
    upsert(&body, &ps, "sqlq_next.", 'I', v);
    sqlq_sql_text_add(&body, " ELSIF TG_OP = 'DELETE' THEN ");
    upsert(&body, &pc, "OLD.", 'D', v);
    sqlq_sql_text_add(&body, " ELSIF (");
    sqlq_catalog_key_list(&body, c->t, "OLD.");
    sqlq_sql_text_add(&body, ") IS NOT DISTINCT FROM (");
    sqlq_catalog_key_list(&body, c->t, "NEW.");
    sqlq_sql_text_add(&body, ") THEN ");
    upsert(&body, &pc, "NEW.", 'U', v);
    sqlq_sql_text_add(&body, " ELSE ");
    upsert(&body, &pc, "OLD.", 'D', v);
    sqlq_sql_text_add(&body, " ");
    upsert(&body, &pc, "NEW.", 'I', v);
    sqlq_sql_text_add(&body, " END IF; RETURN NULL; END ");
    free(from);
    free(from_inserted);
    return sqlq_sql_text_take(&body, out, err);
}

static sqlq_result pg_function_sql(const log_ctx *c, char **out, sqlq_error *err)
{
    char *text = NULL;
    sqlq_result r = pg_function_body(c, &text, err);
    if (r != SQLQ_OK)
        return r;
    char tag[16];
    dollar_tag(text, tag, sizeof(tag));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "CREATE OR REPLACE FUNCTION ");
    sqlq_catalog_object(&q, c->names.log_function);
    sqlq_sql_text_add(&q, "() RETURNS trigger LANGUAGE plpgsql AS %s%s%s", tag, text, tag);
    free(text);
    return sqlq_sql_text_take(&q, out, err);
}

/* The version sequence, created when missing (a first setup, or a log of an earlier sqlq
 * whose versions were transaction ids). It starts above every version that can exist: the
 * log's, every bridge's sync version, and the current transaction id (an older log's
 * versions were ids of transactions that have all ended: the caller holds the watched
 * table's SHARE ROW EXCLUSIVE lock, so no writer of the old trigger is still open, and writers
 * waiting on that lock run the new trigger once it is released). */
static sqlq_result pg_sequence(const log_ctx *c, sqlq_error *err)
{
    char seq[72];
    sqlq_change_log_sequence(&c->names, seq, sizeof(seq));
    bool exists = false;
    sqlq_result r = sqlq_catalog_object_exists(c->db, seq, &exists, err);
    if (r != SQLQ_OK || exists)
        return r;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "CREATE SEQUENCE ");
    sqlq_catalog_object(&q, seq);
    /* CACHE 1 (the default, said aloud): a reader's "last value" must be the last one handed
     * out, not the end of a range some session holds in memory. */
    sqlq_sql_text_add(&q, " AS bigint CACHE 1 OWNED BY ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, "." SQLQ_COL_VERSION);
    r = exec_text(c->db, &q, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "SELECT setval(");
    r = sequence_literal(c, &q, err);
    sqlq_sql_text_add(&q, ", greatest(1, (SELECT max(" SQLQ_COL_VERSION ") FROM ");
    sqlq_catalog_object(&q, c->names.log_table);
    sqlq_sql_text_add(&q, "), (SELECT max(sync_version) FROM ");
    sqlq_catalog_object(&q, "state");
    sqlq_sql_text_add(&q, " WHERE table_name = ");
    sqlq_sql_text_literal(&q, c->names.table_key);
    sqlq_sql_text_add(&q, "), CAST(CAST(pg_current_xact_id() AS text) AS bigint)))");
    if (r == SQLQ_OK)
        r = exec_text(c->db, &q, err);
    else
        sqlq_sql_text_free(&q);
    if (r == SQLQ_OK)
        SQLQ_INFO("change_log_sequence_created", "table=%s sequence=sqlq.%s",
                  c->names.table_key, seq);
    return r;
}

static sqlq_result pg_trigger_drop(const log_ctx *c, const char *name, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
    sqlq_sql_text_ident(&q, name);
    sqlq_sql_text_add(&q, " ON ");
    sqlq_sql_text_table(&q, &c->names.table);
    return exec_text(c->db, &q, err);
}

/* Two triggers run the log's function: <trigger> for each updated or deleted row, and
 * <trigger>_ins once per INSERT statement with its inserted rows (REFERENCING NEW TABLE: one
 * upsert per statement instead of a function call and an upsert per row; a transition table
 * takes one event per trigger). An earlier sqlq's <trigger> also fired per inserted row. */
static sqlq_result pg_trigger(const log_ctx *c, bool create, sqlq_error *err)
{
    char ins[72];
    snprintf(ins, sizeof(ins), "%s_ins", c->names.trigger);
    sqlq_result r = pg_trigger_drop(c, c->names.trigger, err);
    if (r == SQLQ_OK)
        r = pg_trigger_drop(c, ins, err);
    for (int i = 0; create && r == SQLQ_OK && i < 2; i++) {
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
        sqlq_sql_text_add(&q, "CREATE TRIGGER ");
        sqlq_sql_text_ident(&q, i ? ins : c->names.trigger);
        sqlq_sql_text_add(&q, i ? " AFTER INSERT ON " : " AFTER UPDATE OR DELETE ON ");
        sqlq_sql_text_table(&q, &c->names.table);
        sqlq_sql_text_add(&q, i ? " REFERENCING NEW TABLE AS " PG_INSERTED " FOR EACH STATEMENT"
                                : " FOR EACH ROW");
        sqlq_sql_text_add(&q, " EXECUTE FUNCTION ");
        sqlq_catalog_object(&q, c->names.log_function);
        sqlq_sql_text_add(&q, "()");
        r = exec_text(c->db, &q, err);
    }
    return r;
}

/* The watched table's SHARE ROW EXCLUSIVE lock (what DROP TRIGGER takes anyway), first: open
 * writers finish before the version sequence is started and the trigger replaced, and this
 * setup takes its locks in the order writers do (table, then log). */
static sqlq_result pg_lock_table(const log_ctx *c, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "LOCK TABLE ");
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_sql_text_add(&q, " IN SHARE ROW EXCLUSIVE MODE");
    return exec_text(c->db, &q, err);
}

static sqlq_result pg_install(const log_ctx *c, sqlq_error *err)
{
    char *fn = NULL;
    sqlq_result r = pg_sequence(c, err);
    if (r == SQLQ_OK)
        r = pg_function_sql(c, &fn, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(c->db, fn, NULL, 0, NULL, err);
    free(fn);
    if (r == SQLQ_OK)
        r = pg_trigger(c, true, err);
    return r;
}

static void object_display(const log_ctx *c, char *out, size_t size)
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
static sqlq_result log_options(log_ctx *c, const sqlq_change_log_options *want, sqlq_error *err)
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
    if (r == SQLQ_OK && !counter_log(&c) && !stamped_log(&c))
        r = pg_lock_table(&c, err);
    if (r == SQLQ_OK)
        r = create_log_table(&c, types, err);
    if (r == SQLQ_OK)
        r = log_options(&c, opts, err);
    if (r == SQLQ_OK && stamped_log(&c))
        r = sqlq_change_log_stamped_install(db, t, &c.names, &c.opts, err);
    else if (r == SQLQ_OK)
        r = counter_log(&c) ? sqlite_install(&c, err) : pg_install(&c, err);
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
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (r == SQLQ_OK && stamped_log(&c))
        r = sqlq_change_log_stamped_drop(db, &c.names, err);
    else if (r == SQLQ_OK)
        r = counter_log(&c) ? sqlite_drop(&c, catalog, err) : pg_trigger(&c, false, err);
    sqlq_sql_text q;
    if (r == SQLQ_OK && !counter_log(&c) && !stamped_log(&c)) {
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
    if (stamped_log(&c))
        return sqlq_change_log_stamped_installed(db, &c.names, out, err);
    int64_t n = 0;
    if (counter_log(&c)) {
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
        r = sqlq_db_query_int(db,
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
    else
        snprintf(out, size, "table %s%s, function %s%s, triggers %s, %s_ins", d->object_prefix,
                 n->log_table, d->object_prefix, n->log_function, n->trigger, n->trigger);
}
