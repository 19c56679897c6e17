#include "sql_sink.h"

#include "buf.h"
#include "classify.h"
#include "clock.h"
#include "codec.h"
#include "db.h"
#include "dialect.h"
#include "log.h"
#include "sink_change.h"
#include "sink_manifest.h"
#include "sink_param.h"
#include "sink_pool.h"
#include "table.h"
#include "table_key.h"
#include "upsert.h"
#include "version_guard.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sql.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct sqlq_sql_sink {
    char *conn;
    sqlq_table_name name;
    char shown[600]; /* the table as the user wrote it, for messages */
    sqlq_table *table;
    const sqlq_dialect *dialect;
    bool guard;                 /* skip changes not newer than the last applied (version) */
    sqlq_table_name versions;   /* the guard's state table */
    char target[600];           /* the target as stored in the state table */
    pthread_mutex_t write_lock; /* SQLite: one writer at a time */
    sqlq_sink_pool *pool;       /* the handler's connections */
    sqlq_counter *m_skipped;    /* SQLQ_METRIC_SINK_SKIPPED; NULL without metrics */
    atomic_ullong skipped, skipped_unlogged;
    _Atomic int64_t next_skip_log_ms;
    sqlq_sink_repair repair;    /* repair manifests (sink_manifest.h), with the guard */
    sqlq_counter *m_read_older; /* backfill rows older than what the sink holds */
    atomic_ullong read_older_unlogged;
    _Atomic int64_t next_read_log_ms;
};

/* ---- create / destroy ---- */

/* The connection that checks the table at start; a failure names the target database. */
static sqlq_result connect_at_start(sqlq_sql_sink *s, sqlq_db **out, sqlq_error *err)
{
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_result r = sqlq_db_connect(s->conn, out, &e);
    if (r == SQLQ_OK || (err && err->code != SQLQ_OK))
        return r;
    if (err) {
        char line[1400];
        snprintf(line, sizeof(line), "cannot connect to the target database (%s) to check --table %s: %s",
                 sqlq_sink_pool_target(s->pool), s->shown, e.message);
        *err = e;
        snprintf(err->message, sizeof(err->message), "%.511s", line);
    }
    return r;
}

sqlq_result sqlq_sql_sink_create(const char *conn, const char *table, const char *version_table,
                                 sqlq_sql_sink **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_sql_sink *s = calloc(1, sizeof(*s));
    if (!s || !(s->conn = strdup(conn ? conn : ""))) {
        free(s);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    pthread_mutex_init(&s->write_lock, NULL);
    snprintf(s->shown, sizeof(s->shown), "%s", table ? table : "");
    sqlq_result r = sqlq_sink_pool_create(s->conn, &s->pool, err);
    if (r == SQLQ_OK)
        r = sqlq_table_name_parse(table ? table : "", &s->name, err);
    sqlq_db *db = NULL;
    if (r == SQLQ_OK)
        r = connect_at_start(s, &db, err);
    if (r == SQLQ_OK) {
        s->dialect = sqlq_db_dialect(db);
        r = sqlq_table_describe_any(db, &s->name, &s->table, err);
        if (r == SQLQ_OK) /* no primary key: upsert by its one unique key of NOT NULL columns */
            r = sqlq_table_key_use_sole_unique(db, s->table, err);
        if (r == SQLQ_E_NOT_FOUND) {
            sqlq_error_clear(err);
            r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                               "--table %s: the table does not exist in the target database "
                               "(create it first: the sink never creates tables)",
                               s->shown);
        }
    }
    if (r == SQLQ_OK && version_table && *version_table) {
        s->guard = true;
        sqlq_table_name_format(&s->name, s->target, sizeof(s->target));
        r = sqlq_table_name_parse(version_table, &s->versions, err);
        if (r == SQLQ_OK)
            r = sqlq_version_guard_install(db, &s->versions, err);
        if (r == SQLQ_OK)
            r = sqlq_sink_repair_init(&s->repair, &s->versions, s->target, err);
    }
    sqlq_db_close(db);
    if (r != SQLQ_OK) {
        sqlq_sql_sink_destroy(s);
        return r;
    }
    *out = s;
    return SQLQ_OK;
}

void sqlq_sql_sink_destroy(sqlq_sql_sink *s)
{
    if (!s)
        return;
    sqlq_table_free(s->table);
    sqlq_sink_pool_destroy(s->pool);
    pthread_mutex_destroy(&s->write_lock);
    free(s->conn);
    free(s);
}

sqlq_result sqlq_sql_sink_check(const sqlq_sql_sink *s, const char *body, size_t len,
                                sqlq_error *err)
{
    sqlq_msg_manifest m;
    sqlq_result r = sqlq_msg_manifest_parse(body, len, &m, err);
    sqlq_msg_manifest_free(&m);
    if (r != SQLQ_E_NOT_FOUND)
        return r;
    sqlq_sink_changes l;
    r = sqlq_sink_changes_parse(s->table, s->shown, body, len, &l, err);
    if (r == SQLQ_OK)
        sqlq_sink_changes_free(&l);
    return r;
}

/* ---- applying ---- */

static sqlq_result apply_delete(sqlq_sql_sink *s, sqlq_db *db, const sqlq_sink_change *c, sqlq_error *err)
{
    const char **names = calloc(s->table->nkey, sizeof(char *));
    sqlq_sink_params ps;
    sqlq_result r = sqlq_sink_params_init(&ps, s->table->nkey);
    if (!names || r != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t i = 0; r == SQLQ_OK && i < s->table->nkey; i++) {
        const sqlq_column *col = &s->table->columns[s->table->key[i]];
        names[i] = col->name;
        r = sqlq_sink_params_add(&ps, s->dialect, col, sqlq_sink_key_value(s->table, c->key, col), err);
    }
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    if (r == SQLQ_OK)
        r = sqlq_upsert_delete_sql(s->dialect, &s->name, names, s->table->nkey, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&sql), ps.p, ps.n, NULL, err);
    sqlq_buf_free(&sql);
    sqlq_sink_params_free(&ps);
    free(names);
    return r;
}

static sqlq_result apply_upsert(sqlq_sql_sink *s, sqlq_db *db, const sqlq_sink_change *c, sqlq_error *err)
{
    size_t cap = json_object_size(c->row) + s->table->nkey;
    const char **names = calloc(cap, sizeof(char *));
    const char **key = calloc(s->table->nkey, sizeof(char *));
    sqlq_sink_params ps;
    sqlq_result r = sqlq_sink_params_init(&ps, cap);
    if (!names || !key || r != SQLQ_OK)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    size_t n = 0;
    const char *name;
    json_t *v;
    json_object_foreach(c->row, name, v)
    {
        const sqlq_column *col = sqlq_table_column(s->table, name);
        if (r == SQLQ_OK && col) {
            names[n++] = col->name;
            r = sqlq_sink_params_add(&ps, s->dialect, col, v, err);
        }
    }
    /* Key columns missing from the row come from the key. */
    for (size_t i = 0; r == SQLQ_OK && i < s->table->nkey; i++) {
        const sqlq_column *col = &s->table->columns[s->table->key[i]];
        key[i] = col->name;
        bool present = false;
        for (size_t j = 0; j < n; j++)
            present = present || names[j] == col->name;
        if (!present) {
            names[n++] = col->name;
            r = sqlq_sink_params_add(&ps, s->dialect, col, sqlq_sink_key_value(s->table, c->key, col), err);
        }
    }
    sqlq_buf sql;
    sqlq_buf_init(&sql, 0);
    if (r == SQLQ_OK)
        r = sqlq_upsert_sql(s->dialect, &s->name, names, n, key, s->table->nkey, &sql, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_buf_str(&sql), ps.p, ps.n, NULL, err);
    sqlq_buf_free(&sql);
    sqlq_sink_params_free(&ps);
    free(names);
    free(key);
    return r;
}

/* The canonical key JSON the guard hashes (sorted keys, compact) and its hash. */
static sqlq_result guard_key(const json_t *key, char **out_json, char hash[65], sqlq_error *err)
{
    *out_json = json_dumps(key, JSON_SORT_KEYS | JSON_COMPACT);
    if (!*out_json)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_version_guard_key_hash(*out_json, hash);
    return SQLQ_OK;
}

/* Skipped changes: counted, and logged at info level at most once per SKIP_LOG_MS with the
 * number skipped since the last line (a replay of a whole queue must not flood the log). */
static void note_skipped(sqlq_sql_sink *s, sqlq_db *db, const sqlq_sink_change *c,
                         const char *key, const char *hash)
{
    atomic_fetch_add(&s->skipped, 1);
    sqlq_counter_inc(s->m_skipped);
    unsigned long long pending = atomic_fetch_add(&s->skipped_unlogged, 1) + 1;
    int64_t now = sqlq_clock_wall_ms();
    int64_t next = atomic_load(&s->next_skip_log_ms);
    if (now < next || !atomic_compare_exchange_strong(&s->next_skip_log_ms, &next,
                                                      now + SQLQ_SQL_SINK_SKIP_LOG_MS))
        return;
    atomic_fetch_sub(&s->skipped_unlogged, pending);
    int64_t stored = 0;
    bool found = false;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_version_guard_stored(db, &s->versions, s->target, hash, &stored, &found, &e) !=
        SQLQ_OK)
        found = false;
    SQLQ_INFO("sink.skipped",
              "table=%s key=%.200s version=%lld stored_version=%lld skipped=%llu "
              "note=\"not newer than the version last applied for this key (a redelivery or "
              "an older change arriving late); reset it with consume --reset-version if the "
              "stored version is wrong\"",
              s->shown, key, (long long)c->version, found ? (long long)stored : -1LL, pending);
}

/* A backfill row skipped as older than what the sink holds for its key: the backfill gives
 * every row a version at least that of its key's last change (docs/messages.md, Versions), so
 * an older one means the source's versions went back or the sink holds a wrong version: the
 * row stays stale. Counted, and warned about (at most once per SKIP_LOG_MS, with the count). */
static void note_read_older(sqlq_sql_sink *s, sqlq_db *db, const sqlq_sink_change *c,
                            const char *key, const char *hash)
{
    int64_t stored = 0;
    bool found = false;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (sqlq_version_guard_stored(db, &s->versions, s->target, hash, &stored, &found, &e) !=
            SQLQ_OK ||
        !found || stored <= c->version)
        return; /* the same version: the same state, skipped rightly */
    sqlq_counter_inc(s->m_read_older);
    unsigned long long pending = atomic_fetch_add(&s->read_older_unlogged, 1) + 1;
    int64_t now = sqlq_clock_wall_ms();
    int64_t next = atomic_load(&s->next_read_log_ms);
    if (now < next || !atomic_compare_exchange_strong(&s->next_read_log_ms, &next,
                                                      now + SQLQ_SQL_SINK_SKIP_LOG_MS))
        return;
    atomic_fetch_sub(&s->read_older_unlogged, pending);
    SQLQ_WARN("sink.backfill_row_skipped",
              "table=%s key=%.200s version=%lld stored_version=%lld skipped=%llu "
              "note=\"a backfill row older than the version this sink holds for its key stays "
              "unapplied (the source's versions went back, or the stored one is wrong): reset it "
              "with consume --reset-version and backfill again\"",
              s->shown, key, (long long)c->version, (long long)stored, pending);
}

/* With the guard, a versioned change applies only when newer than the last one applied for
 * its key (*out_apply false: skip it, it is a redelivery or arrived out of order). */
static sqlq_result claim(sqlq_sql_sink *s, sqlq_db *db, const sqlq_sink_change *c, bool *out_apply,
                         sqlq_error *err)
{
    *out_apply = true;
    if (!s->guard || !c->has_version)
        return SQLQ_OK;
    char *key = NULL, hash[65];
    sqlq_result r = guard_key(c->key, &key, hash, err);
    if (r == SQLQ_OK)
        r = sqlq_version_guard_claim(db, &s->versions, s->target, hash, key, c->version,
                                     out_apply, err);
    if (r == SQLQ_OK && !*out_apply)
        note_skipped(s, db, c, key, hash);
    if (r == SQLQ_OK && !*out_apply && c->read)
        note_read_older(s, db, c, key, hash);
    free(key);
    return r;
}

static sqlq_result delete_key(void *arg, sqlq_db *db, json_t *key, sqlq_error *err)
{
    sqlq_sink_change c = {.kind = SQLQ_SINK_DELETE, .key = key};
    return apply_delete(arg, db, &c, err);
}

/* A repair manifest (sink_manifest.h); SQLQ_E_NOT_FOUND when body is not one. A malformed one,
 * or one without the version check, is refused for good (SQLQ_E_REJECTED). */
static sqlq_result apply_manifest(sqlq_sql_sink *s, sqlq_db *db, const char *body, size_t len,
                                  sqlq_error *err)
{
    sqlq_msg_manifest m;
    sqlq_result r = sqlq_msg_manifest_parse(body, len, &m, err);
    if (r == SQLQ_E_NOT_FOUND)
        return r;
    if (r == SQLQ_OK && !s->guard)
        r = sqlq_error_set(err, SQLQ_E_INVALID, false,
                           "a repair manifest needs the version check (it is off): its versions "
                           "say which rows are older than the backfill");
    if (r != SQLQ_OK) {
        err->code = SQLQ_E_REJECTED;
        sqlq_msg_manifest_free(&m);
        return SQLQ_E_REJECTED;
    }
    sqlq_sink_manifest_ctx ctx = {s->table, s->shown, &s->repair, delete_key, s};
    long long deleted = -1;
    r = sqlq_sink_manifest_apply(&ctx, db, &m, &deleted, err);
    sqlq_msg_manifest_free(&m);
    return r;
}

typedef struct keyed {
    char *key; /* canonical text of the change's key */
    size_t at; /* its place in the message: equal keys keep their order */
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The changes of one message in the order of their keys, so that two messages applied at once
 * take their row locks in the same order and cannot deadlock on each other (only the order of
 * changes of the same key matters, and it is kept). Left as it is when out of memory. */
static void order_by_key(sqlq_sink_changes *l)
{
    if (l->n < 2)
        return;
    keyed *k = calloc(l->n, sizeof(*k));
    sqlq_sink_change *sorted = calloc(l->n, sizeof(*sorted));
    bool ok = k && sorted;
    for (size_t i = 0; ok && i < l->n; i++) {
        k[i].key = json_dumps(l->items[i].key, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        k[i].at = i;
        ok = k[i].key != NULL;
    }
    if (ok) {
        qsort(k, l->n, sizeof(*k), keyed_cmp);
        for (size_t i = 0; i < l->n; i++)
            sorted[i] = l->items[k[i].at];
        memcpy(l->items, sorted, l->n * sizeof(*sorted));
    }
    for (size_t i = 0; k && i < l->n; i++)
        free(k[i].key);
    free(k);
    free(sorted);
}

static sqlq_result apply(sqlq_sql_sink *s, sqlq_db *db, const char *body, size_t len,
                         sqlq_error *err)
{
    sqlq_result r = apply_manifest(s, db, body, len, err);
    if (r != SQLQ_E_NOT_FOUND)
        return r;
    sqlq_sink_changes l;
    r = sqlq_sink_changes_parse(s->table, s->shown, body, len, &l, err);
    if (r != SQLQ_OK)
        return r;
    order_by_key(&l);
    r = sqlq_db_begin(db, err);
    size_t applied = 0;
    for (size_t i = 0; r == SQLQ_OK && i < l.n; i++) {
        bool go;
        r = claim(s, db, &l.items[i], &go, err);
        if (r != SQLQ_OK || !go)
            continue;
        r = l.items[i].kind == SQLQ_SINK_DELETE ? apply_delete(s, db, &l.items[i], err)
                                                : apply_upsert(s, db, &l.items[i], err);
        applied++;
    }
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    else
        SQLQ_DEBUG("sink.applied", "table=%s changes=%zu applied=%zu", s->shown, l.n, applied);
    sqlq_sink_changes_free(&l);
    return r;
}

/* ---- the handler ---- */

/* Tries of one message whose transaction a deadlock or serialization failure rolled back,
 * before that failure counts as the message's attempt. */
#define SINK_CONFLICT_TRIES 5

/* One message on a connection of the pool. A failure that means the database went away is
 * SQLQ_E_UNAVAILABLE (an outage: the consumer holds the message and retries it, never counting
 * it toward poison); the connection is then dropped and the next attempt opens a new one. */
static sqlq_result sink_handle(void *ctx, const sqlq_received *d, sqlq_error *err)
{
    sqlq_sql_sink *s = ctx;
    sqlq_db *db = NULL;
    sqlq_result r = sqlq_sink_pool_take(s->pool, d, &db, err);
    if (r != SQLQ_OK)
        return r;
    bool serial = s->dialect->serial_writer;
    if (serial)
        pthread_mutex_lock(&s->write_lock);
    sqlq_error e;
    for (int tries = 1;; tries++) {
        sqlq_error_clear(&e);
        r = apply(s, db, d->body, d->body_len, &e);
        if (r != SQLQ_E_SQL || !sqlq_classify_sql_conflict(e.sqlstate, e.native_code) ||
            tries == SINK_CONFLICT_TRIES)
            break;
        /* Rolled back whole to break a conflict with another message's transaction (a unique
         * index, a foreign key): not this message's fault, so tried again here first. */
        SQLQ_DEBUG("sink.conflict_retry", "table=%s try=%d sqlstate=%s", s->shown, tries,
                   e.sqlstate);
        struct timespec pause = {0, 20L * 1000000L * tries};
        nanosleep(&pause, NULL);
    }
    if (serial)
        pthread_mutex_unlock(&s->write_lock);
    bool gone = r == SQLQ_E_SQL && sqlq_classify_sql_unavailable(e.sqlstate, e.native_code, e.message);
    sqlq_sink_pool_give(s->pool, db, gone);
    if (gone)
        return sqlq_sink_pool_unavailable(s->pool, &e, err);
    if (r == SQLQ_E_SQL && sqlq_sql_sink_rejects(s->dialect, &e)) {
        e.code = SQLQ_E_REJECTED; /* the message keeps the driver's words as the reason */
        r = SQLQ_E_REJECTED;
    }
    if (r != SQLQ_OK && err && err->code == SQLQ_OK)
        *err = e;
    return r;
}

/* What no retry can fix: the row itself breaks a NOT NULL or CHECK constraint, or a value does
 * not fit the column (SQLSTATE class 22), in the portable SQLSTATEs or the dialect's own codes.
 * A foreign key or unique violation may pass once other changes arrived: retried as usual. */
bool sqlq_sql_sink_rejects(const sqlq_dialect *d, const sqlq_error *e)
{
    if (e->transient)
        return false;
    if (strcmp(e->sqlstate, "23502") == 0 || strcmp(e->sqlstate, "23514") == 0 ||
        strncmp(e->sqlstate, "22", 2) == 0)
        return true;
    return d && d->row_rejected && d->row_rejected(e);
}

sqlq_handler sqlq_sql_sink_bind(sqlq_sql_sink *s)
{
    sqlq_handler h = {.handle = sink_handle, .ctx = s};
    return h;
}

sqlq_result sqlq_sql_sink_apply_once(sqlq_sql_sink *s, const char *body, size_t len,
                                     sqlq_error *err)
{
    sqlq_db *db = NULL;
    sqlq_result r = sqlq_db_connect(s->conn, &db, err);
    if (r == SQLQ_OK)
        r = apply(s, db, body, len, err);
    sqlq_db_close(db);
    return r;
}

void sqlq_sql_sink_use_metrics(sqlq_sql_sink *s, sqlq_metrics *m)
{
    sqlq_label label = {"table", s->shown};
    s->m_skipped = sqlq_metrics_counter(m, SQLQ_METRIC_SINK_SKIPPED,
                                        "changes the --sql sink skipped as not newer than the "
                                        "version last applied for their key",
                                        &label, 1);
    s->m_read_older = sqlq_metrics_counter(m, "sqlq_sink_backfill_rows_older_total",
                                           "backfill rows the --sql sink skipped as older than "
                                           "the version it holds for their key (the row stays "
                                           "stale: see the log)",
                                           &label, 1);
}

unsigned long long sqlq_sql_sink_skipped(const sqlq_sql_sink *s)
{
    return atomic_load(&s->skipped);
}

sqlq_result sqlq_sql_sink_reset_versions(sqlq_sql_sink *s, const char *key_json, long long *out_n,
                                         sqlq_error *err)
{
    *out_n = 0;
    if (!s->guard)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "--reset-version needs the version check (it is off)");
    char hash[65];
    char *canon = NULL;
    sqlq_result r = SQLQ_OK;
    if (key_json && strcmp(key_json, "all") != 0) {
        json_error_t je;
        json_t *key = json_loads(key_json, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(key)) {
            json_decref(key);
            return sqlq_error_set(err, SQLQ_E_INVALID, false,
                                  "--reset-version: expected all or a key object as the "
                                  "messages carry it, e.g. {\"id\":1}; got %.200s",
                                  key_json);
        }
        r = guard_key(key, &canon, hash, err);
        json_decref(key);
    }
    sqlq_db *db = NULL;
    if (r == SQLQ_OK)
        r = sqlq_db_connect(s->conn, &db, err);
    if (r == SQLQ_OK)
        r = sqlq_version_guard_reset(db, &s->versions, s->target, canon ? hash : NULL, out_n,
                                     err);
    sqlq_db_close(db);
    free(canon);
    return r;
}
