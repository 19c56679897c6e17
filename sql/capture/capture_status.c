/* capture_status: what `sqlq status` and the bridge's metrics read of one capture: sync
 * version, pending and leased changes, changes held back (and by what, where the source
 * knows: open writers of its log) and the age of the oldest change the sync version has not
 * passed. */
#include "capture.h"

#include "capture_internal.h"
#include "clock.h"

#include <stdlib.h>
#include <string.h>

void sqlq_capture_status_free(sqlq_capture_status *s)
{
    if (!s)
        return;
    json_decref(s->owners);
    json_decref(s->writers);
    json_decref(s->warnings);
    memset(s, 0, sizeof(*s));
}

static sqlq_result read_owners(sqlq_capture *cap, sqlq_capture_values *v, sqlq_capture_status *out,
                               sqlq_error *err)
{
    json_t *rows = NULL;
    sqlq_result r = sqlq_capture_query(cap, &cap->owners, v, &rows, err);
    out->owners = json_object();
    if (r == SQLQ_OK && !out->owners)
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        int64_t n = 0;
        const char *owner = json_string_value(json_object_get(row, "owner"));
        if (r != SQLQ_OK || !sqlq_json_int64(json_object_get(row, "n"), &n))
            continue;
        out->leased += n;
        if (json_object_set_new(out->owners, owner ? owner : "", json_integer(n)) != 0)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    json_decref(rows);
    return r;
}

/* A log: its newest version and the changes committed above the horizon (where the source has
 * one). */
static sqlq_result read_newest(sqlq_capture *cap, sqlq_capture_values *v, sqlq_capture_status *out,
                               sqlq_error *err)
{
    if (!cap->newest.sql)
        return SQLQ_OK;
    json_t *rows = NULL;
    sqlq_result r = sqlq_capture_query(cap, &cap->newest, v, &rows, err);
    json_t *row = json_array_get(rows, 0);
    int64_t newest = 0, held = 0;
    if (r == SQLQ_OK && !sqlq_json_int64(json_object_get(row, "m_newest"), &newest))
        newest = out->sync_version; /* an empty log */
    if (r == SQLQ_OK && sqlq_json_int64(json_object_get(row, "m_held"), &held))
        out->held_back = held;
    json_decref(rows);
    if (r == SQLQ_OK)
        out->oldest_pending_age_s =
            sqlq_pending_marks_age(&cap->marks, newest, out->sync_version, (uint64_t)v->now);
    return r;
}

sqlq_result sqlq_capture_status_get(sqlq_capture *cap, sqlq_capture_status *out, sqlq_error *err)
{
    memset(out, 0, sizeof(*out));
    if (cap->ops->status)
        return cap->ops->status(cap->src, out, err);
    const sqlq_capture_leased *src = cap->leased;
    sqlq_capture_values v = {.now = sqlq_clock_wall_ms()};
    int64_t sync = 0, pending = 0;
    sqlq_result r = src->status_begin ? src->status_begin(cap, &v, err) : SQLQ_OK;
    if (r == SQLQ_OK)
        r = sqlq_capture_query_int(cap, &cap->read_sync, &v, &sync, err);
    out->sync_version = sync;
    out->horizon = sync;
    if (r == SQLQ_OK)
        r = sqlq_capture_query_int(cap, &cap->pending, &v, &pending, err);
    out->pending = pending;
    if (r == SQLQ_OK)
        r = read_owners(cap, &v, out, err);
    if (r == SQLQ_OK)
        r = read_newest(cap, &v, out, err);
    if (r == SQLQ_OK && src->status_end)
        r = src->status_end(cap, &v, out, err);
    if (r != SQLQ_OK)
        sqlq_capture_status_free(out);
    return r;
}
