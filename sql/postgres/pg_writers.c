/* pg_writers: the transactions that hold a trigger log's ROW EXCLUSIVE lock: observing them
 * for the read horizon (pg_horizon.h), and naming the one that holds delivery back (log
 * line, `sqlq status`). */
#include "pg_internal.h"

#include "capture_internal.h"
#include "setup_hint.h"

#include "clock.h"
#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A blocker older than this is worth a warning; the warning repeats at most this often. */
#define HELD_WARN_AFTER_MS 5000
#define HELD_WARN_EVERY_MS 30000

static sqlq_result parse_writers(const sqlq_capture *cap, json_t *rows, sqlq_horizon_writer **out,
                                 size_t *n, int64_t *sync, sqlq_error *err)
{
    size_t count = json_array_size(rows);
    *out = calloc(count ? count : 1, sizeof(**out));
    *n = 0;
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    if (!sqlq_json_int64(json_object_get(json_array_get(rows, 0), "m_sync"), sync))
        return sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "no state row for bridge %s table %s",
                              cap->bridge, cap->names.table_key);
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *xid = json_string_value(json_object_get(row, "m_xid"));
        int64_t pid = 0;
        if (!xid || !*xid)
            continue; /* no transaction id: no version either */
        if (!sqlq_json_int64(json_object_get(row, "m_pid"), &pid))
            pid = 0; /* prepared */
        snprintf((*out)[*n].xid, sizeof((*out)[*n].xid), "%s", xid);
        (*out)[*n].pid = (int)pid;
        (*n)++;
    }
    return SQLQ_OK;
}

sqlq_result sqlq_pg_writers_observe(sqlq_capture *cap, bool with_lock, sqlq_capture_values *v,
                                    sqlq_error *err)
{
    sqlq_pg_log_state *st = cap->src;
    json_t *rows = NULL;
    int64_t s = 0;
    sqlq_result r = sqlq_capture_query(cap, with_lock ? &st->seq_lock : &st->seq, v, &rows, err);
    char arg[SQLQ_SETUP_ARG_MAX];
    sqlq_setup_table_arg(&cap->names.table, "public", arg, sizeof arg);
    if (r == SQLQ_OK &&
        !sqlq_json_int64(json_object_get(json_array_get(rows, 0), "m_seq"), &s))
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false,
                           "the version sequence of %s is missing: run `sqlq setup --table %s`",
                           cap->names.table_key, arg);
    json_decref(rows);
    rows = NULL;
    /* No version handed out since an observation that found no writer: every version up to s
     * was taken before that one's step 1 by a transaction that had ended by its step 2, so s
     * is final without reading the lock table again (an idle or draining log). */
    const sqlq_horizon *h = &st->horizon;
    bool quiet = h->observed && h->count == 0 && s == h->last_s;
    if (r == SQLQ_OK)
        r = sqlq_capture_query(cap, quiet ? &st->bounds_sync : &st->bounds, v, &rows, err);
    sqlq_horizon_writer *seen = NULL;
    size_t n = 0;
    if (r == SQLQ_OK)
        r = parse_writers(cap, rows, &seen, &n, &v->sync, err);
    json_decref(rows);
    if (r == SQLQ_OK) {
        v->horizon = sqlq_horizon_observe(&st->horizon, s, v->sync, seen, n, (uint64_t)v->now);
        if (v->horizon == INT64_MIN)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    free(seen);
    return r;
}

static const char DETAIL_SQL[] =
    "SELECT a.application_name AS app, a.datname AS db, a.state AS state, "
    "CAST(extract(epoch FROM now() - a.xact_start) AS bigint) AS age_s, NULL AS gid "
    "FROM pg_stat_activity AS a WHERE a.pid = ? UNION ALL SELECT NULL, p.database, 'prepared', "
    "CAST(extract(epoch FROM now() - p.prepared) AS bigint), p.gid FROM pg_prepared_xacts AS p "
    "WHERE CAST(p.transaction AS text) = CAST(? AS text)";

/* What pg_stat_activity / pg_prepared_xacts say of one writer (fields NULL where a role may not
 * see them; age falls back to how long this process has seen it). */
static json_t *describe(sqlq_capture *cap, const sqlq_horizon_writer *w, uint64_t now_ms)
{
    sqlq_param p[2] = {sqlq_param_int(w->pid), sqlq_param_text(w->xid)};
    json_t *rows = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_query(cap->db, DETAIL_SQL, p, 2, &rows, &err) != SQLQ_OK)
        SQLQ_DEBUG("capture_writer_detail_failed", "table=%s err=\"%s\"", cap->names.table_key,
                   err.message);
    json_t *row = json_array_get(rows, 0);
    int64_t age = 0;
    if (!sqlq_json_int64(json_object_get(row, "age_s"), &age))
        age = (int64_t)((now_ms - w->first_seen_ms) / 1000);
    json_t *d =
        json_pack("{s:s, s:I, s:O, s:O, s:O, s:I, s:O}", "xid", w->xid, "pid", (json_int_t)w->pid,
                  "application_name", row ? json_object_get(row, "app") : json_null(), "database",
                  row ? json_object_get(row, "db") : json_null(), "state",
                  row ? json_object_get(row, "state") : json_null(), "age_s", (json_int_t)age,
                  "gid", row ? json_object_get(row, "gid") : json_null());
    json_decref(rows);
    return d;
}

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : dflt;
}

void sqlq_pg_writers_report(sqlq_capture *cap, uint64_t now_ms)
{
    sqlq_pg_log_state *st = cap->src;
    const sqlq_horizon_writer *w = sqlq_horizon_blocker(&st->horizon);
    if (!w || now_ms - w->first_seen_ms < HELD_WARN_AFTER_MS ||
        (st->held_logged_ms && now_ms - st->held_logged_ms < HELD_WARN_EVERY_MS))
        return;
    st->held_logged_ms = now_ms;
    json_t *d = describe(cap, w, now_ms);
    SQLQ_WARN("capture_held_back",
              "bridge=%s table=%s horizon=%" PRId64 " newest_version=%" PRId64 " xid=%s pid=%d "
              "application_name=\"%s\" database=%s state=\"%s\" age_s=%lld gid=%s note=\"an open "
              "transaction wrote the change log: changes after version %" PRId64
              " wait for it to end\"",
              cap->bridge, cap->names.table_key, st->horizon.value, st->horizon.last_s, w->xid,
              w->pid, str_or(d, "application_name", ""), str_or(d, "database", "-"),
              str_or(d, "state", "-"), (long long)json_integer_value(json_object_get(d, "age_s")),
              str_or(d, "gid", "-"), st->horizon.value);
    json_decref(d);
}

sqlq_result sqlq_pg_writers_describe(sqlq_capture *cap, json_t **out, sqlq_error *err)
{
    *out = json_array();
    if (!*out)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    uint64_t now = (uint64_t)sqlq_clock_wall_ms();
    const sqlq_horizon *h = &((sqlq_pg_log_state *)cap->src)->horizon;
    /* oldest bound first: the writer that holds the horizon comes first */
    bool *done = calloc(h->count ? h->count : 1, sizeof(bool));
    if (!done)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    for (size_t k = 0; k < h->count; k++) {
        size_t best = h->count;
        for (size_t i = 0; i < h->count; i++)
            if (!done[i] && h->writers[i].bound < h->last_s &&
                (best == h->count || h->writers[i].bound < h->writers[best].bound))
                best = i;
        if (best == h->count)
            break;
        done[best] = true;
        json_array_append_new(*out, describe(cap, &h->writers[best], now));
    }
    free(done);
    return SQLQ_OK;
}
