/* capture: the CHANGETABLE algorithm over a change source (change_source.h). A leased source
 * (a change log, or the database's own change tracking) is read by the shared lease machinery
 * below; a source with its own leases (the cursor, a stream) gets every call passed on.
 *
 * Semantics of the shared machinery (statements in capture_sql*.c and the source's SQL):
 *  poll     one transaction under the lock of this (bridge, table) only. Changes with version
 *           > sync version (and <= the read horizon where the source has one,
 *           pg_horizon.h) whose lease is free: never leased, released at an older
 *           version, or expired. Ordered by (version, key), at most max_batch_size. Each is
 *           leased in the same transaction (one statement, or two under a serial writer's
 *           lock): version, attempts (+1 for the
 *           same version, 1 for a newer one, capped at max_attempts + 1), expiry now +
 *           lease_s, owner instance_id and a fresh lease token. attempts > max_attempts means
 *           "route to poison": nothing is ever dropped silently. row is NULL for a delete and
 *           when the row is gone since the change was logged.
 *  release  one statement: attempts 0, expiry NULL, owner NULL where owner = instance_id and
 *           token = the change's token. A lease re-taken by another instance after ours
 *           expired has a new token: untouched, counted in out_lost.
 *  renew    extends the expiry of leases this instance still holds (owner and token match).
 *  abandon  expiry 0 (free at once), owner NULL; without count_attempt, attempts - 1 so the
 *           next delivery carries the same count.
 *  advance  one transaction under the same lock: V = (smallest unprocessed version after the
 *           sync version) - 1, or the largest version when all are processed (unprocessed =
 *           no lease, a lease not released, or released at an older version). Moves the sync
 *           version only forward. When caught up, and every 4th move, it deletes released
 *           lease rows <= V and trims log rows every bridge of the table has passed. */
#include "capture.h"

#include "capture_internal.h"
#include "clock.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIM_LOG_EVERY 4
#define KEY_CHECK_MS 1000u /* after empty polls, the key and triggers at most this often */

void sqlq_capture_config_default(sqlq_capture_config *c)
{
    memset(c, 0, sizeof(*c));
    c->bridge_name = "default";
    c->source = SQLQ_SOURCE_AUTO;
    c->max_batch_size = 100;
    c->lease_s = 60;
    c->max_attempts = 5;
    c->start_from = SQLQ_START_BEGINNING;
    c->safety_lag_ms = -1; /* cursor source: the database's default (cursor_source.h) */
}

void sqlq_change_batch_free(sqlq_change_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->count; i++) {
        json_decref(b->items[i].key);
        json_decref(b->items[i].row);
        json_decref(b->items[i].changed);
        json_decref(b->items[i].before);
    }
    free(b->items);
    memset(b, 0, sizeof(*b));
}

const sqlq_table *sqlq_capture_table(const sqlq_capture *cap)
{
    return cap->ops->table ? cap->ops->table(cap->src) : cap->table;
}

/* ---- running statements ------------------------------------------------------------------ */

static void bind(const sqlq_capture *cap, const sqlq_capture_stmt *st, const sqlq_capture_values *v,
                 sqlq_param *out)
{
    for (size_t i = 0; i < st->nparams; i++) {
        switch (st->params[i]) {
        case SQLQ_P_BRIDGE: out[i] = sqlq_param_text(cap->bridge); break;
        case SQLQ_P_TABLE: out[i] = sqlq_param_text(cap->names.table_key); break;
        case SQLQ_P_OWNER: out[i] = sqlq_param_text(cap->instance); break;
        case SQLQ_P_VERSION: out[i] = sqlq_param_int(v ? v->version : 0); break;
        case SQLQ_P_TOKEN_BASE: out[i] = sqlq_param_int(v ? v->token_base : 0); break;
        case SQLQ_P_TOKENS: out[i] = sqlq_param_text(v ? v->tokens : "[]"); break;
        case SQLQ_P_NOW: out[i] = sqlq_param_int(v ? v->now : 0); break;
        case SQLQ_P_SYNC: out[i] = sqlq_param_int(v ? v->sync : 0); break;
        case SQLQ_P_HORIZON: out[i] = sqlq_param_int(v ? v->horizon : 0); break;
        case SQLQ_P_RESUME_VERSION: out[i] = sqlq_param_int(v ? v->resume_version : 0); break;
        case SQLQ_P_RESUME_KEY:
        default: {
            const json_t *k = v ? json_array_get(v->resume_key, st->params[i] - SQLQ_P_RESUME_KEY) : NULL;
            out[i] = json_is_integer(k) ? sqlq_param_int((int64_t)json_integer_value(k))
                     : json_is_real(k)  ? sqlq_param_double(json_real_value(k))
                     : json_is_boolean(k) ? sqlq_param_int(json_is_true(k) ? 1 : 0)
                                          : sqlq_param_text(json_string_value(k));
            break;
        }
        case SQLQ_P_LOCK:
            out[i] = sqlq_param_text(cap->leased->lock_by_hash ? cap->names.lock_hash
                                                               : cap->names.lock_key);
            break;
        }
    }
}

/* The capture loop's statements are a fixed set run on every poll: where the dialect keeps
 * plans (PostgreSQL) they are prepared once per connection instead of planned every time. */
static bool keep_begin(const sqlq_capture *cap)
{
    return sqlq_db_keep_prepared(cap->db, sqlq_db_dialect(cap->db)->keeps_plans);
}

sqlq_result sqlq_capture_run(sqlq_capture *cap, const sqlq_capture_stmt *st, const sqlq_capture_values *v,
                       long long *out_rows, sqlq_error *err)
{
    if (out_rows)
        *out_rows = 0;
    if (!st->sql)
        return SQLQ_OK;
    sqlq_param p[SQLQ_CAPTURE_MAX_PARAMS];
    bind(cap, st, v, p);
    bool was = keep_begin(cap);
    sqlq_result r = sqlq_db_exec(cap->db, st->sql, p, st->nparams, out_rows, err);
    sqlq_db_keep_prepared(cap->db, was);
    return r;
}

sqlq_result sqlq_capture_query(sqlq_capture *cap, const sqlq_capture_stmt *st, const sqlq_capture_values *v,
                         json_t **out, sqlq_error *err)
{
    sqlq_param p[SQLQ_CAPTURE_MAX_PARAMS];
    bind(cap, st, v, p);
    bool was = keep_begin(cap);
    sqlq_result r = sqlq_db_query(cap->db, st->sql, p, st->nparams, out, err);
    sqlq_db_keep_prepared(cap->db, was);
    return r;
}

sqlq_result sqlq_capture_query_values(sqlq_capture *cap, const sqlq_capture_stmt *st,
                                      const sqlq_capture_values *v, json_t **out_columns,
                                      json_t **out_rows, sqlq_error *err)
{
    sqlq_param p[SQLQ_CAPTURE_MAX_PARAMS];
    bind(cap, st, v, p);
    bool was = keep_begin(cap);
    sqlq_result r =
        sqlq_db_query_values(cap->db, st->sql, p, st->nparams, out_columns, out_rows, err);
    sqlq_db_keep_prepared(cap->db, was);
    return r;
}

sqlq_result sqlq_capture_query_int(sqlq_capture *cap, const sqlq_capture_stmt *st,
                             const sqlq_capture_values *v, int64_t *out, sqlq_error *err)
{
    sqlq_param p[SQLQ_CAPTURE_MAX_PARAMS];
    bind(cap, st, v, p);
    bool was = keep_begin(cap);
    sqlq_result r = sqlq_db_query_int(cap->db, st->sql, p, st->nparams, out, err);
    sqlq_db_keep_prepared(cap->db, was);
    return r;
}

/* ---- poll ------------------------------------------------------------------------------- */

static sqlq_result change_from_row(const sqlq_capture *cap, json_t *row, sqlq_change *c,
                                   sqlq_error *err)
{
    const sqlq_table *t = cap->table;
    int64_t v = 0, att = 0, tok = 0, present = 0;
    const char *op = json_string_value(json_object_get(row, "m_op"));
    if (!sqlq_json_int64(json_object_get(row, "m_v"), &v) ||
        !sqlq_json_int64(json_object_get(row, "m_att"), &att) ||
        !sqlq_json_int64(json_object_get(row, "m_tok"), &tok) || !op)
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unexpected change row from %s",
                              cap->names.table_key);
    json_t *m_row = json_object_get(row, "m_row");
    present = json_is_true(m_row) ? 1 : 0;
    if (!json_is_boolean(m_row) && !sqlq_json_int64(m_row, &present))
        present = 0;
    c->version = v;
    c->attempts = (int)att;
    c->lease_token = tok;
    c->op = op[0] == 'I' ? SQLQ_OP_INSERT : op[0] == 'U' ? SQLQ_OP_UPDATE : SQLQ_OP_DELETE;
    c->unmatched = present == 2;
    c->key = json_object();
    if (!c->key)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    char alias[32];
    for (size_t i = 0; i < t->nkey; i++) {
        snprintf(alias, sizeof(alias), "k%zu", i);
        json_t *val = json_object_get(row, alias);
        if (json_object_set(c->key, t->columns[t->key[i]].name, val ? val : json_null()) != 0)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    sqlq_result r = sqlq_capture_image_read(cap, row, c, err);
    if (r != SQLQ_OK || c->op == SQLQ_OP_DELETE || !present)
        return r;
    /* The row's columns as the table has them now (capture_table_shape.c). */
    c->row = json_incref(json_object_get(row, SQLQ_CAPTURE_ROW));
    if (!json_is_object(c->row))
        return sqlq_error_set(err, SQLQ_E_PARSE, false, "unexpected change row from %s",
                              cap->names.table_key);
    /* The key as the row has it: the log's key matched the row under the key column's own
     * collation (SQLite NOCASE, a case-insensitive MariaDB collation), so it may differ in
     * case or trailing spaces, and a message whose key disagrees with its row is refused by
     * consumers (docs/capture.md, "Key columns and collations"). */
    for (size_t i = 0; i < t->nkey; i++) {
        const char *name = t->columns[t->key[i]].name;
        json_t *val = json_object_get(c->row, name);
        if (val && json_object_set(c->key, name, val) != 0)
            return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    return SQLQ_OK;
}

static sqlq_result rows_to_batch(const sqlq_capture *cap, json_t *rows, sqlq_change_batch *out,
                                 sqlq_error *err)
{
    size_t n = json_array_size(rows);
    out->items = calloc(n ? n : 1, sizeof(sqlq_change));
    if (!out->items)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_result r = SQLQ_OK;
    for (size_t i = 0; r == SQLQ_OK && i < n; i++) {
        r = change_from_row(cap, json_array_get(rows, i), &out->items[i], err);
        out->count = i + 1;
    }
    out->full = n >= (size_t)cap->spec.max_batch_size;
    if (r != SQLQ_OK)
        sqlq_change_batch_free(out);
    return r;
}

static void position_clear(sqlq_capture_position *p)
{
    json_decref(p->key);
    memset(p, 0, sizeof(*p));
}

/* The key parts <prefix>0... of a result row, as an array; NULL when one is missing. */
static json_t *key_of_row(const sqlq_capture *cap, const json_t *row, const char *prefix)
{
    json_t *key = json_array();
    char alias[32];
    for (size_t i = 0; key && i < cap->table->nkey; i++) {
        snprintf(alias, sizeof(alias), "%s%zu", prefix, i);
        json_t *k = json_object_get(row, alias);
        if (!k || json_is_null(k) || json_array_append(key, k) != 0) {
            json_decref(key);
            key = NULL;
        }
    }
    return key;
}

/* Remember (version, key) of `row` in *p, or forget *p: no row, no statement to use it, or
 * first set a quarter of the lease ago or more (what lies behind a position, such as a lease
 * another instance let expire, waits no longer than that). */
static void position_set(const sqlq_capture *cap, sqlq_capture_position *p, bool usable,
                         const json_t *row, const char *version_col, const char *key_prefix,
                         uint64_t now)
{
    uint64_t since = p->active ? p->since_ms : now;
    position_clear(p);
    int64_t v = 0;
    if (!usable || !row || !sqlq_json_int64(json_object_get(row, version_col), &v) ||
        now - since >= (uint64_t)cap->spec.lease_s * 250)
        return;
    p->key = key_of_row(cap, row, key_prefix);
    p->active = p->key != NULL;
    p->version = v;
    p->since_ms = since;
}

/* After a poll: a full one is resumed after its last change (the sweep goes on), a short one
 * ends the sweep. */
static void resume_after(sqlq_capture *cap, json_t *rows, uint64_t now)
{
    size_t n = json_array_size(rows);
    bool full = n > 0 && n >= (size_t)cap->spec.max_batch_size;
    position_set(cap, &cap->resume, full && cap->poll_resume.sql, json_array_get(rows, n - 1),
                 "m_v", "k", now);
}

static sqlq_result settle(sqlq_capture *cap, const sqlq_capture_stmt *st,
                          const sqlq_change *changes, size_t n, size_t *out_lost,
                          sqlq_error *err);

static sqlq_result poll_once(sqlq_capture *cap, sqlq_change_batch *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    cap->covered = INT64_MIN;
    const sqlq_capture_leased *src = cap->leased;
    sqlq_capture_values v = {.now = sqlq_clock_wall_ms()};
    bool resume = cap->resume.active;
    const sqlq_capture_stmt *poll = resume ? &cap->poll_resume : &cap->poll;
    const sqlq_capture_stmt *lease = resume ? &cap->lease_resume : &cap->lease;
    v.resume_version = cap->resume.version;
    v.resume_key = cap->resume.key;
    json_t *rows = NULL;
    sqlq_result r = src->before_poll ? src->before_poll(cap, err) : SQLQ_OK;
    if (r == SQLQ_OK)
        r = sqlq_db_begin(cap->db, err);
    if (r != SQLQ_OK) {
        position_clear(&cap->resume);
        return r;
    }
    /* The lock, and what the source reads under it (a horizon observation: the poll
     * statement's snapshot comes after it, pg_horizon.h). */
    if (src->poll_lock)
        r = src->poll_lock(cap, &v, err);
    else
        r = sqlq_capture_run(cap, &cap->lock, &v, NULL, err);
    if (r == SQLQ_OK && cap->bump.sql) {
        r = sqlq_capture_run(cap, &cap->bump, &v, NULL, err);
        if (r == SQLQ_OK)
            r = sqlq_capture_query_int(cap, &cap->base, &v, &v.token_base, err);
    }
    if (r == SQLQ_OK)
        r = sqlq_capture_table_shape_poll(cap, poll, &v, &rows, err);
    bool leased = r == SQLQ_OK && json_array_size(rows) > 0;
    if (leased)
        r = sqlq_capture_run(cap, lease, &v, NULL, err);
    sqlq_change *stray = NULL;
    size_t nstray = 0;
    if (leased && r == SQLQ_OK && cap->held.sql)
        r = sqlq_capture_confirm_leases(cap, &v, rows, &stray, &nstray, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(cap->db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(cap->db);
        free(stray);
        json_decref(rows);
        position_clear(&cap->resume);
        return sqlq_capture_table_shape_failed(cap, r, err);
    }
    if (nstray > 0) {
        sqlq_error e; /* a failed hand-back only delays them: their leases expire */
        sqlq_error_clear(&e);
        (void)settle(cap, &cap->abandon_free, stray, nstray, NULL, &e);
    }
    free(stray);
    /* Nothing read: the key and the triggers are checked on their own (a poll that reads rows
     * checks the key with them), at most once a second: with wake-ups an idle-then-busy route
     * polls empty many times a second, and each check is a catalog query. */
    if (json_array_size(rows) == 0 && (uint64_t)v.now - cap->key_checked_ms >= KEY_CHECK_MS) {
        r = sqlq_capture_table_shape_check_key(cap, err);
        if (r == SQLQ_OK) /* a failed check is made again by the next poll */
            cap->key_checked_ms = (uint64_t)v.now;
    }
    resume_after(cap, rows, (uint64_t)v.now);
    if (r == SQLQ_OK)
        r = rows_to_batch(cap, rows, out, err);
    /* A short poll that succeeded saw every version that will ever commit up to what it
     * read (a horizon's guarantee) and took every one whose lease was free. */
    if (src->polled)
        src->polled(cap, &v, r == SQLQ_OK && !out->full);
    json_decref(rows);
    if (r == SQLQ_OK && out->count > 0)
        SQLQ_DEBUG("capture_polled", "bridge=%s table=%s n=%zu first_version=%" PRId64,
                   cap->bridge, cap->names.table_key, out->count, out->items[0].version);
    return r;
}

/* A poll that found the table's shape changed (a column added, dropped, renamed or retyped)
 * was rolled back: its statements are rebuilt for the new shape and it runs again, so the
 * change costs no failed poll and no attempt. */
sqlq_result sqlq_capture_poll(sqlq_capture *cap, sqlq_change_batch *out, sqlq_error *err)
{
    if (cap->ops->poll) {
        memset(out, 0, sizeof(*out));
        cap->covered = INT64_MIN;
        return cap->ops->poll(cap->src, out, err);
    }
    sqlq_result r = poll_once(cap, out, err);
    for (int again = 0; r != SQLQ_OK && cap->shape_moved && again < 3; again++) {
        cap->shape_moved = false;
        sqlq_error_clear(err);
        r = sqlq_capture_rebuild_polls(cap, err);
        if (r == SQLQ_OK)
            r = poll_once(cap, out, err);
    }
    return r;
}

int64_t sqlq_capture_covered_version(const sqlq_capture *cap)
{
    return cap ? cap->covered : INT64_MIN;
}

bool sqlq_capture_leases_expire(const sqlq_capture *cap)
{
    return !cap || !cap->ops->leases_never_expire;
}

/* ---- release, renew, abandon ------------------------------------------------------------- */

sqlq_result sqlq_capture_tokens_json(const sqlq_change *changes, size_t n, char **out, sqlq_error *err)
{
    sqlq_buf b;
    sqlq_buf_init(&b, 0);
    sqlq_result r = sqlq_buf_addc(&b, '[');
    for (size_t i = 0; r == SQLQ_OK && i < n; i++)
        r = sqlq_buf_printf(&b, "%s%" PRId64, i ? "," : "", changes[i].lease_token);
    if (r == SQLQ_OK)
        r = sqlq_buf_addc(&b, ']');
    if (r != SQLQ_OK)
        return sqlq_error_set(err, r, false, "out of memory listing lease tokens");
    *out = sqlq_buf_take(&b, NULL);
    return *out ? SQLQ_OK : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
}

static sqlq_result settle(sqlq_capture *cap, const sqlq_capture_stmt *st,
                          const sqlq_change *changes, size_t n, size_t *out_lost,
                          sqlq_error *err)
{
    if (out_lost)
        *out_lost = 0;
    if (n == 0)
        return SQLQ_OK;
    char *tokens = NULL;
    sqlq_result r = sqlq_capture_tokens_json(changes, n, &tokens, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_capture_values v = {.tokens = tokens, .now = sqlq_clock_wall_ms()};
    long long affected = 0;
    r = sqlq_capture_run(cap, st, &v, &affected, err);
    free(tokens);
    if (r == SQLQ_OK && out_lost)
        *out_lost = affected >= 0 && (size_t)affected < n ? n - (size_t)affected : 0;
    return r;
}

sqlq_result sqlq_capture_release(sqlq_capture *cap, const sqlq_change *changes, size_t n,
                                 size_t *out_lost, sqlq_error *err)
{
    if (cap->ops->release)
        return cap->ops->release(cap->src, changes, n, out_lost, err);
    size_t lost = 0;
    sqlq_result r = settle(cap, &cap->release, changes, n, &lost, err);
    if (r == SQLQ_OK && lost > 0)
        SQLQ_WARN("lease_lost", "bridge=%s table=%s lost=%zu of=%zu note=\"another instance "
                  "re-leased them after our lease expired\"",
                  cap->bridge, cap->names.table_key, lost, n);
    if (out_lost)
        *out_lost = lost;
    return r;
}

sqlq_result sqlq_capture_renew_owned(sqlq_capture *cap, const sqlq_change *changes, size_t n,
                                     size_t *out_lost, sqlq_error *err)
{
    if (cap->ops->renew)
        return cap->ops->renew(cap->src, changes, n, out_lost, err);
    return settle(cap, &cap->renew, changes, n, out_lost, err);
}

sqlq_result sqlq_capture_renew(sqlq_capture *cap, const sqlq_change *changes, size_t n,
                               sqlq_error *err)
{
    return sqlq_capture_renew_owned(cap, changes, n, NULL, err);
}

sqlq_result sqlq_capture_abandon(sqlq_capture *cap, const sqlq_change *changes, size_t n,
                                 bool count_attempt, sqlq_error *err)
{
    if (cap->ops->abandon)
        return cap->ops->abandon(cap->src, changes, n, count_attempt, err);
    position_clear(&cap->resume); /* the next poll delivers them again first */
    return settle(cap, count_attempt ? &cap->abandon_count : &cap->abandon_free, changes, n,
                  NULL, err);
}

/* ---- advance ----------------------------------------------------------------------------- */

static sqlq_result trim_log(sqlq_capture *cap)
{
    if (!cap->trim_log.sql)
        return SQLQ_OK;
    sqlq_error err;
    sqlq_error_clear(&err);
    long long n = 0;
    sqlq_result r = sqlq_capture_run(cap, &cap->trim_log, NULL, &n, &err);
    if (r != SQLQ_OK)
        SQLQ_WARN("change_log_trim_failed", "table=%s err=\"%s\"", cap->names.table_key,
                  err.message);
    else if (n > 0)
        SQLQ_DEBUG("change_log_trimmed", "table=%s rows=%lld", cap->names.table_key, n);
    return SQLQ_OK; /* trimming is housekeeping: the next move retries */
}

sqlq_result sqlq_capture_advance(sqlq_capture *cap, int64_t *out_version, sqlq_error *err)
{
    if (cap->ops->advance)
        return cap->ops->advance(cap->src, out_version, err);
    sqlq_capture_values v = {.now = sqlq_clock_wall_ms()};
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_begin(cap->db, err);
    if (r != SQLQ_OK)
        return r;
    bool resume = cap->scan_from.active;
    /* Where the source has a horizon: only versions final at its last observation. */
    v.horizon = cap->leased->horizon ? cap->leased->horizon(cap) : INT64_MIN;
    v.resume_version = cap->scan_from.version;
    v.resume_key = cap->scan_from.key;
    r = sqlq_capture_run(cap, &cap->lock, &v, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_capture_query(cap, resume ? &cap->scan_resume : &cap->scan, &v, &rows, err);
    json_t *row = json_array_get(rows, 0);
    int64_t sync = 0, unproc = 0, max = 0;
    if (r == SQLQ_OK && !sqlq_json_int64(json_object_get(row, "m_sync"), &sync))
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "no state row for bridge %s table %s",
                           cap->bridge, cap->names.table_key);
    int64_t target = sync;
    bool caught_up = false, found = r == SQLQ_OK &&
        sqlq_json_int64(json_object_get(row, "m_unproc"), &unproc);
    /* The next scan starts at this first unprocessed change (re-read from the sync version
     * now and then, like the poll's sweep, in case the state was rewound by hand). */
    position_set(cap, &cap->scan_from, found && cap->scan_resume.sql, row, "m_unproc", "u",
                 (uint64_t)v.now);
    if (found)
        target = unproc - 1; /* everything below the oldest unprocessed change is done */
    else if (r == SQLQ_OK && sqlq_json_int64(json_object_get(row, "m_max"), &max))
        target = max, caught_up = true; /* everything read is done */
    json_decref(rows);
    bool moved = r == SQLQ_OK && target > sync;
    /* Released leases at or below the sync version are dead weight, not state: delete them
     * when caught up and every TRIM_LOG_EVERY moves under load (the bridge moves about once a
     * second under load; one DELETE per batch was a scan of the leases table per batch). */
    bool housekeeping = moved && (caught_up || cap->moves % TRIM_LOG_EVERY == 0);
    v.version = target;
    if (moved)
        r = sqlq_capture_run(cap, &cap->set_sync, &v, NULL, err);
    if (housekeeping && r == SQLQ_OK)
        r = sqlq_capture_run(cap, &cap->trim_leases, &v, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(cap->db, err);
    if (r != SQLQ_OK) {
        sqlq_db_rollback(cap->db);
        return r;
    }
    if (moved) {
        SQLQ_DEBUG("capture_advanced", "bridge=%s table=%s from=%" PRId64 " to=%" PRId64,
                   cap->bridge, cap->names.table_key, sync, target);
        /* Trim the log likewise (one cheap range delete). */
        if (housekeeping)
            trim_log(cap);
        cap->moves++;
    }
    if (out_version)
        *out_version = moved ? target : sync;
    return SQLQ_OK;
}
