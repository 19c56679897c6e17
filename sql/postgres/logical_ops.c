/* logical_ops: the logical source (logical_source.h) as a change source (change_source.h): a
 * source with its own leases, fed by a stream, whose signal is its ready ring. */
#include "logical_ops.h"

#include "capture_internal.h"

#include "logical_source.h"
#include "pg_slot.h"

#include <stdio.h>
#include <string.h>

static sqlq_result l_open(sqlq_db *db, const sqlq_capture_config *cfg, void **out_src,
                          sqlq_error *err)
{
    sqlq_logical_source *ls = NULL;
    sqlq_result rc = sqlq_logical_source_open(db, cfg, &ls, err);
    *out_src = ls;
    return rc;
}

static void l_close(void *src) { sqlq_logical_source_close(src); }
static const sqlq_table *l_table(const void *src) { return sqlq_logical_source_table(src); }

static sqlq_result l_poll(void *src, sqlq_change_batch *out, sqlq_error *err)
{
    return sqlq_logical_source_poll(src, 0, out, err);
}

static sqlq_result l_release(void *src, const sqlq_change *changes, size_t n, size_t *out_lost,
                             sqlq_error *err)
{
    if (out_lost)
        *out_lost = 0; /* nobody else holds what this instance polled: the slot is its own */
    return sqlq_logical_source_release(src, changes, n, err);
}

static sqlq_result l_renew(void *src, const sqlq_change *changes, size_t n, size_t *out_lost,
                           sqlq_error *err)
{
    (void)src, (void)changes, (void)n, (void)err;
    if (out_lost)
        *out_lost = 0; /* in memory until released: nothing expires */
    return SQLQ_OK;
}

static sqlq_result l_abandon(void *src, const sqlq_change *changes, size_t n, bool count_attempt,
                             sqlq_error *err)
{
    return sqlq_logical_source_abandon(src, changes, n, count_attempt, err);
}

static sqlq_result l_advance(void *src, int64_t *out_version, sqlq_error *err)
{
    (void)err; /* the reader reports it to the server with its next status update */
    int64_t v = sqlq_logical_source_confirmable(src);
    if (out_version)
        *out_version = v;
    return SQLQ_OK;
}

static sqlq_result l_status(void *src, sqlq_capture_status *out, sqlq_error *err)
{
    sqlq_logical_status st;
    sqlq_result rc = sqlq_logical_source_status(src, &st, err);
    if (rc != SQLQ_OK)
        return rc;
    /* What this instance confirmed, else what the slot holds (a handle that never streamed). */
    uint64_t confirmed = st.confirmed > st.slot.confirmed_flush ? st.confirmed
                                                                : st.slot.confirmed_flush;
    out->logical = true;
    out->sync_version = (int64_t)confirmed;
    out->horizon = (int64_t)confirmed;
    out->pending = st.ready + st.in_flight;
    out->leased = st.in_flight;
    out->owners = json_object();
    out->oldest_pending_age_s = st.lag_s;
    snprintf(out->slot, sizeof out->slot, "%s", st.names.slot);
    out->slot_active = st.slot.active;
    out->slot_holder = st.holder;
    snprintf(out->wal_status, sizeof out->wal_status, "%s", st.slot.wal_status);
    out->retained_wal_bytes = st.slot.retained_bytes;
    out->lag_bytes = st.slot.lag_bytes;
    out->lag_s = st.lag_s;
    return SQLQ_OK;
}

static sqlq_result l_check(sqlq_db *db, const sqlq_capture_config *cfg, json_t *warnings,
                           sqlq_error *err)
{
    return sqlq_logical_source_check(db, cfg, warnings, err);
}

/* setup's options that need the old row (REPLICA IDENTITY FULL) count as the route's. */
static sqlq_result l_setup(sqlq_db *db, sqlq_source_setup *s, bool drop, sqlq_error *err)
{
    sqlq_capture_config cfg = *s->cfg;
    cfg.before_image = cfg.before_image || s->options.before_image || s->options.track_columns;
    if (!cfg.bridge_name)
        cfg.bridge_name = "default"; /* --drop without a bridge name: the default's slot */
    if (!drop) { /* the table and its key first: a key the operator must name is exit 2 */
        sqlq_table *t = NULL;
        sqlq_catalog_names n;
        sqlq_result r = sqlq_capture_setup_lookup(db, s, cfg.key_columns, &t, &n, err);
        sqlq_table_free(t);
        if (r != SQLQ_OK)
            return r;
    }
    json_t *lines = json_array(), *warnings = json_array();
    sqlq_result rc = sqlq_logical_source_setup(db, &cfg, drop, lines, warnings, err);
    size_t i;
    json_t *v;
    json_array_foreach(warnings, i, v)
        (void)sqlq_source_setup_say(s, "%s: warning: %s", cfg.table, json_string_value(v));
    json_array_foreach(lines, i, v)
        (void)sqlq_source_setup_say(s, "%s: %s", cfg.table, json_string_value(v));
    json_decref(lines);
    json_decref(warnings);
    return rc;
}

static sqlq_result l_install(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    return l_setup(db, s, false, err);
}

static sqlq_result l_drop(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err)
{
    return l_setup(db, s, true, err);
}

static sqlq_result l_installed(sqlq_db *db, const sqlq_table *t, bool *out, sqlq_error *err)
{
    sqlq_catalog_names n;
    sqlq_result rc = sqlq_catalog_names_find(db, &t->name, NULL, &n, err);
    sqlq_pg_slot_names sn;
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_names_find(db, &n, &sn, err);
    if (rc == SQLQ_OK)
        rc = sqlq_pg_slot_installed(db, t, &sn, out, err);
    return rc;
}

static void l_describe(const sqlq_dialect *d, const sqlq_catalog_names *n, char *out,
                       size_t size)
{
    (void)d;
    sqlq_pg_slot_names sn;
    sqlq_pg_slot_names_make(n, "", &sn);
    snprintf(out, size, "publication %s, replication slot %s_<8 hex digits of the database and "
             "the bridge name> per bridge name", sn.publication, sn.publication);
}

/* ---- the signal: the ready ring ------------------------------------------------------------ */

static sqlq_result s_open(sqlq_capture *cap, const char *db_connection, sqlq_db *db, void **out,
                          sqlq_error *err)
{
    (void)db_connection, (void)db, (void)err;
    *out = sqlq_capture_source_state(cap);
    return SQLQ_OK;
}

static void s_close(void *sig) { (void)sig; /* the source's own: closed with the capture */ }

static sqlq_signal_event s_wait(void *sig, sqlq_db *db, const sqlq_clock *clock, uint64_t ms,
                                int64_t covered)
{
    (void)db, (void)clock, (void)covered;
    return sqlq_logical_source_wait(sig, ms) ? SQLQ_SIGNAL_CHANGED : SQLQ_SIGNAL_NONE;
}

static sqlq_signal_event s_check(void *sig, sqlq_db *db, int64_t covered)
{
    return s_wait(sig, db, NULL, 0, covered);
}

static const sqlq_change_signal_ops logical_signal = {
    .name = "stream",
    .name_before = NULL,
    .slice_ms = 50,
    .coalesce_ms = 0, /* whole transactions are handed over */
    .open = s_open,
    .close = s_close,
    .wait = s_wait,
    .check = s_check,
    .peek = NULL,
};

const sqlq_change_source_ops sqlq_change_source_logical = {
    .name = "logical",
    .title = "logical decoding",
    .kind = SQLQ_SOURCE_LOGICAL,
    .open = l_open,
    .close = l_close,
    .table = l_table,
    .poll = l_poll,
    .release = l_release,
    .renew = l_renew,
    .leases_never_expire = true,
    .abandon = l_abandon,
    .advance = l_advance,
    .status = l_status,
    .leased = NULL,
    .check = l_check,
    .install = l_install,
    .drop = l_drop,
    .installed = l_installed,
    .describe = l_describe,
    .signal = &logical_signal,
};
