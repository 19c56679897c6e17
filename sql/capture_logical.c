/* capture_logical: the capture API's calls for a route whose source is logical, passed to
 * sql/postgres/logical_source (the change-source seam will take this file's place). */
#include "capture_internal.h"

#include <string.h>

sqlq_result sqlq_capture_logical_status(sqlq_capture *cap, sqlq_capture_status *out,
                                        sqlq_error *err)
{
    sqlq_logical_status st;
    sqlq_result rc = sqlq_logical_source_status(cap->logical, &st, err);
    if (rc != SQLQ_OK)
        return rc;
    out->logical = true;
    /* What this instance confirmed, else what the slot holds (a handle that never streamed). */
    uint64_t confirmed = st.confirmed > st.slot.confirmed_flush ? st.confirmed
                                                                : st.slot.confirmed_flush;
    out->sync_version = (int64_t)confirmed;
    out->horizon = (int64_t)confirmed;
    out->owners = json_object();
    out->pending = st.ready + st.in_flight;
    out->leased = st.in_flight;
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

bool sqlq_capture_wait_ready(const sqlq_capture *cap, uint64_t timeout_ms, bool *out_waits)
{
    *out_waits = cap && cap->logical;
    if (!*out_waits)
        return false;
    return sqlq_logical_source_wait(cap->logical, timeout_ms);
}
