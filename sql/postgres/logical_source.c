/* logical_source: a PostgreSQL table's changes read from a logical replication slot (pgoutput)
 * and handed to the route as the capture API hands them (the capture side; the stream is read
 * by logical_reader.c). */
#include "logical_source_internal.h"

#include "clock.h"
#include "log.h"
#include "table_key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sqlq_result refuse_options(sqlq_db *db, const sqlq_capture_config *cfg, sqlq_error *err)
{
    if (strcmp(sqlq_db_dialect(db)->name, "postgres") != 0)
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "source logical: PostgreSQL's logical decoding; this database is "
                              "%s (use source change_log)",
                              sqlq_db_dbms_name(db));
    if (cfg->where && cfg->where[0])
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "key where: not supported with source logical (the stream carries "
                              "no predicate); filter in the consumer, or use source change_log");
    return SQLQ_OK;
}

/* Setup keeps the key columns it was given when they are not the primary key's (catalog.h:
 * a bridge started without them keeps them). */
static sqlq_result record_key(sqlq_db *db, const sqlq_capture_config *cfg, const sqlq_table *t,
                              const char *table_key, sqlq_error *err)
{
    if (!t->key_index)
        return sqlq_catalog_unregister(db, SQLQ_CATALOG_KEY_KIND, cfg->bridge_name, table_key,
                                       err);
    char cols[512];
    sqlq_table_key_names(t, cols, sizeof cols);
    return sqlq_catalog_register(db, SQLQ_CATALOG_KEY_KIND, cfg->bridge_name, table_key, cols,
                                 err);
}

static sqlq_pg_slot_need need_of(const sqlq_capture_config *cfg)
{
    return (sqlq_pg_slot_need){.slot = true, .publication = true,
                               .full_identity = cfg->before_image || cfg->changed};
}

sqlq_result sqlq_logical_source_check(sqlq_db *db, const sqlq_capture_config *cfg,
                                      json_t *warnings, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names names;
    sqlq_result rc = refuse_options(db, cfg, err);
    if (rc == SQLQ_OK)
        rc = sqlq_catalog_lookup_keyed(db, cfg->table, cfg->bridge_name, cfg->key_columns, &t,
                                       &names, err);
    sqlq_pg_slot_names sn;
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_names_find(db, &names, &sn, err);
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_check(db, t, &sn, need_of(cfg), warnings, err);
    sqlq_table_free(t);
    return rc;
}

/* Whether the registry lists bridge's slot for table_key. */
static sqlq_result slot_registered(sqlq_db *db, const char *table_key, const char *bridge,
                                   bool *out, sqlq_error *err)
{
    json_t *rows = NULL;
    sqlq_result rc = sqlq_catalog_find(db, table_key, "slot", bridge, &rows, err);
    *out = json_array_size(rows) > 0;
    json_decref(rows);
    return rc;
}

static void ascii_lower(char *s)
{
    for (; *s; s++)
        *s = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
}

/* The names of t (in schema, as written, then folded to lowercase as an unquoted name is)
 * when the registry lists bridge's slot of that table; SQLQ_E_NOT_FOUND when it does not. */
static sqlq_result listed_names(sqlq_db *db, sqlq_table_name t, const char *schema,
                                const char *bridge, sqlq_catalog_names *out, sqlq_error *err)
{
    snprintf(t.schema, sizeof t.schema, "%s", schema);
    for (int folded = 0; folded < 2; folded++) {
        if (folded) {
            ascii_lower(t.schema);
            ascii_lower(t.name);
        }
        bool listed = false;
        sqlq_result rc = sqlq_catalog_names_find(db, &t, bridge, out, err);
        if (rc == SQLQ_OK)
            rc = slot_registered(db, out->table_key, bridge, &listed, err);
        if (rc != SQLQ_OK || listed)
            return rc;
    }
    return SQLQ_E_NOT_FOUND;
}

/* --drop of a table that no longer exists (dropped for good, or renamed): its slot would keep
 * the server's WAL for ever. Its names are those of the text as the server resolved it when
 * it existed (an unqualified name: the first schema of the search path whose table of that
 * name the registry lists), taken only when the registry lists this bridge's slot of it.
 * SQLQ_E_NOT_FOUND (err untouched) when it lists none. */
static sqlq_result gone_table_names(sqlq_db *db, const char *text, const char *bridge,
                                    sqlq_catalog_names *out, sqlq_error *err)
{
    sqlq_table_name t;
    sqlq_error e;
    sqlq_error_clear(&e);
    bool catalog = false;
    json_t *schemas = NULL;
    if (sqlq_table_name_parse(text, &t, &e) != SQLQ_OK ||
        sqlq_catalog_exists(db, &catalog, &e) != SQLQ_OK || !catalog ||
        (!t.schema[0] && sqlq_db_query(db, "SELECT unnest(current_schemas(false)) AS s", NULL, 0,
                                       &schemas, &e) != SQLQ_OK))
        return SQLQ_E_NOT_FOUND;
    sqlq_result rc = SQLQ_E_NOT_FOUND;
    if (t.schema[0])
        rc = listed_names(db, t, t.schema, bridge, out, &e);
    for (size_t i = 0; rc == SQLQ_E_NOT_FOUND && i < json_array_size(schemas); i++) {
        const char *s = json_string_value(json_object_get(json_array_get(schemas, i), "s"));
        if (s)
            rc = listed_names(db, t, s, bridge, out, &e);
    }
    json_decref(schemas);
    if (rc != SQLQ_OK && rc != SQLQ_E_NOT_FOUND)
        *err = e;
    return rc;
}

/* A route whose table is gone while the registry still lists its slot: err (the table does not
 * exist) goes on to name the slot, the WAL it keeps the server from removing, and the command
 * that drops it. Nothing changes when the slot is not found. */
static void gone_slot_note(sqlq_db *db, const sqlq_capture_config *cfg, sqlq_error *err)
{
    sqlq_catalog_names names;
    sqlq_pg_slot_names sn;
    sqlq_pg_slot_state st;
    sqlq_error e;
    sqlq_error_clear(&e);
    if (gone_table_names(db, cfg->table, cfg->bridge_name, &names, &e) != SQLQ_OK ||
        sqlq_pg_slot_names_find(db, &names, &sn, &e) != SQLQ_OK ||
        sqlq_pg_slot_state_get(db, &sn, &st, &e) != SQLQ_OK || !st.exists || st.elsewhere)
        return;
    sqlq_error was = *err;
    sqlq_error_clear(err);
    sqlq_error_set(err, was.code, was.transient,
                   "%s; its replication slot %s still exists and retains %lld bytes of WAL, which "
                   "the server keeps until the slot is dropped: `sqlq setup %s --source logical "
                   "--drop --force` drops it and the publication",
                   was.message, sn.slot, (long long)st.retained_bytes, sn.setup_args);
    sqlq_error_reason(err, was.reason);
}

sqlq_result sqlq_logical_source_setup(sqlq_db *db, const sqlq_capture_config *cfg, bool drop,
                                      json_t *lines, json_t *warnings, sqlq_error *err)
{
    sqlq_table *t = NULL;
    sqlq_catalog_names names;
    sqlq_pg_slot_names sn;
    sqlq_result rc = refuse_options(db, cfg, err);
    sqlq_error missing;
    sqlq_error_clear(&missing);
    if (rc == SQLQ_OK)
        rc = sqlq_catalog_lookup_keyed(db, cfg->table, cfg->bridge_name,
                                       drop ? SQLQ_CATALOG_ANY_KEY : cfg->key_columns, &t, &names,
                                       &missing);
    if (rc == SQLQ_E_NOT_FOUND && drop &&
        (rc = gone_table_names(db, cfg->table, cfg->bridge_name, &names, err)) == SQLQ_OK)
        json_array_append_new(lines, json_sprintf("table %s no longer exists: removing what sqlq "
                                                  "made for it", names.table_key));
    else if (rc != SQLQ_OK && err->code == SQLQ_OK)
        *err = missing;
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_names_find(db, &names, &sn, err);
    sqlq_pg_slot_need need = {.full_identity = cfg->before_image || cfg->changed};
    if (rc == SQLQ_OK && !drop)
        rc = sqlq_pg_slot_check(db, t, &sn, need, warnings, err);
    if (rc == SQLQ_OK && !drop)
        rc = sqlq_pg_slot_setup(db, t, &sn, lines, err);
    if (rc == SQLQ_OK && !drop)
        rc = sqlq_catalog_ensure(db, err);
    if (rc == SQLQ_OK && !drop)
        rc = sqlq_catalog_register(db, "slot", cfg->bridge_name, names.table_key, sn.slot, err);
    if (rc == SQLQ_OK && !drop)
        rc = record_key(db, cfg, t, names.table_key, err);
    if (rc == SQLQ_OK && drop)
        rc = sqlq_pg_slot_drop(db, &sn, lines, err);
    bool exists = false;
    if (rc == SQLQ_OK && drop && sqlq_catalog_exists(db, &exists, err) == SQLQ_OK && exists)
        rc = sqlq_catalog_unregister(db, "slot", cfg->bridge_name, names.table_key, err);
    if (rc == SQLQ_OK && drop && exists)
        rc = sqlq_catalog_unregister(db, SQLQ_CATALOG_KEY_KIND, cfg->bridge_name, names.table_key,
                                     err);
    sqlq_table_free(t);
    return rc;
}

sqlq_result sqlq_logical_source_open(sqlq_db *db, const sqlq_capture_config *cfg,
                                     sqlq_logical_source **out, sqlq_error *err)
{
    *out = NULL;
    sqlq_logical_source *ls = calloc(1, sizeof *ls);
    if (!ls)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    ls->db = db;
    ls->max_batch = cfg->max_batch_size > 0 ? cfg->max_batch_size : 100;
    ls->max_attempts = cfg->max_attempts;
    ls->ready_max = SQLQ_LOGICAL_READY_BATCHES * (size_t)ls->max_batch;
    ls->before_image = cfg->before_image;
    ls->changed = cfg->changed;
    ls->skip_truncate = cfg->skip_truncate;
    pthread_mutex_init(&ls->mu, NULL);
    pthread_cond_init(&ls->cv, NULL);
    json_t *warnings = json_array();
    sqlq_result rc = refuse_options(db, cfg, err);
    if (rc == SQLQ_OK)
        rc = sqlq_catalog_lookup_keyed(db, cfg->table, cfg->bridge_name, cfg->key_columns,
                                       &ls->table, &ls->names, err);
    if (rc == SQLQ_E_NOT_FOUND)
        gone_slot_note(db, cfg, err);
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_names_find(db, &ls->names, &ls->slot, err);
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_check(db, ls->table, &ls->slot, need_of(cfg), warnings, err);
    sqlq_pg_slot_table now; /* the table a rebuild would replace (logical_reader.c) */
    if (rc == SQLQ_OK && (rc = sqlq_pg_slot_table_now(db, ls->table, &ls->slot, &now, err)) ==
                             SQLQ_OK)
        ls->table_oid = now.oid;
    size_t i;
    json_t *w;
    json_array_foreach(warnings, i, w) {
        if (!cfg->quiet && sqlq_log_once_first(cfg->warned, json_string_value(w)))
            SQLQ_WARN("logical_warning", "table=%s slot=%s warning=\"%s\"", cfg->table,
                      ls->slot.slot, json_string_value(w));
    }
    ls->warnings = warnings; /* for status */
    if (rc == SQLQ_OK && (!(ls->conn = strdup(sqlq_db_conn_string(db))) ||
                          sqlq_pg_conninfo_create(ls->conn, &ls->ci, err) != SQLQ_OK))
        rc = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (rc == SQLQ_OK && !(ls->ack = sqlq_pg_ack_create(0)))
        rc = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (rc != SQLQ_OK) {
        sqlq_logical_source_close(ls);
        return rc;
    }
    if (!cfg->quiet)
        SQLQ_INFO("capture_opened", "table=%s source=logical slot=%s publication=%s",
                  cfg->table, ls->slot.slot, ls->slot.publication);
    *out = ls;
    return SQLQ_OK;
}

void sqlq_logical_source_close(sqlq_logical_source *ls)
{
    if (!ls)
        return;
    if (ls->started) {
        pthread_mutex_lock(&ls->mu);
        ls->stop = true;
        pthread_cond_broadcast(&ls->cv);
        pthread_mutex_unlock(&ls->mu);
        pthread_join(ls->thread, NULL);
    }
    for (size_t i = 0; i < ls->qcount; i++)
        sqlq_logical_change_free(&ls->q[(ls->qhead + i) % ls->qcap].c);
    free(ls->q);
    sqlq_pg_ack_destroy(ls->ack);
    sqlq_pg_conninfo_destroy(ls->ci);
    if (ls->conn)
        memset(ls->conn, 0, strlen(ls->conn)); /* a secret */
    free(ls->conn);
    sqlq_table_free(ls->table);
    json_decref(ls->warnings);
    pthread_cond_destroy(&ls->cv);
    pthread_mutex_destroy(&ls->mu);
    free(ls);
}

const sqlq_table *sqlq_logical_source_table(const sqlq_logical_source *ls) { return ls->table; }

static sqlq_result ring_room(sqlq_logical_source *ls, size_t more)
{
    if (ls->qcount + more <= ls->qcap)
        return SQLQ_OK;
    size_t cap = ls->qcap ? ls->qcap : 256;
    while (cap < ls->qcount + more)
        cap *= 2;
    sqlq_logical_ready *q = malloc(cap * sizeof *q);
    if (!q)
        return SQLQ_E_NOMEM;
    for (size_t i = 0; i < ls->qcount; i++)
        q[i] = ls->q[(ls->qhead + i) % ls->qcap];
    free(ls->q);
    ls->q = q;
    ls->qcap = cap;
    ls->qhead = 0;
    return SQLQ_OK;
}

sqlq_result sqlq_logical_ready_txn(sqlq_logical_source *ls, uint64_t end_lsn, size_t n,
                                   uint64_t *out_seq)
{
    if (sqlq_pg_ack_txn(ls->ack, end_lsn, n, out_seq) != SQLQ_OK)
        return SQLQ_E_NOMEM;
    if (n && !ls->pending_since_ms)
        ls->pending_since_ms = sqlq_clock_mono_ms();
    return SQLQ_OK;
}

sqlq_result sqlq_logical_ready_add(sqlq_logical_source *ls, sqlq_logical_change c,
                                   uint64_t version, uint64_t seq)
{
    if (ring_room(ls, 1) != SQLQ_OK) {
        sqlq_logical_change_free(&c);
        return SQLQ_E_NOMEM;
    }
    ls->q[(ls->qhead + ls->qcount++) % ls->qcap] =
        (sqlq_logical_ready){.c = c, .version = version, .seq = seq, .attempts = 1};
    pthread_cond_broadcast(&ls->cv);
    return SQLQ_OK;
}

static void take(sqlq_logical_source *ls, sqlq_change_batch *out)
{
    size_t n = ls->qcount < (size_t)ls->max_batch ? ls->qcount : (size_t)ls->max_batch;
    out->items = n ? calloc(n, sizeof *out->items) : NULL;
    if (n && !out->items)
        return;
    for (size_t i = 0; i < n; i++) {
        sqlq_logical_ready *r = &ls->q[ls->qhead];
        out->items[i] = (sqlq_change){.op = r->c.op, .version = (int64_t)r->version,
                                      .attempts = r->attempts, .key = r->c.key, .row = r->c.row,
                                      .changed = r->c.changed, .before = r->c.before,
                                      .lease_token = (int64_t)r->seq};
        ls->qhead = (ls->qhead + 1) % ls->qcap;
        ls->qcount--;
    }
    out->count = n;
    out->full = n == (size_t)ls->max_batch;
    ls->in_flight += n;
    pthread_cond_broadcast(&ls->cv); /* room for the reader */
}

/* mu held: wait for ready changes or a fatal failure (catch_up: or the end of the catch-up),
 * up to wait_ms. */
static bool waiting(const sqlq_logical_source *ls, bool catch_up)
{
    return ls->qcount == 0 && !ls->has_fatal && (!catch_up || (!ls->caught_up && !ls->standby));
}

static void wait_locked(sqlq_logical_source *ls, uint64_t wait_ms, bool catch_up)
{
    if (!waiting(ls, catch_up) || wait_ms == 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(wait_ms / 1000u);
    until.tv_nsec += (long)(wait_ms % 1000u) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (waiting(ls, catch_up) &&
           pthread_cond_timedwait(&ls->cv, &ls->mu, &until) != ETIMEDOUT) {
    }
}

/* mu held: the reader starts with the first poll (a handle that never polls starts none). */
static sqlq_result start_locked(sqlq_logical_source *ls, sqlq_error *err)
{
    if (ls->started)
        return SQLQ_OK;
    if (pthread_create(&ls->thread, NULL, sqlq_logical_reader_main, ls) != 0)
        return sqlq_error_set(err, SQLQ_E_NOMEM, true, "cannot start the stream's thread");
    ls->started = true;
    return SQLQ_OK;
}

bool sqlq_logical_source_wait(sqlq_logical_source *ls, uint64_t timeout_ms)
{
    pthread_mutex_lock(&ls->mu);
    if (ls->started)
        wait_locked(ls, timeout_ms, false);
    bool ready = ls->qcount > 0 || ls->has_fatal;
    pthread_mutex_unlock(&ls->mu);
    return ready;
}

sqlq_result sqlq_logical_source_poll(sqlq_logical_source *ls, uint64_t wait_ms,
                                     sqlq_change_batch *out, sqlq_error *err)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ls->mu);
    sqlq_result rc = start_locked(ls, err);
    if (rc != SQLQ_OK) {
        pthread_mutex_unlock(&ls->mu);
        return rc;
    }
    /* The first polls wait (30 s at most) until the stream has read what the slot held when
     * it started, so that --once publishes it; not while another instance holds the slot. */
    if (ls->qcount == 0 && !ls->caught_up && !ls->standby)
        wait_locked(ls, 30000, true);
    wait_locked(ls, wait_ms, false);
    if (ls->qcount == 0 && ls->has_fatal) {
        if (err && !err->code)
            *err = ls->fatal;
        rc = ls->fatal.code;
    } else {
        take(ls, out);
        if (ls->qcount && !out->items)
            rc = sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
    }
    pthread_mutex_unlock(&ls->mu);
    return rc;
}

sqlq_result sqlq_logical_source_release(sqlq_logical_source *ls, const sqlq_change *changes,
                                        size_t n, sqlq_error *err)
{
    sqlq_result rc = SQLQ_OK;
    pthread_mutex_lock(&ls->mu);
    for (size_t i = 0; i < n; i++) {
        if (sqlq_pg_ack_done(ls->ack, (uint64_t)changes[i].lease_token, 1) != SQLQ_OK)
            rc = sqlq_error_set(err, SQLQ_E_INVALID, false,
                                "release of a change this source did not hand out (token %lld)",
                                (long long)changes[i].lease_token);
        else if (ls->in_flight > 0)
            ls->in_flight--;
    }
    if (sqlq_pg_ack_outstanding(ls->ack) == 0 && ls->qcount == 0)
        ls->pending_since_ms = 0;
    pthread_mutex_unlock(&ls->mu);
    return rc;
}

sqlq_result sqlq_logical_source_abandon(sqlq_logical_source *ls, const sqlq_change *changes,
                                        size_t n, bool count_attempt, sqlq_error *err)
{
    pthread_mutex_lock(&ls->mu);
    if (ring_room(ls, n) != SQLQ_OK) {
        pthread_mutex_unlock(&ls->mu);
        return sqlq_error_set(err, SQLQ_E_NOMEM, true, "out of memory");
    }
    for (size_t i = n; i-- > 0;) { /* to the front, in their order */
        const sqlq_change *c = &changes[i];
        ls->qhead = (ls->qhead + ls->qcap - 1) % ls->qcap;
        ls->qcount++;
        sqlq_logical_ready *r = &ls->q[ls->qhead];
        int attempts = c->attempts + (count_attempt ? 1 : 0);
        *r = (sqlq_logical_ready){
            .c = {.op = c->op, .key = json_incref(c->key), .row = json_incref(c->row),
                  .changed = json_incref(c->changed), .before = json_incref(c->before)},
            .version = (uint64_t)c->version, .seq = (uint64_t)c->lease_token,
            .attempts = attempts > ls->max_attempts + 1 ? ls->max_attempts + 1 : attempts};
        if (ls->in_flight > 0)
            ls->in_flight--;
    }
    pthread_cond_broadcast(&ls->cv);
    pthread_mutex_unlock(&ls->mu);
    return SQLQ_OK;
}

int64_t sqlq_logical_source_confirmable(sqlq_logical_source *ls)
{
    pthread_mutex_lock(&ls->mu);
    uint64_t c = sqlq_pg_ack_confirmable(ls->ack);
    pthread_mutex_unlock(&ls->mu);
    return (int64_t)c;
}

sqlq_result sqlq_logical_source_status(sqlq_logical_source *ls, sqlq_logical_status *out,
                                       sqlq_error *err)
{
    memset(out, 0, sizeof *out);
    out->names = ls->slot;
    out->warnings = ls->warnings;
    pthread_mutex_lock(&ls->mu);
    out->holder = ls->holder;
    out->ready = (long long)ls->qcount;
    out->in_flight = (long long)ls->in_flight;
    out->confirmed = sqlq_pg_ack_confirmable(ls->ack);
    out->lag_s = ls->pending_since_ms
                     ? (double)(sqlq_clock_mono_ms() - ls->pending_since_ms) / 1000.0
                     : 0.0;
    out->skipped = ls->skipped;
    out->truncates = ls->truncates;
    pthread_mutex_unlock(&ls->mu);
    return sqlq_pg_slot_state_get(ls->db, &ls->slot, &out->slot, err);
}
