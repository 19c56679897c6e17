/* pg_change_log: PostgreSQL's change-log trigger functions (one per INSERT statement, one per
 * updated or deleted row) and their triggers, the version sequence and the wake-up NOTIFY
 * (docs/capture.md, Versions and Wake-ups). */
#include "change_log.h"
#include "change_log_internal.h"
#include "pg_internal.h"

#include "log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The transition table of the PostgreSQL INSERT statement trigger. */
#define PG_INSERTED "sqlq_inserted"

/* A dollar-quote tag that does not occur in the body (identifiers could contain $sqlq$). */
static void dollar_tag(const char *body, char *tag, size_t size)
{
    snprintf(tag, size, "$sqlq$");
    for (int n = 1; strstr(body, tag) && n < 1000; n++)
        snprintf(tag, size, "$sqlq%d$", n);
}

void sqlq_pg_change_log_sequence(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "ver_%s", n->log_table + strlen("log_"));
}

void sqlq_pg_change_log_channel(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "sqlq.%s", n->log_table);
}

/* The wake-up lock of a log (docs/capture.md, Wake-ups): PostgreSQL's two-int4 advisory key
 * (SQLQ_PG_WAKE_CLASS, hashtext(channel)). Keys of that form are a lock tag apart from int8 keys
 * (objsubid 2 in pg_locks), so it can never be sqlq's poll or DDL lock (int8 keys from
 * hashtextextended); hashtext of a constant is folded when the statement is planned. */
static void pg_wake_key(const sqlq_catalog_names *n, sqlq_sql_text *q)
{
    char channel[72];
    sqlq_pg_change_log_channel(n, channel, sizeof(channel));
    sqlq_sql_text_add(q, "%d, hashtext(", SQLQ_PG_WAKE_CLASS);
    sqlq_sql_text_literal(q, channel);
    sqlq_sql_text_add(q, ")");
}

/* The wake-up of waiting bridges, as an expression: a notification only while a bridge holds
 * the log's wake-up lock or waits for it, that is while one is idle and armed (pg_arm.h). The
 * writer tries the lock shared: a writer that gets it keeps it to the end of its transaction
 * (an armed bridge's lock waited for it, and then reads the version sequence: what it committed
 * is found there) and does not notify; a try fails while a bridge holds or waits for the lock
 * exclusively, and that writer notifies. The nested CASE fixes the order: try, then notify.
 * One notification per transaction and channel whatever the number of rows (PostgreSQL folds
 * identical notifications of a transaction), delivered at commit, never for a rolled-back one.
 * PostgreSQL refuses to PREPARE a transaction that ran NOTIFY, so on a server that allows
 * prepared transactions the trigger stays silent, and takes no lock, unless the setting
 * sqlq.notify says 'on' (ALTER DATABASE … SET sqlq.notify = on: no writer of a watched table
 * uses PREPARE TRANSACTION); 'off' silences it everywhere. */
#define PG_NOTIFY_ON                                                                          \
    "(CASE current_setting('sqlq.notify', true) WHEN 'on' THEN true WHEN 'off' THEN false "    \
    "ELSE current_setting('max_prepared_transactions') = '0' END)"

static void pg_notify_sql(const sqlq_log_ctx *c, sqlq_sql_text *body)
{
    char channel[72];
    sqlq_pg_change_log_channel(&c->names, channel, sizeof(channel));
    sqlq_sql_text_add(body, "CASE WHEN " PG_NOTIFY_ON " THEN CASE WHEN "
                            "pg_try_advisory_xact_lock_shared(");
    pg_wake_key(&c->names, body);
    sqlq_sql_text_add(body, ") THEN NULL ELSE pg_notify(");
    sqlq_sql_text_literal(body, channel);
    sqlq_sql_text_add(body, ", '') END END");
}

/* The same decision as a boolean, for a notification sent later: whether this writer must
 * notify (notifications on, and the try of the wake-up lock failed). */
static void pg_wake_try_sql(const sqlq_log_ctx *c, sqlq_sql_text *body)
{
    sqlq_sql_text_add(body, "CASE WHEN " PG_NOTIFY_ON " THEN NOT "
                            "pg_try_advisory_xact_lock_shared(");
    pg_wake_key(&c->names, body);
    sqlq_sql_text_add(body, ") ELSE false END");
}

sqlq_result sqlq_pg_change_log_arm_sql(const sqlq_dialect *d, const sqlq_catalog_names *n,
                                       bool lock, char **out, sqlq_error *err)
{
    char seq[72];
    sqlq_pg_change_log_sequence(n, seq, sizeof(seq));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    if (lock) {
        sqlq_sql_text_add(&q, "SELECT pg_advisory_lock(");
        pg_wake_key(n, &q);
        sqlq_sql_text_add(&q, "); ");
    }
    sqlq_sql_text_add(&q, "SELECT " SQLQ_PG_SEQUENCE_LAST " FROM ");
    sqlq_catalog_object(&q, seq);
    return sqlq_sql_text_take(&q, out, err);
}

/* The version sequence as a string literal of its qualified name, for nextval() and setval(). */
static sqlq_result sequence_literal(const sqlq_log_ctx *c, sqlq_sql_text *into, sqlq_error *err)
{
    char seq[72];
    sqlq_pg_change_log_sequence(&c->names, seq, sizeof(seq));
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

void sqlq_pg_change_log_row_function(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "%s_row", n->log_function);
}

/* The FROM item that takes the versions of the upserts that need one twice (an insert: its
 * sqlq_since is its version; an update with the changed-column map): (SELECT nextval(<sequence>)
 * AS sqlq_version) sqlq_next, or for the inserted rows of a statement (SELECT key…, nextval(…)
 * AS sqlq_version FROM sqlq_inserted) sqlq_next, a version per row. A subquery whose list holds
 * a volatile function is not pulled up into the INSERT, so nextval is evaluated once per row of
 * the subquery, in the executor: after the plan cache locked the statement's target, the log,
 * in ROW EXCLUSIVE mode (to the end of the transaction), and after the user's statement locked
 * the keys' rows. */
static sqlq_result pg_version_from(const sqlq_log_ctx *c, const char *nextval, bool inserted,
                                   char **out, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "(SELECT ");
    if (inserted) { /* key columns cannot be named sqlq_*: no clash with the version */
        sqlq_catalog_key_list(&q, c->t, PG_INSERTED ".");
        sqlq_sql_text_add(&q, ", ");
    }
    sqlq_sql_text_add(&q, "%s AS " SQLQ_COL_VERSION "%s) sqlq_next", nextval,
                      inserted ? " FROM " PG_INSERTED : "");
    return sqlq_sql_text_take(&q, out, err);
}

/* One upsert of the row function. An update's or a delete's version is written once (its
 * sqlq_since is kept; the changed-column map would name it per column): nextval stands in the
 * VALUES list itself, evaluated once, in the executor, after the same locks (a Result node:
 * one plan node fewer than the FROM item, which the other upserts take it from). */
static void pg_row_upsert(sqlq_sql_text *body, const sqlq_log_ctx *c, const char *nextval,
                          const char *from, const char *row, char op)
{
    bool once = op != 'I' && !sqlq_change_log_options_use_version(&c->opts, op);
    sqlq_log_ctx u = *c;
    u.version_from = once ? NULL : from;
    sqlq_change_log_upsert(body, &u, row, op, once ? nextval : "sqlq_next." SQLQ_COL_VERSION);
}

/* The wake-up, evaluated by plpgsql as an IF condition (its value is ignored) before the
 * upserts: a simple expression, set up once per transaction (as a column of the upsert it would
 * be set up with the upsert's plan at every call, and PERFORM would run a SELECT through the
 * executor). Before them, because the writer must try the wake-up lock before it takes a
 * version (pg_arm.h: a writer that does not notify took all its versions after its try). */
static void pg_wakeup(sqlq_sql_text *body, const sqlq_log_ctx *c)
{
    sqlq_sql_text_add(body, " IF (");
    pg_notify_sql(c, body);
    sqlq_sql_text_add(body, ") IS NULL THEN END IF;");
}

/* The statement trigger's wake-up in two parts: the try in the declaration of sqlq_wake (before
 * the upsert takes versions), the notification after the upsert only when it wrote a row (an
 * INSERT that inserted nothing, such as INSERT … ON CONFLICT DO NOTHING of an existing key,
 * fires the trigger too, and signals nothing). */
static void pg_wake_declare(sqlq_sql_text *body, const sqlq_log_ctx *c)
{
    sqlq_sql_text_add(body, "DECLARE sqlq_wake boolean := ");
    pg_wake_try_sql(c, body);
    sqlq_sql_text_add(body, ";\n");
}

static void pg_wake_notify(sqlq_sql_text *body, const sqlq_log_ctx *c)
{
    char channel[72];
    sqlq_pg_change_log_channel(&c->names, channel, sizeof(channel));
    /* In parentheses: plpgsql ends an IF condition at its first THEN outside them. */
    sqlq_sql_text_add(body, " IF (CASE WHEN sqlq_wake AND FOUND THEN pg_notify(");
    sqlq_sql_text_literal(body, channel);
    sqlq_sql_text_add(body, ", '') IS NULL END) THEN END IF;");
}

/* The INSERT statement trigger's function: one upsert of the statement's inserted rows (its
 * transition table), each with its own version, and the wake-up when it wrote any (an INSERT
 * that inserted nothing fires the trigger too). A statement trigger's return value is ignored;
 * OLD is NULL there, and returning it evaluates no expression (RETURN NULL would be one more,
 * initialized in every transaction). #variable_conflict: key columns may be named like
 * plpgsql's variables (found, new, old) where the statement names them unqualified. */
static sqlq_result pg_statement_body(const sqlq_log_ctx *c, const char *nextval, char **out,
                                     sqlq_error *err)
{
    sqlq_log_ctx ps = *c;
    char *from = NULL;
    sqlq_result r = pg_version_from(c, nextval, true, &from, err);
    if (r != SQLQ_OK)
        return r;
    ps.version_from = from;
    sqlq_sql_text body;
    sqlq_sql_text_init(&body, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&body, " #variable_conflict use_column\n");
    pg_wake_declare(&body, c);
    sqlq_sql_text_add(&body, "BEGIN ");
    sqlq_change_log_upsert(&body, &ps, "sqlq_next.", 'I', "sqlq_next." SQLQ_COL_VERSION);
    pg_wake_notify(&body, c);
    sqlq_sql_text_add(&body, " RETURN OLD; END ");
    free(from);
    return sqlq_sql_text_take(&body, out, err);
}

/* The row trigger's function, once per updated or deleted row: one upsert (two for an update
 * that changes the key: delete the old key, insert the new one), then the wake-up. Each
 * upsert takes its version as it runs (pg_row_upsert): a key's later writer gets a larger
 * version, and a reader that finds no holder of the log's lock knows every version up to the
 * sequence value it read before is final (docs/capture.md). */
static sqlq_result pg_row_body(const sqlq_log_ctx *c, const char *nextval, char **out,
                               sqlq_error *err)
{
    char *from = NULL;
    sqlq_result r = pg_version_from(c, nextval, false, &from, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_sql_text body;
    sqlq_sql_text_init(&body, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&body, " #variable_conflict use_column\nBEGIN");
    pg_wakeup(&body, c);
    sqlq_sql_text_add(&body, " IF TG_OP = 'DELETE' THEN ");
    pg_row_upsert(&body, c, nextval, from, "OLD.", 'D');
    sqlq_sql_text_add(&body, " ELSIF (");
    sqlq_catalog_key_list(&body, c->t, "OLD.");
    sqlq_sql_text_add(&body, ") IS NOT DISTINCT FROM (");
    sqlq_catalog_key_list(&body, c->t, "NEW.");
    sqlq_sql_text_add(&body, ") THEN ");
    pg_row_upsert(&body, c, nextval, from, "NEW.", 'U');
    sqlq_sql_text_add(&body, " ELSE ");
    pg_row_upsert(&body, c, nextval, from, "OLD.", 'D');
    sqlq_sql_text_add(&body, " ");
    pg_row_upsert(&body, c, nextval, from, "NEW.", 'I');
    sqlq_sql_text_add(&body, " END IF; RETURN NULL; END ");
    free(from);
    return sqlq_sql_text_take(&body, out, err);
}

/* CREATE OR REPLACE FUNCTION sqlq.<name>() RETURNS trigger … AS <body>. */
static sqlq_result pg_function_create(const sqlq_log_ctx *c, const char *name, const char *body,
                                      sqlq_error *err)
{
    char tag[16];
    dollar_tag(body, tag, sizeof(tag));
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "CREATE OR REPLACE FUNCTION ");
    sqlq_catalog_object(&q, name);
    sqlq_sql_text_add(&q, "() RETURNS trigger LANGUAGE plpgsql AS %s%s%s", tag, body, tag);
    return sqlq_change_log_exec(c->db, &q, err);
}

/* Both functions: the statement trigger's under the log function's name (an earlier sqlq's
 * teardown drops that name, and fails while this sqlq's statement trigger uses it, instead of
 * leaving a trigger whose inserts fail), the row trigger's under <name>_row. */
static sqlq_result pg_functions(const sqlq_log_ctx *c, sqlq_error *err)
{
    char *nextval = NULL, *stmt = NULL, *row = NULL;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "nextval(");
    sqlq_result r = sequence_literal(c, &q, err);
    sqlq_sql_text_add(&q, ")");
    if (r == SQLQ_OK)
        r = sqlq_sql_text_take(&q, &nextval, err);
    else
        sqlq_sql_text_free(&q);
    if (r == SQLQ_OK)
        r = pg_statement_body(c, nextval, &stmt, err);
    if (r == SQLQ_OK)
        r = pg_row_body(c, nextval, &row, err);
    char row_fn[72];
    sqlq_pg_change_log_row_function(&c->names, row_fn, sizeof(row_fn));
    if (r == SQLQ_OK)
        r = pg_function_create(c, c->names.log_function, stmt, err);
    if (r == SQLQ_OK)
        r = pg_function_create(c, row_fn, row, err);
    free(nextval);
    free(stmt);
    free(row);
    return r;
}

/* The version sequence, created when missing (a first setup, a setup after --drop, or a log of
 * an earlier sqlq whose versions were transaction ids). It starts above every version that can
 * exist: the log's, every bridge's sync version, the current transaction id (an older log's
 * versions were ids of transactions that have all ended: the caller holds the watched
 * table's SHARE ROW EXCLUSIVE lock, so no writer of the old trigger is still open, and writers
 * waiting on that lock run the new trigger once it is released), and the clock in
 * microseconds: a log dropped with its sequence handed out fewer versions than microseconds
 * passed since its own start, so the new one starts above them (docs/capture.md, Versions). */
static sqlq_result pg_sequence(const sqlq_log_ctx *c, sqlq_error *err)
{
    char seq[72];
    sqlq_pg_change_log_sequence(&c->names, seq, sizeof(seq));
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
    r = sqlq_change_log_exec(c->db, &q, err);
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
    sqlq_sql_text_add(&q, "), CAST(CAST(pg_current_xact_id() AS text) AS bigint), "
                          "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000000) AS "
                          "bigint)))");
    if (r == SQLQ_OK)
        r = sqlq_change_log_exec(c->db, &q, err);
    else
        sqlq_sql_text_free(&q);
    if (r == SQLQ_OK)
        SQLQ_INFO("change_log_sequence_created", "table=%s sequence=sqlq.%s", c->names.table_key,
                  seq);
    return r;
}

static sqlq_result pg_trigger_drop(const sqlq_log_ctx *c, const char *name, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "DROP TRIGGER IF EXISTS ");
    sqlq_sql_text_ident(&q, name);
    sqlq_sql_text_add(&q, " ON ");
    sqlq_sql_text_table(&q, &c->names.table);
    return sqlq_change_log_exec(c->db, &q, err);
}

/* Two triggers: <trigger> for each updated or deleted row, running <function>_row, and
 * <trigger>_ins once per INSERT statement with its inserted rows, running <function>
 * (REFERENCING NEW TABLE: one upsert per statement instead of a function call and an upsert
 * per row; a transition table takes one event per trigger). An earlier sqlq's <trigger> also
 * fired per inserted row, and ran <function> for every event. */
sqlq_result sqlq_pg_change_log_trigger(const sqlq_log_ctx *c, bool create, sqlq_error *err)
{
    char ins[72], row_fn[72];
    snprintf(ins, sizeof(ins), "%s_ins", c->names.trigger);
    sqlq_pg_change_log_row_function(&c->names, row_fn, sizeof(row_fn));
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
        sqlq_catalog_object(&q, i ? c->names.log_function : row_fn);
        sqlq_sql_text_add(&q, "()");
        r = sqlq_change_log_exec(c->db, &q, err);
    }
    return r;
}

sqlq_result sqlq_pg_change_log_drop(const sqlq_log_ctx *c, sqlq_error *err)
{
    char row_fn[72];
    sqlq_pg_change_log_row_function(&c->names, row_fn, sizeof(row_fn));
    sqlq_result r = sqlq_pg_change_log_trigger(c, false, err);
    for (int i = 0; r == SQLQ_OK && i < 2; i++) {
        sqlq_sql_text q;
        sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
        sqlq_sql_text_add(&q, "DROP FUNCTION IF EXISTS ");
        sqlq_catalog_object(&q, i ? row_fn : c->names.log_function);
        sqlq_sql_text_add(&q, "()");
        r = sqlq_change_log_exec(c->db, &q, err);
    }
    return r;
}

/* The watched table's SHARE ROW EXCLUSIVE lock (what DROP TRIGGER takes anyway), first: open
 * writers finish before the version sequence is started and the trigger replaced, and this
 * setup takes its locks in the order writers do (table, then log). */
sqlq_result sqlq_pg_change_log_lock_table(const sqlq_log_ctx *c, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "LOCK TABLE ");
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_sql_text_add(&q, " IN SHARE ROW EXCLUSIVE MODE");
    return sqlq_change_log_exec(c->db, &q, err);
}

sqlq_result sqlq_pg_change_log_install(const sqlq_log_ctx *c, sqlq_error *err)
{
    sqlq_result r = pg_sequence(c, err);
    if (r == SQLQ_OK)
        r = pg_functions(c, err);
    if (r == SQLQ_OK)
        r = sqlq_pg_change_log_trigger(c, true, err);
    return r;
}
