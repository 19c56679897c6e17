/* pg_capture_sql: the SQL of PostgreSQL's trigger log as the shared capture builder writes it
 * (capture_sql.h), and the statements of its read horizon (pg_horizon.h): the version
 * sequence's last value, the holders of the log's lock, the changes waiting above the horizon.
 * Reads are bounded by the horizon and take the sync version as a parameter; the poll is one
 * statement (a data-modifying WITH); statements returning one row start with a comment so that
 * psqlODBC sends them as they are. */
#include "pg_internal.h"

#include "capture_sql_builder.h"
#include "change_log.h"

#include <stdio.h>
#include <stdlib.h>

/* psqlODBC with UseDeclareFetch=1 runs a statement it sees starting with SELECT or WITH as
 * DECLARE CURSOR, FETCH and CLOSE: three round trips (with a savepoint around each in a
 * transaction). The statements of every batch return one row: a leading comment has them sent
 * as they are, one round trip. */
#define DIRECT "/* sqlq */ "

static sqlq_result poll(sqlq_capture_builder *b, sqlq_error *err)
{
    /* A data-modifying WITH cannot run inside DECLARE CURSOR (see DIRECT). */
    sqlq_sql_text_add(&b->t, "/* sqlq poll */ WITH b AS (");
    sqlq_cb_batch_select(b, false, NULL);
    sqlq_sql_text_add(&b->t, "), t AS (SELECT b.*, nextval('sqlq.lease_token') AS m_tok FROM b), "
                             "ins AS (INSERT INTO ");
    sqlq_cb_leases(b);
    sqlq_sql_text_add(&b->t, " AS l (");
    sqlq_cb_lease_columns(b);
    sqlq_sql_text_add(&b->t, ") SELECT ");
    sqlq_cb_lease_values_from_batch(b, "t.", true);
    sqlq_sql_text_add(&b->t, " FROM t");
    sqlq_cb_upsert_tail(b, "EXCLUDED");
    sqlq_sql_text_add(&b->t, ") ");
    sqlq_cb_batch_with_rows(b, "t AS b");
    return sqlq_cb_done(b, err);
}

/* The advisory transaction lock of this (bridge, table). */
static sqlq_result lock(sqlq_capture_builder *b, sqlq_error *err)
{
    sqlq_cb_direct(b);
    sqlq_sql_text_add(&b->t, "SELECT pg_advisory_xact_lock(hashtextextended(CAST(");
    sqlq_cb_param(b, SQLQ_P_LOCK);
    sqlq_sql_text_add(&b->t, " AS text), 0))");
    return sqlq_cb_done(b, err);
}

/* = ANY(ARRAY(...)): an index scan on the token. IN (SELECT ...) was a seq scan of the leases
 * table, whose dead rows pile up between autovacuum runs under load. */
static void tokens_in(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "= ANY(ARRAY(SELECT CAST(jsonb_array_elements_text(CAST(");
    sqlq_cb_param(b, SQLQ_P_TOKENS);
    sqlq_sql_text_add(&b->t, " AS jsonb)) AS bigint)))");
}

/* Skip rows a user transaction holds (its trigger is moving them to a newer version): waiting
 * for them could deadlock that transaction against this housekeeping. */
static sqlq_result trim_log(sqlq_capture_builder *b, sqlq_error *err)
{
    const char *log = b->c->names->log_table;
    sqlq_sql_text_add(&b->t, "DELETE FROM ");
    sqlq_cb_obj(b, log);
    sqlq_sql_text_add(&b->t, " WHERE ctid = ANY(ARRAY(SELECT ctid FROM ");
    sqlq_cb_obj(b, log);
    sqlq_sql_text_add(&b->t, " WHERE ");
    sqlq_cb_passed(b);
    sqlq_sql_text_add(&b->t, " FOR UPDATE SKIP LOCKED))");
    return sqlq_cb_done(b, err);
}

/* Every version handed out so far is "before now" (a transaction still open with one of them
 * is skipped: it began before the bridge). */
static void start_now(sqlq_capture_builder *b)
{
    char seq[72];
    sqlq_pg_change_log_sequence(b->c->names, seq, sizeof(seq));
    sqlq_sql_text_add(&b->t, "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 "
                             "END FROM ");
    sqlq_cb_obj(b, seq);
}

/* The key's column numbers and operator classes (a type of another family has another): one
 * row of pg_index. Joined with pg_attribute for names and types it cost 0.3 ms of planning per
 * poll; a renamed key column fails the poll's join instead, and a retyped one changes the
 * row's column types (capture_table_shape.c). */
static void key_expr(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT CAST(i.indkey AS text) || ' ' || CAST(i.indclass AS "
                             "text) FROM pg_catalog.pg_index i WHERE i.indrelid = CAST(");
    sqlq_cb_table_literal(b);
    sqlq_sql_text_add(&b->t, " AS regclass) AND i.indisprimary)");
}

/* The unique index's key the same way; NULL when it is gone, partial, on an expression, or a
 * key column became nullable. */
static void unique_key_expr(sqlq_capture_builder *b)
{
    sqlq_table_name in = b->c->table->name; /* an index lives in its table's schema */
    snprintf(in.name, sizeof(in.name), "%s", b->c->table->key_index);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, b->c->dialect);
    sqlq_sql_text_table(&q, &in);
    char *quoted = NULL;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_sql_text_take(&q, &quoted, &e) != SQLQ_OK) {
        b->t.rc = b->t.rc ? b->t.rc : e.code;
        return;
    }
    sqlq_sql_text_add(&b->t, "(SELECT CAST(i.indkey AS text) || ' ' || CAST(i.indclass AS "
                             "text) FROM pg_catalog.pg_index i WHERE i.indexrelid = "
                             "to_regclass(CAST(");
    sqlq_sql_text_literal(&b->t, quoted);
    free(quoted);
    sqlq_sql_text_add(&b->t, " AS text)) AND i.indrelid = CAST(");
    sqlq_cb_table_literal(b);
    sqlq_sql_text_add(&b->t, " AS regclass) AND i.indisunique AND i.indpred IS NULL AND "
                             "i.indexprs IS NULL AND NOT EXISTS (SELECT 1 FROM "
                             "pg_catalog.pg_attribute a WHERE a.attrelid = i.indrelid AND "
                             "a.attnum = ANY ((CAST(i.indkey AS int2[]))[0:i.indnkeyatts - 1]) "
                             "AND NOT a.attnotnull))");
}

/* The capture trigger, enabled. */
static void source_objects(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = "
                             "to_regclass(CAST(");
    sqlq_cb_table_literal(b);
    sqlq_sql_text_add(&b->t, " AS text)) AND tgname = ");
    sqlq_sql_text_literal(&b->t, b->c->names->trigger);
    sqlq_sql_text_add(&b->t, " AND tgenabled <> 'D')");
}

/* Changes after the sync version above the horizon: committed, not readable yet. */
static void held(sqlq_capture_builder *b)
{
    sqlq_sql_text_add(&b->t, "(SELECT count(*) FROM ");
    sqlq_cb_obj(b, b->c->names->log_table);
    sqlq_sql_text_add(&b->t, " WHERE " SQLQ_COL_VERSION " > ");
    sqlq_cb_param(b, SQLQ_P_HORIZON);
    sqlq_sql_text_add(&b->t, " AND " SQLQ_COL_VERSION " > ");
    sqlq_cb_sync_subquery(b);
    sqlq_sql_text_add(&b->t, ") AS m_held");
}

const sqlq_capture_log_sql sqlq_pg_log_sql = {
    .version_col = "c." SQLQ_COL_VERSION,
    .op_col = "c." SQLQ_COL_OP,
    .sync_param = true,
    .horizon = true,
    .typed_keys = true,
    .direct = DIRECT,
    .count_all = "count(*)",
    .source_objects = 1,
    .poll = poll,
    .lock = lock,
    .trim_log = trim_log,
    .tokens_in = tokens_in,
    .start_now = start_now,
    .key_expr = key_expr,
    .unique_key_expr = unique_key_expr,
    .source_objects_expr = source_objects,
    .held = held,
};

sqlq_result sqlq_pg_capture_sql_bounds(const sqlq_capture_sql *c, bool with_writers,
                                       sqlq_capture_stmt *out, sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    if (!with_writers) {
        sqlq_cb_direct(&b);
        sqlq_sql_text_add(&b.t, "SELECT sync_version AS m_sync FROM ");
        sqlq_cb_obj(&b, "state");
        sqlq_cb_state_row(&b);
        return sqlq_cb_done(&b, err);
    }
    /* One read of the lock table (pg_locks calls pg_lock_status() per reference): holders of
     * the log's ROW EXCLUSIVE lock in this database but this session, each with the top
     * transaction id of its virtual transaction (the oldest of its transactionid locks;
     * subtransactions hold younger ones). A prepared transaction has pid NULL. */
    sqlq_cb_direct(&b);
    sqlq_sql_text_add(&b.t, "WITH k AS MATERIALIZED (SELECT locktype, database, relation, mode, "
                            "granted, virtualtransaction, transactionid, pid FROM pg_locks), "
                            "w AS (SELECT DISTINCT l.virtualtransaction AS vx, l.pid AS m_pid "
                            "FROM k AS l WHERE l.locktype = 'relation' AND l.mode = "
                            "'RowExclusiveLock' AND l.database = (SELECT oid FROM pg_database "
                            "WHERE datname = current_database()) AND l.relation = to_regclass(");
    sqlq_sql_text t;
    sqlq_sql_text_init(&t, c->dialect);
    sqlq_catalog_object(&t, c->names->log_table);
    char *log = NULL;
    sqlq_result r = sqlq_sql_text_take(&t, &log, err);
    if (r != SQLQ_OK) {
        sqlq_sql_text_free(&b.t);
        return r;
    }
    sqlq_sql_text_literal(&b.t, log);
    free(log);
    sqlq_sql_text_add(&b.t,
                      ") AND l.pid IS DISTINCT FROM pg_backend_pid()) "
                      "SELECT s.sync_version AS m_sync, w.m_pid, (SELECT CAST(x.transactionid "
                      "AS text) FROM k AS x WHERE x.locktype = 'transactionid' AND x.mode = "
                      "'ExclusiveLock' AND x.granted AND x.virtualtransaction = w.vx ORDER BY "
                      "age(x.transactionid) DESC LIMIT 1) AS m_xid FROM (SELECT sync_version "
                      "FROM ");
    sqlq_cb_obj(&b, "state");
    sqlq_cb_state_row(&b);
    sqlq_sql_text_add(&b.t, ") AS s LEFT JOIN w ON true");
    return sqlq_cb_done(&b, err);
}

sqlq_result sqlq_pg_capture_sql_sequence(const sqlq_capture_sql *c, bool with_lock,
                                         sqlq_capture_stmt *out, sqlq_error *err)
{
    sqlq_capture_builder b;
    sqlq_cb_init(&b, c, out);
    char seq[72];
    sqlq_pg_change_log_sequence(c->names, seq, sizeof(seq));
    sqlq_cb_direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT ");
    if (with_lock) {
        sqlq_sql_text_add(&b.t, "pg_advisory_xact_lock(hashtextextended(CAST(");
        sqlq_cb_param(&b, SQLQ_P_LOCK);
        sqlq_sql_text_add(&b.t, " AS text), 0)) AS m_lock, ");
        /* The poll's plan, whatever the statistics say (docs/capture.md, "No plan cliff"):
         * for this transaction only, a sort costs more than any other plan, so the poll reads
         * the log's (version, key) index in order and stops at the batch limit. With the
         * log's statistics taken when it was nearly empty, the planner otherwise guesses a
         * tiny range and sorts the whole backlog on every poll. JIT off with it: the sort's
         * penalty in the plan's cost would otherwise compile the poll (about 1 s) each time. */
        sqlq_sql_text_add(&b.t, "set_config('enable_sort', 'off', true) AS m_plan, "
                                "set_config('jit', 'off', true) AS m_jit, ");
    }
    sqlq_sql_text_add(&b.t, "(SELECT " SQLQ_PG_SEQUENCE_LAST " FROM ");
    sqlq_cb_obj(&b, seq);
    sqlq_sql_text_add(&b.t, ") AS m_seq");
    return sqlq_cb_done(&b, err);
}
