/* change_log_pg: PostgreSQL's change-log trigger function, its row and INSERT-statement
 * triggers, the version sequence and the wake-up NOTIFY (docs/capture.md, Versions and
 * Wake-ups). */
#include "change_log.h"
#include "change_log_internal.h"

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

void sqlq_change_log_sequence(const sqlq_catalog_names *n, char *out, size_t size)
{
    snprintf(out, size, "ver_%s", n->log_table + strlen("log_"));
}

void sqlq_change_log_channel(const sqlq_catalog_names *n, char *out, size_t size)
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
    sqlq_change_log_channel(n, channel, sizeof(channel));
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
static void pg_notify_sql(const sqlq_log_ctx *c, sqlq_sql_text *body)
{
    char channel[72];
    sqlq_change_log_channel(&c->names, channel, sizeof(channel));
    sqlq_sql_text_add(body,
                      "CASE WHEN (CASE current_setting('sqlq.notify', true) WHEN 'on' THEN "
                      "true WHEN 'off' THEN false ELSE "
                      "current_setting('max_prepared_transactions') = '0' END) THEN CASE WHEN "
                      "pg_try_advisory_xact_lock_shared(");
    pg_wake_key(&c->names, body);
    sqlq_sql_text_add(body, ") THEN NULL ELSE pg_notify(");
    sqlq_sql_text_literal(body, channel);
    sqlq_sql_text_add(body, ", '') END END");
}

sqlq_result sqlq_change_log_pg_arm_sql(const sqlq_dialect *d, const sqlq_catalog_names *n,
                                       bool lock, char **out, sqlq_error *err)
{
    char seq[72];
    sqlq_change_log_sequence(n, seq, sizeof(seq));
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

/* The FROM item of the trigger's upserts: (SELECT <notify> AS sqlq_notify, nextval(<sequence>)
 * AS sqlq_version) sqlq_next; for the inserted rows of a statement, (SELECT <notify>, key…,
 * nextval(…) FROM sqlq_inserted) sqlq_next, a version per row. A subquery whose list
 * holds volatile functions is not pulled up into the INSERT, so each is evaluated once per row
 * of the subquery, in the executor: after the plan cache locked the statement's target, the
 * log, in ROW EXCLUSIVE mode (to the end of the transaction), and after the user's statement
 * locked the keys' rows. */
static sqlq_result pg_version_from(const sqlq_log_ctx *c, bool inserted, char **out,
                                   sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    /* The wake-up first: a list is evaluated in its order (ExecBuildProjectionInfo), so a
     * writer tries the wake-up lock before it takes a version (pg_arm.h relies on it). */
    sqlq_sql_text_add(&q, "(SELECT ");
    pg_notify_sql(c, &q);
    sqlq_sql_text_add(&q, " AS sqlq_notify, ");
    if (inserted) { /* key columns cannot be named sqlq_*: no clash with the two here */
        sqlq_catalog_key_list(&q, c->t, PG_INSERTED ".");
        sqlq_sql_text_add(&q, ", ");
    }
    sqlq_sql_text_add(&q, "nextval(");
    sqlq_result r = sequence_literal(c, &q, err);
    sqlq_sql_text_add(&q, ") AS " SQLQ_COL_VERSION "%s) sqlq_next",
                      inserted ? " FROM " PG_INSERTED : "");
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
static sqlq_result pg_function_body(const sqlq_log_ctx *c, char **out, sqlq_error *err)
{
    static const char v[] = "sqlq_next." SQLQ_COL_VERSION;
    sqlq_log_ctx pc = *c, ps = *c;
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
    sqlq_sql_text_add(&body,
                      " #variable_conflict use_column\nBEGIN IF TG_LEVEL = 'STATEMENT' THEN ");
    sqlq_change_log_upsert(&body, &ps, "sqlq_next.", 'I', v);
    sqlq_sql_text_add(&body, " ELSIF TG_OP = 'DELETE' THEN ");
    sqlq_change_log_upsert(&body, &pc, "OLD.", 'D', v);
    sqlq_sql_text_add(&body, " ELSIF (");
    sqlq_catalog_key_list(&body, c->t, "OLD.");
    sqlq_sql_text_add(&body, ") IS NOT DISTINCT FROM (");
    sqlq_catalog_key_list(&body, c->t, "NEW.");
    sqlq_sql_text_add(&body, ") THEN ");
    sqlq_change_log_upsert(&body, &pc, "NEW.", 'U', v);
    sqlq_sql_text_add(&body, " ELSE ");
    sqlq_change_log_upsert(&body, &pc, "OLD.", 'D', v);
    sqlq_sql_text_add(&body, " ");
    sqlq_change_log_upsert(&body, &pc, "NEW.", 'I', v);
    sqlq_sql_text_add(&body, " END IF; RETURN NULL; END ");
    free(from);
    free(from_inserted);
    return sqlq_sql_text_take(&body, out, err);
}

static sqlq_result pg_function_sql(const sqlq_log_ctx *c, char **out, sqlq_error *err)
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
static sqlq_result pg_sequence(const sqlq_log_ctx *c, sqlq_error *err)
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
    sqlq_sql_text_add(&q, "), CAST(CAST(pg_current_xact_id() AS text) AS bigint)))");
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

/* Two triggers run the log's function: <trigger> for each updated or deleted row, and
 * <trigger>_ins once per INSERT statement with its inserted rows (REFERENCING NEW TABLE: one
 * upsert per statement instead of a function call and an upsert per row; a transition table
 * takes one event per trigger). An earlier sqlq's <trigger> also fired per inserted row. */
sqlq_result sqlq_change_log_pg_trigger(const sqlq_log_ctx *c, bool create, sqlq_error *err)
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
        r = sqlq_change_log_exec(c->db, &q, err);
    }
    return r;
}

/* The watched table's SHARE ROW EXCLUSIVE lock (what DROP TRIGGER takes anyway), first: open
 * writers finish before the version sequence is started and the trigger replaced, and this
 * setup takes its locks in the order writers do (table, then log). */
sqlq_result sqlq_change_log_pg_lock_table(const sqlq_log_ctx *c, sqlq_error *err)
{
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(c->db));
    sqlq_sql_text_add(&q, "LOCK TABLE ");
    sqlq_sql_text_table(&q, &c->names.table);
    sqlq_sql_text_add(&q, " IN SHARE ROW EXCLUSIVE MODE");
    return sqlq_change_log_exec(c->db, &q, err);
}

sqlq_result sqlq_change_log_pg_install(const sqlq_log_ctx *c, sqlq_error *err)
{
    char *fn = NULL;
    sqlq_result r = pg_sequence(c, err);
    if (r == SQLQ_OK)
        r = pg_function_sql(c, &fn, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(c->db, fn, NULL, 0, NULL, err);
    free(fn);
    if (r == SQLQ_OK)
        r = sqlq_change_log_pg_trigger(c, true, err);
    return r;
}
