/* cursor_state: the checkpoint and fenced lease of one cursor poller or backfill.
 *
 * Every write that moves the checkpoint is one UPDATE whose WHERE clause names this instance's
 * owner id and fencing token: the database decides, so a poller that was paused past its lease
 * (and replaced: token + 1) can never move the checkpoint, whatever its own clock believes.
 * Lease expiry uses the database clock, so instances on different hosts agree on it. */
#include "cursor_state.h"

#include "catalog.h"
#include "dialect.h"
#include "instance.h"
#include "json_int.h"
#include "log.h"
#include "sql_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sqlq_cursor_state {
    sqlq_db *db;
    char *bridge;
    char *table;
    char owner[256];
    int lease_ms;
    bool leader;
    int64_t token;
    char *sql_acquire, *sql_read, *sql_renew, *sql_renew_owner, *sql_commit, *sql_reset, *sql_resign;
};

void sqlq_checkpoint_clear(sqlq_checkpoint *cp)
{
    if (!cp)
        return;
    free(cp->cursor_value);
    json_decref(cp->key);
    memset(cp, 0, sizeof(*cp));
}

sqlq_result sqlq_checkpoint_copy(sqlq_checkpoint *dst, const sqlq_checkpoint *src)
{
    sqlq_checkpoint c = *src;
    c.cursor_value = src->cursor_value ? strdup(src->cursor_value) : NULL;
    c.key = src->key ? json_deep_copy(src->key) : NULL;
    if ((src->cursor_value && !c.cursor_value) || (src->key && !c.key)) {
        sqlq_checkpoint_clear(&c);
        return SQLQ_E_NOMEM;
    }
    *dst = c;
    return SQLQ_OK;
}

void sqlq_cursor_state_default_owner(char *out, size_t size)
{
    sqlq_instance_id_make(out, size);
}

/* Append s with every '@' replaced by the database's now in ms. */
static void add_with_now(sqlq_sql_text *q, const char *s, const char *now)
{
    for (const char *p = s; *p; p++) {
        if (*p == '@')
            sqlq_sql_text_add(q, "%s", now);
        else
            sqlq_sql_text_add(q, "%c", *p);
    }
}

/* head <state> [SET set] WHERE bridge_name = ? AND table_name = ? tail; '@' = now in ms. */
static sqlq_result build(const sqlq_dialect *d, const char *head, const char *set, const char *tail,
                         char **out, sqlq_error *err)
{
    const char *now = sqlq_dialect_now_ms(d);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "%s", head);
    sqlq_catalog_object(&q, SQLQ_CURSOR_STATE_OBJECT);
    if (set) {
        sqlq_sql_text_add(&q, " SET ");
        add_with_now(&q, set, now);
    }
    sqlq_sql_text_add(&q, " WHERE bridge_name = ? AND table_name = ?");
    add_with_now(&q, tail, now);
    return sqlq_sql_text_take(&q, out, err);
}

static sqlq_result build_all(sqlq_cursor_state *st, const sqlq_dialect *d, sqlq_error *err)
{
    static const char *const owned = " AND lease_owner = ? AND lease_token = ?";
    char read_head[512];
    snprintf(read_head, sizeof(read_head),
             "SELECT lease_owner, lease_token, lease_expires_ms, cursor_value, key_json, "
             "batch_id, rows_done, run_id, finished, %s AS now_ms FROM ",
             sqlq_dialect_now_ms(d));
    char commit_tail[128];
    snprintf(commit_tail, sizeof(commit_tail), "%s AND batch_id <= ?", owned);
    sqlq_result r = build(d, "UPDATE ",
                          "lease_owner = ?, lease_token = lease_token + 1, "
                          "lease_expires_ms = @ + ?",
                          " AND (lease_owner IS NULL OR lease_expires_ms < @)", &st->sql_acquire,
                          err);
    if (r == SQLQ_OK)
        r = build(d, read_head, NULL, "", &st->sql_read, err);
    if (r == SQLQ_OK)
        r = build(d, "UPDATE ", "lease_expires_ms = @ + ?", owned, &st->sql_renew, err);
    if (r == SQLQ_OK)
        r = build(d, "UPDATE ", "lease_expires_ms = @ + ?", " AND lease_owner = ?",
                  &st->sql_renew_owner, err);
    if (r == SQLQ_OK)
        r = build(d, "UPDATE ",
                  "cursor_value = ?, key_json = ?, batch_id = ?, rows_done = ?, run_id = ?, "
                  "finished = ?, updated_ms = @, lease_expires_ms = @ + ?",
                  commit_tail, &st->sql_commit, err);
    if (r == SQLQ_OK)
        r = build(d, "UPDATE ",
                  "cursor_value = NULL, key_json = NULL, batch_id = 0, rows_done = 0, "
                  "run_id = ?, finished = 0, updated_ms = @",
                  owned, &st->sql_reset, err);
    if (r == SQLQ_OK)
        r = build(d, "UPDATE ", "lease_owner = NULL, lease_expires_ms = 0", owned,
                  &st->sql_resign, err);
    return r;
}

/* Schema sqlq, created only when missing: PostgreSQL checks CREATE on the database before it
 * looks at IF NOT EXISTS, and a DBA may have created the schema for a role without that right.
 * The cursor source needs nothing else of sqlq's shared objects. */
static sqlq_result ensure_schema(sqlq_db *db, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(db);
    if (!d->schema_exists_sql)
        return SQLQ_OK;
    int64_t n = 0;
    sqlq_result r = sqlq_db_query_int(db, d->schema_exists_sql, NULL, 0, &n, err);
    if (r == SQLQ_OK && n == 0)
        r = sqlq_db_exec(db, d->schema_create_sql, NULL, 0, NULL, err);
    return r;
}

/* The state table, created only when missing (a role that may only use it needs no DDL right). */
static sqlq_result create_table(sqlq_db *db, sqlq_error *err)
{
    bool present = false;
    sqlq_result r = sqlq_catalog_object_exists(db, SQLQ_CURSOR_STATE_OBJECT, &present, err);
    if (r != SQLQ_OK || present)
        return r;
    r = sqlq_db_begin(db, err);
    if (r != SQLQ_OK)
        return r;
    r = sqlq_catalog_ddl_lock(db, err);
    if (r == SQLQ_OK)
        r = ensure_schema(db, err);
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sqlq_db_dialect(db)->cursor_state_create, NULL, 0, NULL, err);
    if (r == SQLQ_OK)
        r = sqlq_db_commit(db, err);
    if (r != SQLQ_OK)
        sqlq_db_rollback(db);
    return r;
}

/* Insert the (bridge, table) row unless it exists; a concurrent insert of the same row is fine. */
static sqlq_result ensure_row(sqlq_cursor_state *st, sqlq_error *err)
{
    const sqlq_dialect *d = sqlq_db_dialect(st->db);
    char *count_sql = NULL, *insert_sql = NULL;
    sqlq_result r = build(d, "SELECT count(*) FROM ", NULL, "", &count_sql, err);
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, d);
    sqlq_sql_text_add(&q, "INSERT INTO ");
    sqlq_catalog_object(&q, SQLQ_CURSOR_STATE_OBJECT);
    sqlq_sql_text_add(&q, " (bridge_name, table_name, updated_ms) VALUES (?, ?, %s)",
                      sqlq_dialect_now_ms(d));
    if (r == SQLQ_OK)
        r = sqlq_sql_text_take(&q, &insert_sql, err);
    sqlq_sql_text_free(&q);
    sqlq_param p[2] = {sqlq_param_text(st->bridge), sqlq_param_text(st->table)};
    int64_t n = 0;
    if (r == SQLQ_OK)
        r = sqlq_db_query_int(st->db, count_sql, p, 2, &n, err);
    if (r == SQLQ_OK && n == 0) {
        sqlq_error ins;
        sqlq_error_clear(&ins);
        if (sqlq_db_exec(st->db, insert_sql, p, 2, NULL, &ins) != SQLQ_OK) {
            r = sqlq_db_query_int(st->db, count_sql, p, 2, &n, err);
            if (r == SQLQ_OK && n == 0)
                r = sqlq_error_set(err, ins.code, ins.transient, "%s", ins.message);
        }
    }
    free(count_sql);
    free(insert_sql);
    return r;
}

sqlq_result sqlq_cursor_state_open(sqlq_db *db, const char *bridge, const char *table,
                                   const char *owner, int lease_ms, sqlq_cursor_state **out,
                                   sqlq_error *err)
{
    *out = NULL;
    if (!bridge || !*bridge || !table || !*table || lease_ms < 100)
        return sqlq_error_set(err, SQLQ_E_INVALID, false,
                              "cursor state needs a bridge name, a table and a lease >= 100 ms");
    sqlq_cursor_state *st = calloc(1, sizeof(*st));
    if (!st)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    st->db = db;
    st->lease_ms = lease_ms;
    st->bridge = strdup(bridge);
    st->table = strdup(table);
    if (owner && *owner)
        snprintf(st->owner, sizeof(st->owner), "%s", owner);
    else
        sqlq_cursor_state_default_owner(st->owner, sizeof(st->owner));
    sqlq_result r = (st->bridge && st->table) ? SQLQ_OK
                                              : sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (r == SQLQ_OK)
        r = build_all(st, sqlq_db_dialect(db), err);
    if (r == SQLQ_OK)
        r = create_table(db, err);
    if (r == SQLQ_OK)
        r = ensure_row(st, err);
    if (r != SQLQ_OK) {
        sqlq_cursor_state_close(st);
        return r;
    }
    *out = st;
    return SQLQ_OK;
}

void sqlq_cursor_state_close(sqlq_cursor_state *st)
{
    if (!st)
        return;
    free(st->bridge);
    free(st->table);
    free(st->sql_acquire);
    free(st->sql_read);
    free(st->sql_renew);
    free(st->sql_renew_owner);
    free(st->sql_commit);
    free(st->sql_reset);
    free(st->sql_resign);
    free(st);
}

const char *sqlq_cursor_state_owner(const sqlq_cursor_state *st)
{
    return st->owner;
}

bool sqlq_cursor_state_leader(const sqlq_cursor_state *st)
{
    return st->leader;
}

int64_t sqlq_cursor_state_token(const sqlq_cursor_state *st)
{
    return st->token;
}

static int64_t int_of(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    int64_t n = 0;
    if (json_is_true(v))
        return 1;
    return sqlq_json_int64(v, &n) ? n : 0;
}

static sqlq_result parse_row(const json_t *row, sqlq_checkpoint *cp, sqlq_lease_info *lease,
                             sqlq_error *err)
{
    if (lease) {
        memset(lease, 0, sizeof(*lease));
        const char *o = json_string_value(json_object_get(row, "lease_owner"));
        snprintf(lease->owner, sizeof(lease->owner), "%s", o ? o : "");
        lease->token = int_of(row, "lease_token");
        lease->expires_ms = int_of(row, "lease_expires_ms");
        lease->now_ms = int_of(row, "now_ms");
    }
    if (!cp)
        return SQLQ_OK;
    sqlq_checkpoint c;
    memset(&c, 0, sizeof(c));
    const char *cv = json_string_value(json_object_get(row, "cursor_value"));
    const char *kj = json_string_value(json_object_get(row, "key_json"));
    c.batch_id = int_of(row, "batch_id");
    c.rows_done = int_of(row, "rows_done");
    c.run_id = int_of(row, "run_id");
    c.finished = int_of(row, "finished") != 0;
    if (cv && !(c.cursor_value = strdup(cv)))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (kj) {
        json_error_t je;
        c.key = json_loads(kj, JSON_DECODE_ANY, &je);
        if (!json_is_array(c.key)) {
            sqlq_checkpoint_clear(&c);
            return sqlq_error_set(err, SQLQ_E_PARSE, false,
                                  "stored checkpoint key is not a JSON array: %.80s", kj);
        }
    }
    *cp = c;
    return SQLQ_OK;
}

sqlq_result sqlq_cursor_state_read(sqlq_cursor_state *st, sqlq_checkpoint *out_cp,
                                   sqlq_lease_info *out_lease, sqlq_error *err)
{
    sqlq_param p[2] = {sqlq_param_text(st->bridge), sqlq_param_text(st->table)};
    json_t *rows = NULL;
    sqlq_result r = sqlq_db_query(st->db, st->sql_read, p, 2, &rows, err);
    if (r == SQLQ_OK && json_array_size(rows) != 1)
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "no cursor state row for %s / %s",
                           st->bridge, st->table);
    if (r == SQLQ_OK)
        r = parse_row(json_array_get(rows, 0), out_cp, out_lease, err);
    json_decref(rows);
    return r;
}

static void lost(sqlq_cursor_state *st, const char *what)
{
    if (st->leader)
        SQLQ_WARN("cursor_lease_lost", "bridge=%s table=%s owner=%s token=%lld during=%s",
                  st->bridge, st->table, st->owner, (long long)st->token, what);
    st->leader = false;
}

sqlq_result sqlq_cursor_state_renew(sqlq_cursor_state *st, sqlq_error *err)
{
    if (!st->leader)
        return sqlq_error_set(err, SQLQ_E_LEASE_LOST, false, "this instance holds no lease");
    sqlq_param p[5] = {sqlq_param_int(st->lease_ms), sqlq_param_text(st->bridge),
                       sqlq_param_text(st->table), sqlq_param_text(st->owner),
                       sqlq_param_int(st->token)};
    long long n = 0;
    sqlq_result r = sqlq_db_exec(st->db, st->sql_renew, p, 5, &n, err);
    if (r == SQLQ_OK && n != 1) {
        lost(st, "renew");
        r = sqlq_error_set(err, SQLQ_E_LEASE_LOST, false,
                           "lease of %s / %s was taken over (token %lld is stale)", st->bridge,
                           st->table, (long long)st->token);
    }
    return r;
}

sqlq_result sqlq_cursor_state_renew_owner(sqlq_cursor_state *st, sqlq_error *err)
{
    sqlq_param p[4] = {sqlq_param_int(st->lease_ms), sqlq_param_text(st->bridge),
                       sqlq_param_text(st->table), sqlq_param_text(st->owner)};
    long long n = 0;
    sqlq_result r = sqlq_db_exec(st->db, st->sql_renew_owner, p, 4, &n, err);
    if (r == SQLQ_OK && n != 1)
        r = sqlq_error_set(err, SQLQ_E_LEASE_LOST, false,
                           "%s holds no lease of %s / %s", st->owner, st->bridge, st->table);
    return r;
}

sqlq_result sqlq_cursor_state_acquire(sqlq_cursor_state *st, bool *out_leader,
                                      sqlq_checkpoint *out_cp, sqlq_error *err)
{
    *out_leader = false;
    if (st->leader) {
        sqlq_result r = sqlq_cursor_state_renew(st, err);
        if (r == SQLQ_E_LEASE_LOST) {
            /* Taken over: fall through and see whether it is free again (it is not, usually). */
            if (err)
                sqlq_error_clear(err);
        } else {
            *out_leader = r == SQLQ_OK;
            return r == SQLQ_OK && out_cp ? sqlq_cursor_state_read(st, out_cp, NULL, err) : r;
        }
    }
    sqlq_param p[4] = {sqlq_param_text(st->owner), sqlq_param_int(st->lease_ms),
                       sqlq_param_text(st->bridge), sqlq_param_text(st->table)};
    long long n = 0;
    sqlq_result r = sqlq_db_exec(st->db, st->sql_acquire, p, 4, &n, err);
    if (r != SQLQ_OK || n != 1)
        return r;
    sqlq_checkpoint cp;
    sqlq_lease_info li;
    r = sqlq_cursor_state_read(st, &cp, &li, err);
    if (r != SQLQ_OK)
        return r;
    /* Between our UPDATE and this read the lease can only have changed hands if it expired
     * again; the owner check catches that. */
    if (strcmp(li.owner, st->owner) != 0) {
        sqlq_checkpoint_clear(&cp);
        return SQLQ_OK;
    }
    st->leader = true;
    st->token = li.token;
    *out_leader = true;
    SQLQ_INFO("cursor_lease_acquired", "bridge=%s table=%s owner=%s token=%lld batch_id=%lld",
              st->bridge, st->table, st->owner, (long long)st->token, (long long)cp.batch_id);
    if (out_cp)
        *out_cp = cp;
    else
        sqlq_checkpoint_clear(&cp);
    return SQLQ_OK;
}

sqlq_result sqlq_cursor_state_commit(sqlq_cursor_state *st, const sqlq_checkpoint *cp,
                                     sqlq_error *err)
{
    if (!st->leader)
        return sqlq_error_set(err, SQLQ_E_LEASE_LOST, false, "this instance holds no lease");
    char *key = cp->key ? json_dumps(cp->key, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (cp->key && !key)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_param p[12] = {
        sqlq_param_text(cp->cursor_value), sqlq_param_text(key),
        sqlq_param_int(cp->batch_id),      sqlq_param_int(cp->rows_done),
        sqlq_param_int(cp->run_id),        sqlq_param_int(cp->finished ? 1 : 0),
        sqlq_param_int(st->lease_ms),      sqlq_param_text(st->bridge),
        sqlq_param_text(st->table),        sqlq_param_text(st->owner),
        sqlq_param_int(st->token),         sqlq_param_int(cp->batch_id)};
    long long n = 0;
    sqlq_result r = sqlq_db_exec(st->db, st->sql_commit, p, 12, &n, err);
    free(key);
    if (r == SQLQ_OK && n != 1) {
        lost(st, "commit");
        r = sqlq_error_set(err, SQLQ_E_LEASE_LOST, false,
                           "checkpoint commit of %s / %s rejected: the lease (token %lld) was "
                           "taken over by another instance",
                           st->bridge, st->table, (long long)st->token);
    }
    return r;
}

sqlq_result sqlq_cursor_state_reset(sqlq_cursor_state *st, int64_t run_id, sqlq_error *err)
{
    if (!st->leader)
        return sqlq_error_set(err, SQLQ_E_LEASE_LOST, false, "this instance holds no lease");
    sqlq_param p[5] = {sqlq_param_int(run_id), sqlq_param_text(st->bridge),
                       sqlq_param_text(st->table), sqlq_param_text(st->owner),
                       sqlq_param_int(st->token)};
    long long n = 0;
    sqlq_result r = sqlq_db_exec(st->db, st->sql_reset, p, 5, &n, err);
    if (r == SQLQ_OK && n != 1) {
        lost(st, "reset");
        r = sqlq_error_set(err, SQLQ_E_LEASE_LOST, false, "lease of %s / %s was taken over",
                           st->bridge, st->table);
    }
    return r;
}

sqlq_result sqlq_cursor_state_resign(sqlq_cursor_state *st, sqlq_error *err)
{
    if (!st->leader)
        return SQLQ_OK;
    sqlq_param p[4] = {sqlq_param_text(st->bridge), sqlq_param_text(st->table),
                       sqlq_param_text(st->owner), sqlq_param_int(st->token)};
    st->leader = false;
    return sqlq_db_exec(st->db, st->sql_resign, p, 4, NULL, err);
}

sqlq_result sqlq_cursor_state_forget(sqlq_db *db, const char *table_key, const char *bridge,
                                     long long *out_removed, sqlq_error *err)
{
    *out_removed = 0;
    bool have = false;
    sqlq_result r = sqlq_catalog_object_exists(db, SQLQ_CURSOR_STATE_OBJECT, &have, err);
    if (r != SQLQ_OK || !have)
        return r;
    sqlq_sql_text q;
    sqlq_sql_text_init(&q, sqlq_db_dialect(db));
    sqlq_sql_text_add(&q, "DELETE FROM ");
    sqlq_catalog_object(&q, SQLQ_CURSOR_STATE_OBJECT);
    sqlq_sql_text_add(&q, " WHERE table_name = ?%s", bridge ? " AND bridge_name = ?" : "");
    char *sql = NULL;
    r = sqlq_sql_text_take(&q, &sql, err);
    sqlq_param p[2] = {sqlq_param_text(table_key), sqlq_param_text(bridge)};
    if (r == SQLQ_OK)
        r = sqlq_db_exec(db, sql, p, bridge ? 2 : 1, out_removed, err);
    free(sql);
    return r;
}
