/* logical_reader: the logical source's thread. It holds the slot's stream (one instance at a
 * time: a slot busy elsewhere is waited for), decodes each transaction, collapses it by key
 * (logical_txn.h) and hands it to the ready ring after its commit; it keeps answering the
 * server while the ring is full (the queue pushes back), and reports as flushed only what
 * pg_ack says may be. A dropped or lost slot is fatal for the route: never re-created here. */
#include "logical_source_internal.h"

#include "capture_stop.h"
#include "clock.h"
#include "log.h"
#include "logical_fetch.h"
#include "logical_rel.h"
#include "pg_stream.h"
#include "pg_text.h"
#include "sql_text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_FIRST_MS 500u
#define RETRY_MAX_MS 30000u
#define STANDBY_MS 2000u
#define CATCH_UP_IDLE_MS 3000u
#define HEARTBEAT_MS 10000u         /* an idle route's heartbeat at most this often */
#define HEARTBEAT_MIN_BYTES 65536u  /* and only when the server wrote this much WAL since */
#define TABLE_CHECK_MS 1000u        /* the table's identity and publication membership */

typedef struct reader {
    sqlq_logical_source *ls;
    sqlq_db *db;           /* the reader's own ODBC connection: user types, rows read by key */
    sqlq_pg_stream *stream;
    sqlq_logical_rel *rel; /* the table's latest Relation message */
    sqlq_logical_rel **old_rels; /* earlier ones the open transaction's changes were read with */
    size_t nold;
    sqlq_logical_txn txn;
    bool in_txn, skipping;
    uint64_t last_commit;  /* the greatest commit LSN handed over: a replay below it is skipped */
    uint64_t retry_ms;
    bool said_standby;
    uint64_t heartbeat_lsn;    /* the start's heartbeat: read through it, the stream caught up */
    uint64_t last_heartbeat_ms;
    bool said_no_heartbeat;
    uint64_t last_data_ms;     /* when the last XLogData message came */
    uint64_t last_table_check_ms;
    char *fetch_sql;           /* the row by key (fetch_row), built at its first use */
    char *options;
} reader;

static bool stopping(reader *r)
{
    pthread_mutex_lock(&r->ls->mu);
    bool s = r->ls->stop;
    pthread_mutex_unlock(&r->ls->mu);
    return s;
}

static uint64_t flushed(reader *r)
{
    pthread_mutex_lock(&r->ls->mu);
    uint64_t f = sqlq_pg_ack_confirmable(r->ls->ack);
    pthread_mutex_unlock(&r->ls->mu);
    return f;
}

/* Sleep up to ms, waking for a stop. */
static void nap(reader *r, uint64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000u);
    until.tv_nsec += (long)(ms % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->ls->mu);
    if (!r->ls->stop)
        pthread_cond_timedwait(&r->ls->cv, &r->ls->mu, &until);
    pthread_mutex_unlock(&r->ls->mu);
}

static void set_fatal(reader *r, const sqlq_error *e)
{
    pthread_mutex_lock(&r->ls->mu);
    r->ls->fatal = *e;
    r->ls->has_fatal = true;
    pthread_cond_broadcast(&r->ls->cv);
    pthread_mutex_unlock(&r->ls->mu);
    SQLQ_LOG_ERR(SQLQ_LOG_ERROR, "logical_stream_stopped", e, "table=%s slot=%s",
                 r->ls->names.table_key, r->ls->slot.slot);
}

/* The reader's own connection, made when there is none (false: it cannot be now; e says why). */
static bool own_db(reader *r, sqlq_error *e)
{
    if (!r->db && sqlq_db_connect(r->ls->conn, &r->db, e) != SQLQ_OK)
        r->db = NULL;
    return r->db != NULL;
}

/* After a failure on the reader's connection: a connection lost is made anew next time. */
static void after_db_failure(reader *r, const sqlq_error *e)
{
    if (e->transient || e->code == SQLQ_E_NETWORK) {
        sqlq_db_close(r->db);
        r->db = NULL;
    }
}

static void txn_done(reader *r);

static void drop_stream(reader *r)
{
    sqlq_pg_stream_close(r->stream);
    r->stream = NULL;
    txn_done(r);
    pthread_mutex_lock(&r->ls->mu);
    r->ls->holder = false;
    pthread_mutex_unlock(&r->ls->mu);
}

static void backoff(reader *r)
{
    r->retry_ms = r->retry_ms ? r->retry_ms * 2 : RETRY_FIRST_MS;
    if (r->retry_ms > RETRY_MAX_MS)
        r->retry_ms = RETRY_MAX_MS;
    nap(r, r->retry_ms);
}

/* A slot gone or lost (the refusal names sqlq backfill), or not usable by this role. */
static bool slot_fatal(reader *r, sqlq_error *e)
{
    sqlq_error chk;
    sqlq_error_clear(&chk);
    sqlq_pg_slot_need need = {.slot = true};
    if (r->db && sqlq_pg_slot_check(r->db, r->ls->table, &r->ls->slot, need, NULL, &chk) ==
                     SQLQ_E_UNSUPPORTED) {
        set_fatal(r, &chk);
        return true;
    }
    if (e->code == SQLQ_E_NOT_FOUND || (!e->transient && e->code == SQLQ_E_SQL)) {
        set_fatal(r, e);
        return true;
    }
    return false;
}

static void set_standby(reader *r, bool standby)
{
    pthread_mutex_lock(&r->ls->mu);
    r->ls->standby = standby;
    if (standby)
        pthread_cond_broadcast(&r->ls->cv);
    pthread_mutex_unlock(&r->ls->mu);
}

/* server_version_num (0 when it cannot be read: no logical messages asked for). */
static int64_t server_version(reader *r)
{
    int64_t v = 0;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (!r->db || sqlq_db_query_int(r->db, "SELECT current_setting('server_version_num')::int",
                                    NULL, 0, &v, &e) != SQLQ_OK)
        return 0;
    return v;
}

/* The server's WAL insert position (0 when it cannot be read). */
static uint64_t current_lsn(reader *r)
{
    int64_t v = 0;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (!r->db ||
        sqlq_db_query_int(r->db, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint",
                          NULL, 0, &v, &e) != SQLQ_OK)
        return 0;
    return (uint64_t)v;
}

static void mark_caught_up(reader *r, const char *how)
{
    pthread_mutex_lock(&r->ls->mu);
    if (!r->ls->caught_up) {
        SQLQ_DEBUG("logical_caught_up", "table=%s how=%s", r->ls->names.table_key, how);
        r->ls->caught_up = true;
        pthread_cond_broadcast(&r->ls->cv);
    }
    pthread_mutex_unlock(&r->ls->mu);
}

/* Without a heartbeat of its own (it could not be written) the stream counts as having read
 * what the slot held once it has been idle for CATCH_UP_IDLE_MS: a keepalive's WAL end says
 * nothing of what is still to come (pg_ack.h). */
static void note_idle(reader *r)
{
    if (!r->heartbeat_lsn && !r->in_txn &&
        sqlq_clock_mono_ms() - r->last_data_ms > CATCH_UP_IDLE_MS)
        mark_caught_up(r, "idle");
}

/* A transactional logical message in the watched database: its transaction commits after
 * everything committed before it, so when it comes back through the stream the stream has
 * read all of that (the catch-up of a start), and its commit is confirmable when nothing else
 * is in flight (an idle route on a busy server releases WAL). 0 when it cannot be written. */
static uint64_t heartbeat(reader *r)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    json_t *rows = NULL;
    uint64_t lsn = 0;
    if (r->db && sqlq_db_query(r->db, "SELECT pg_logical_emit_message(true, 'sqlq.heartbeat', "
                                      "'')::text AS lsn", NULL, 0, &rows, &e) == SQLQ_OK)
        (void)sqlq_pg_lsn_parse(json_string_value(json_object_get(json_array_get(rows, 0), "lsn")),
                                &lsn);
    else if (e.transient || e.code == SQLQ_E_NETWORK)
        after_db_failure(r, &e);
    else if (!r->said_no_heartbeat) {
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "logical_heartbeat_off", &e,
                     "table=%s note=\"an idle route keeps the WAL written since its last change "
                     "until the next change of its table commits\"", r->ls->names.table_key);
        r->said_no_heartbeat = true;
    }
    json_decref(rows);
    r->last_heartbeat_ms = sqlq_clock_mono_ms();
    return lsn;
}

/* Idle, and the server wrote WAL since what the slot confirmed: a heartbeat, at most every
 * HEARTBEAT_MS. */
static void maybe_heartbeat(reader *r)
{
    if (r->in_txn || sqlq_clock_mono_ms() - r->last_heartbeat_ms < HEARTBEAT_MS)
        return;
    pthread_mutex_lock(&r->ls->mu);
    bool idle = r->ls->qcount == 0 && sqlq_pg_ack_outstanding(r->ls->ack) == 0;
    uint64_t confirmed = sqlq_pg_ack_confirmable(r->ls->ack);
    pthread_mutex_unlock(&r->ls->mu);
    r->last_heartbeat_ms = sqlq_clock_mono_ms();
    sqlq_error e;
    sqlq_error_clear(&e);
    if (!own_db(r, &e))
        return;
    if (idle && current_lsn(r) > confirmed + HEARTBEAT_MIN_BYTES)
        (void)heartbeat(r);
}

/* Where the stream starts: what this process confirmed, else (a process that took the slot
 * over, or has confirmed nothing yet) the slot's confirmed_flush_lsn; 0 when unknown. */
static uint64_t start_confirmed(reader *r)
{
    uint64_t own = flushed(r);
    sqlq_pg_slot_state st;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (own)
        return own;
    for (int attempt = 0; attempt < 2; attempt++) { /* a connection from before a restart: anew */
        if (own_db(r, &e) && sqlq_pg_slot_state_get(r->db, &r->ls->slot, &st, &e) == SQLQ_OK)
            return st.confirmed_flush;
        sqlq_db_close(r->db);
        r->db = NULL;
    }
    return 0;
}

static void connect_stream(reader *r)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    if (!own_db(r, &e)) {
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "logical_connect_failed", &e, "table=%s", r->ls->names.table_key);
        backoff(r);
        return;
    }
    if (!r->options) {
        sqlq_buf b;
        sqlq_buf_init(&b, 0);
        if (sqlq_pg_text_options_read(r->db, &b, &e) == SQLQ_OK)
            r->options = sqlq_buf_take(&b, NULL);
        sqlq_buf_free(&b);
        sqlq_error_clear(&e);
    }
    sqlq_result rc = sqlq_pg_stream_open(r->ls->ci, r->options, r->ls->slot.slot,
                                         r->ls->slot.publication, server_version(r) >= 140000, 0,
                                         &r->stream, &e);
    if (rc == SQLQ_E_CONFLICT) { /* another instance streams from the slot: wait to take over */
        set_standby(r, true);
        if (!r->said_standby)
            SQLQ_INFO("logical_standby", "table=%s slot=%s reason=\"%s\"", r->ls->names.table_key,
                      r->ls->slot.slot, e.message);
        r->said_standby = true;
        nap(r, STANDBY_MS);
        return;
    }
    if (rc != SQLQ_OK) {
        if (!slot_fatal(r, &e)) {
            SQLQ_LOG_ERR(SQLQ_LOG_WARN, "logical_connect_failed", &e, "table=%s",
                         r->ls->names.table_key);
            backoff(r);
        }
        return;
    }
    r->retry_ms = 0;
    r->said_standby = false;
    set_standby(r, false);
    r->last_data_ms = sqlq_clock_mono_ms();
    r->heartbeat_lsn = heartbeat(r);
    pthread_mutex_lock(&r->ls->mu);
    r->ls->holder = true;
    pthread_mutex_unlock(&r->ls->mu);
    char lsn[32];
    sqlq_pg_lsn_format(start_confirmed(r), lsn, sizeof lsn);
    SQLQ_INFO("logical_stream_started", "table=%s slot=%s confirmed=%s pid=%d",
              r->ls->names.table_key, r->ls->slot.slot, lsn,
              sqlq_pg_stream_backend_pid(r->stream));
}

/* Wait for room in the ready ring, answering the server meanwhile (a status that fails is
 * left to the next read of the stream: the transaction being handed over is finished first). */
static void wait_room(reader *r)
{
    for (;;) {
        pthread_mutex_lock(&r->ls->mu);
        bool room = r->ls->qcount < r->ls->ready_max || r->ls->stop;
        pthread_mutex_unlock(&r->ls->mu);
        if (room)
            return;
        sqlq_error e;
        sqlq_error_clear(&e);
        if (r->stream && sqlq_pg_stream_status(r->stream, flushed(r), false, &e) != SQLQ_OK)
            SQLQ_LOG_ERR(SQLQ_LOG_DEBUG, "logical_status_failed", &e, "table=%s",
                         r->ls->names.table_key);
        nap(r, 200);
    }
}

/* Entry i of the transaction as a change: its message read back and decoded again. */
static sqlq_result build(reader *r, size_t i, sqlq_buf *raw, sqlq_logical_change *out,
                         sqlq_error *err)
{
    sqlq_logical_entry *e = &r->txn.items[i];
    sqlq_result rc = sqlq_logical_txn_read(&r->txn, i, raw);
    if (rc != SQLQ_OK)
        return sqlq_error_set(err, rc, true, "cannot read the transaction's temporary file");
    sqlq_pgo_msg m;
    rc = sqlq_pgoutput_decode(raw->data, raw->len, &m, err);
    if (rc == SQLQ_OK)
        rc = sqlq_logical_rel_build(e->rel, &m, e, r->ls->before_image, out, err);
    sqlq_pgoutput_free(&m);
    if (rc == SQLQ_OK && out->fetch_row)
        rc = sqlq_logical_fetch_row(r->db, r->ls->table, &r->fetch_sql, out, err);
    if (rc != SQLQ_OK)
        sqlq_logical_change_free(out);
    return rc;
}

/* build, again after a transient failure of the reader's connection (a row read by key while
 * the server restarts): the transaction is registered already and is handed over whole. */
static sqlq_result build_retrying(reader *r, size_t i, sqlq_buf *raw, sqlq_logical_change *out,
                                  sqlq_error *err)
{
    for (;;) {
        sqlq_error e;
        sqlq_error_clear(&e);
        if (!own_db(r, &e)) {
            if (stopping(r))
                return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "stopping");
            nap(r, 1000);
            continue;
        }
        sqlq_result rc = build(r, i, raw, out, &e);
        if (rc == SQLQ_OK || !e.transient || stopping(r)) {
            if (rc != SQLQ_OK && err && !err->code)
                *err = e;
            return rc;
        }
        SQLQ_LOG_ERR(SQLQ_LOG_WARN, "logical_row_read_failed", &e, "table=%s",
                     r->ls->names.table_key);
        sqlq_db_close(r->db);
        r->db = NULL;
        nap(r, 1000);
    }
}

static void txn_done(reader *r)
{
    sqlq_logical_txn_clear(&r->txn);
    r->in_txn = r->skipping = false;
    for (size_t i = 0; i < r->nold; i++)
        sqlq_logical_rel_free(r->old_rels[i]);
    r->nold = 0;
}

/* The transaction is committed: register it with the acknowledgement rule, then hand its
 * changes over one by one as the ready ring has room. Once registered it is handed over
 * whole: a failure here stops the source (the slot was not confirmed past it). */
static sqlq_result on_commit(reader *r, const sqlq_pgo_msg *m, sqlq_error *err)
{
    if (!r->in_txn || r->skipping) {
        if (r->heartbeat_lsn && m->u.commit.commit_lsn >= r->heartbeat_lsn)
            mark_caught_up(r, "heartbeat");
        txn_done(r);
        return SQLQ_OK;
    }
    uint64_t seq = 0;
    pthread_mutex_lock(&r->ls->mu);
    sqlq_result rc = sqlq_logical_ready_txn(r->ls, m->u.commit.end_lsn, r->txn.count, &seq);
    pthread_mutex_unlock(&r->ls->mu);
    if (rc != SQLQ_OK)
        return sqlq_error_set(err, rc, true, "out of memory");
    r->last_commit = m->u.commit.commit_lsn;
    sqlq_buf raw;
    sqlq_buf_init(&raw, 0);
    for (size_t i = 0; i < r->txn.count && rc == SQLQ_OK; i++) {
        wait_room(r);
        sqlq_logical_change c;
        rc = build_retrying(r, i, &raw, &c, err);
        pthread_mutex_lock(&r->ls->mu);
        if (rc == SQLQ_OK)
            rc = sqlq_logical_ready_add(r->ls, c, r->txn.commit_lsn, seq);
        pthread_mutex_unlock(&r->ls->mu);
    }
    sqlq_buf_free(&raw);
    if (r->heartbeat_lsn && m->u.commit.commit_lsn >= r->heartbeat_lsn)
        mark_caught_up(r, "heartbeat");
    txn_done(r);
    if (rc != SQLQ_OK) { /* half handed over: never confirmable, never skipped in silence */
        sqlq_error copy = *err;
        copy.transient = false;
        set_fatal(r, &copy);
    }
    return rc;
}

static void on_begin(reader *r, const sqlq_pgo_msg *m)
{
    txn_done(r);
    sqlq_logical_txn_init(&r->txn, m->u.begin.final_lsn, m->u.begin.commit_time);
    r->in_txn = true;
    r->skipping = m->u.begin.final_lsn <= r->last_commit; /* sent again after a reconnect */
}

static sqlq_result on_relation(reader *r, const sqlq_pgo_msg *m, sqlq_error *err)
{
    sqlq_logical_rel *rel = NULL;
    sqlq_result rc = sqlq_logical_rel_make(m, r->ls->table, r->db, &rel, err);
    if (rc != SQLQ_OK)
        return rc;
    if (r->in_txn && r->rel) { /* changes of this transaction were read with it: keep it */
        sqlq_logical_rel **old = realloc(r->old_rels, (r->nold + 1) * sizeof *old);
        if (!old) {
            sqlq_logical_rel_free(rel);
            return sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
        }
        r->old_rels = old;
        r->old_rels[r->nold++] = r->rel;
    } else {
        sqlq_logical_rel_free(r->rel);
    }
    r->rel = rel;
    return SQLQ_OK;
}

static void count_skip(reader *r, const sqlq_pgo_msg *m, bool truncate)
{
    pthread_mutex_lock(&r->ls->mu);
    long long n = truncate ? ++r->ls->truncates : ++r->ls->skipped;
    pthread_mutex_unlock(&r->ls->mu);
    if (truncate)
        SQLQ_WARN("logical_truncate_skipped",
                  "table=%s count=%lld note=\"on_truncate skip: the TRUNCATE is not published, "
                  "consumers keep the rows; reset them and run sqlq backfill if they must "
                  "follow\"",
                  r->ls->names.table_key, n);
    else if (n == 1 || n % 1000 == 0)
        SQLQ_INFO("logical_message_skipped", "table=%s kind=%s tag=%d count=%lld",
                  r->ls->names.table_key, sqlq_pgoutput_kind_name(m->kind), m->tag, n);
}

/* A TRUNCATE the route may not skip (on_truncate stop, the default): consumers still hold the
 * rows it removed, so the route stops before its transaction, which is never confirmed. */
static sqlq_result truncate_stop(reader *r, sqlq_error *err)
{
    char lsn[32];
    sqlq_pg_lsn_format(r->txn.commit_lsn, lsn, sizeof lsn);
    sqlq_result rc = sqlq_error_set(
        err, SQLQ_E_UNSUPPORTED, false,
        "table %s was truncated (the transaction that commits at %s): the consumers still hold "
        "its rows and sqlq publishes no TRUNCATE, so the route stops before it (the slot is not "
        "confirmed past it). Empty or reset what the consumers keep (or decide to keep it), then "
        "run the bridge with --on-truncate skip (route key on_truncate) to pass it; `sqlq "
        "backfill` sends the rows the table holds then",
        r->ls->names.table_key, lsn);
    sqlq_error_reason(err, SQLQ_STOP_TRUNCATED);
    return rc;
}

static sqlq_result on_message(reader *r, const sqlq_pg_stream_msg *sm, sqlq_error *err)
{
    sqlq_pgo_msg m;
    sqlq_result rc = sqlq_pgoutput_decode(sm->data, sm->len, &m, err);
    if (rc != SQLQ_OK)
        return rc;
    switch (m.kind) {
    case SQLQ_PGO_BEGIN: on_begin(r, &m); break;
    case SQLQ_PGO_COMMIT: rc = on_commit(r, &m, err); break;
    case SQLQ_PGO_RELATION: rc = on_relation(r, &m, err); break;
    case SQLQ_PGO_INSERT:
    case SQLQ_PGO_UPDATE:
    case SQLQ_PGO_DELETE:
        if (r->skipping)
            break;
        if (!r->rel || r->rel->relid != m.u.change.relid) {
            rc = sqlq_error_set(err, SQLQ_E_PARSE, false,
                                "a change of relation %u before its Relation message",
                                m.u.change.relid);
            break;
        }
        rc = sqlq_logical_rel_add(&r->txn, r->rel, &m, sm->data, sm->len, r->ls->changed, err);
        break;
    case SQLQ_PGO_TRUNCATE:
        if (!r->skipping && !r->ls->skip_truncate)
            rc = truncate_stop(r, err);
        else
            count_skip(r, &m, !r->skipping);
        break;
    case SQLQ_PGO_MESSAGE:
        if (strcmp(m.u.message.prefix, "sqlq.heartbeat") != 0)
            count_skip(r, &m, false);
        break;
    default: count_skip(r, &m, false); break;
    }
    sqlq_pgoutput_free(&m);
    return rc;
}

/* A table of the route's name is still in the publication: not dropped, not built again
 * under its name and left out (a new table, which the publication does not hold), not taken
 * out of it. Otherwise its changes would silently stop: the route stops instead
 * (capture_source_gone; what was received is polled first), is opened again, and streams again
 * once setup has put the table back. A table built again and already back in the publication
 * streams on (its Relation message comes with its first change): said once, since writes made
 * between the rebuild and the setup were not captured. */
static void check_table(reader *r)
{
    uint64_t now_ms = sqlq_clock_mono_ms();
    if (now_ms - r->last_table_check_ms < TABLE_CHECK_MS)
        return;
    r->last_table_check_ms = now_ms;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_pg_slot_table now;
    sqlq_logical_source *ls = r->ls;
    if (!own_db(r, &e) || sqlq_pg_slot_table_now(r->db, ls->table, &ls->slot, &now, &e) !=
                              SQLQ_OK) {
        after_db_failure(r, &e); /* the stream's own failures say the rest */
        return;
    }
    if (sqlq_pg_slot_table_verdict(ls->table, &ls->slot, ls->table_oid, &now, &e) != SQLQ_OK) {
        SQLQ_ERROR("capture_source_gone", "table=%s slot=%s oid=%u was=%u in_publication=%s",
                   ls->names.table_key, ls->slot.slot, now.oid, ls->table_oid,
                   now.member ? "true" : "false");
        set_fatal(r, &e); /* which says what to run */
    } else if (now.oid != ls->table_oid) {
        SQLQ_WARN("logical_table_rebuilt",
                  "table=%s oid=%u was=%u note=\"built again and back in publication %s: its "
                  "changes stream on; writes made between the rebuild and the setup were not "
                  "captured (sqlq backfill them)\"", ls->names.table_key, now.oid,
                  ls->table_oid, ls->slot.publication);
        ls->table_oid = now.oid; /* the reader's alone once open returned */
    }
}

static void read_some(reader *r)
{
    sqlq_pg_stream_msg sm;
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result rc = sqlq_pg_stream_next(r->stream, flushed(r), 200, &sm, &e);
    if (rc == SQLQ_OK && sm.event != SQLQ_PG_STREAM_NONE)
        SQLQ_TRACE("logical_received", "table=%s event=%d tag=%c lsn=%" PRIu64 " wal_end=%" PRIu64,
                   r->ls->names.table_key, (int)sm.event, sm.len ? sm.data[0] : '-', sm.lsn,
                   sm.wal_end);
    if (rc == SQLQ_OK && sm.event == SQLQ_PG_STREAM_KEEPALIVE) {
        note_idle(r);
    } else if (rc == SQLQ_OK && sm.event == SQLQ_PG_STREAM_DATA) {
        r->last_data_ms = sqlq_clock_mono_ms();
        rc = on_message(r, &sm, &e);
    }
    if (rc == SQLQ_OK)
        return;
    if (e.reason[0]) { /* the route stops for it; the stream stays to confirm (halted) */
        set_fatal(r, &e);
        return;
    }
    SQLQ_LOG_ERR(SQLQ_LOG_WARN, "logical_stream_lost", &e, "table=%s slot=%s",
                 r->ls->names.table_key, r->ls->slot.slot);
    drop_stream(r);
    if (!e.transient && e.code != SQLQ_E_NETWORK && e.code != SQLQ_E_NOMEM)
        set_fatal(r, &e); /* a message this reader cannot take: never skipped in silence */
    else
        backoff(r);
}

/* The route stops (a fatal verdict): nothing more is read, but what it releases of what was
 * handed over is still confirmed, until the source is closed (its last status): the route
 * opened again starts after it instead of sending it again. */
static void halted(reader *r)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    if (r->stream && sqlq_pg_stream_status(r->stream, flushed(r), false, &e) != SQLQ_OK)
        drop_stream(r);
    nap(r, 200);
}

void *sqlq_logical_reader_main(void *arg)
{
    reader r = {.ls = arg};
    while (!stopping(&r)) {
        pthread_mutex_lock(&r.ls->mu);
        bool fatal = r.ls->has_fatal;
        pthread_mutex_unlock(&r.ls->mu);
        if (fatal) {
            halted(&r);
            continue;
        }
        if (!r.stream) {
            connect_stream(&r);
        } else {
            read_some(&r);
            if (r.stream)
                maybe_heartbeat(&r);
        }
        check_table(&r);
    }
    if (r.stream) { /* a last status: what was released is confirmed before the slot is let go */
        sqlq_result last = sqlq_pg_stream_status(r.stream, flushed(&r), true, NULL);
        (void)last; /* best effort: unconfirmed changes are sent again to the next holder */
    }
    drop_stream(&r);
    sqlq_logical_rel_free(r.rel);
    free(r.old_rels);
    free(r.fetch_sql);
    sqlq_db_close(r.db);
    free(r.options);
    return NULL;
}
