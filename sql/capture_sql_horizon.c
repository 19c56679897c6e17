/* capture_sql_horizon: the PostgreSQL statements of the read horizon (capture_horizon.h): the
 * version sequence's last value, the holders of the log's lock, and the log's newest version
 * (with what waits above the horizon) for status. Half of capture_sql.h. */
#include "capture_sql.h"

#include "capture_sql_builder.h"
#include "change_log.h"

#include <stdio.h>

sqlq_result sqlq_capture_sql_bounds(const sqlq_capture_sql *c, bool with_writers,
                                    sqlq_capture_stmt *out, sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (!is_pg(&b) || c->change_tracking) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    if (!with_writers) {
        direct(&b);
        sqlq_sql_text_add(&b.t, "SELECT sync_version AS m_sync FROM ");
        obj(&b, "state");
        state_row(&b);
        return b_done(&b, err);
    }
    /* One read of the lock table (pg_locks calls pg_lock_status() per reference): holders of
     * the log's ROW EXCLUSIVE lock in this database but this session, each with the top
     * transaction id of its virtual transaction (the oldest of its transactionid locks;
     * subtransactions hold younger ones). A prepared transaction has pid NULL. */
    direct(&b);
    sqlq_sql_text_add(&b.t, "WITH k AS MATERIALIZED (SELECT locktype, database, relation, mode, "
                            "granted, virtualtransaction, transactionid, pid FROM pg_locks), "
                            "w AS (SELECT DISTINCT l.virtualtransaction AS vx, l.pid AS m_pid "
                            "FROM k AS l WHERE l.locktype = 'relation' AND l.mode = "
                            "'RowExclusiveLock' AND l.database = (SELECT oid FROM pg_database "
                            "WHERE datname = current_database()) AND l.relation = to_regclass(");
    sqlq_sql_text t;
    sqlq_sql_text_init(&t, &sqlq_dialect_postgres);
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
    obj(&b, "state");
    state_row(&b);
    sqlq_sql_text_add(&b.t, ") AS s LEFT JOIN w ON true");
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_sequence(const sqlq_capture_sql *c, bool with_lock,
                                      sqlq_capture_stmt *out, sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (!is_pg(&b) || c->change_tracking) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    char seq[72];
    sqlq_change_log_sequence(c->names, seq, sizeof(seq));
    direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT ");
    if (with_lock) {
        sqlq_sql_text_add(&b.t, "pg_advisory_xact_lock(hashtextextended(CAST(");
        param(&b, SQLQ_P_LOCK);
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
    obj(&b, seq);
    sqlq_sql_text_add(&b.t, ") AS m_seq");
    return b_done(&b, err);
}

sqlq_result sqlq_capture_sql_newest(const sqlq_capture_sql *c, sqlq_capture_stmt *out,
                                    sqlq_error *err)
{
    builder b;
    b_init(&b, c, out);
    if (c->change_tracking) {
        sqlq_sql_text_free(&b.t);
        return SQLQ_OK;
    }
    direct(&b);
    sqlq_sql_text_add(&b.t, "SELECT (SELECT max(" SQLQ_COL_VERSION ") FROM ");
    obj(&b, c->names->log_table);
    sqlq_sql_text_add(&b.t, ") AS m_newest, ");
    if (is_pg(&b)) {
        sqlq_sql_text_add(&b.t, "(SELECT count(*) FROM ");
        obj(&b, c->names->log_table);
        sqlq_sql_text_add(&b.t, " WHERE " SQLQ_COL_VERSION " > ");
        param(&b, SQLQ_P_HORIZON);
        sqlq_sql_text_add(&b.t, " AND " SQLQ_COL_VERSION " > ");
        sync_subquery(&b);
        sqlq_sql_text_add(&b.t, ") AS m_held");
    } else {
        sqlq_sql_text_add(&b.t, "0 AS m_held");
    }
    return b_done(&b, err);
}
