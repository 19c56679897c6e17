/* capture_logical: the capture API's calls for a route whose source is logical, passed to
 * sql/postgres/logical_source. Until capture.c calls every source through its ops table
 * (change_source.h), the logical source's table (logical_ops.c) is reached from here. */
#include "capture_internal.h"
#include "logical_ops.h"

#include <string.h>

sqlq_result sqlq_capture_logical_status(sqlq_capture *cap, sqlq_capture_status *out,
                                        sqlq_error *err)
{
    return sqlq_change_source_logical.status(cap->logical, out, err);
}

bool sqlq_capture_wait_ready(const sqlq_capture *cap, uint64_t timeout_ms, bool *out_waits)
{
    *out_waits = cap && cap->logical;
    if (!*out_waits)
        return false;
    return sqlq_logical_source_wait(cap->logical, timeout_ms);
}

/* The state behind an open capture, for a signal's open (change_source.h). Weak: capture.c's
 * definition, once it calls every source through the ops table, takes its place at link time;
 * until then only the logical source's state is asked for. */
__attribute__((weak)) void *sqlq_capture_source_state(const sqlq_capture *cap)
{
    return cap ? (void *)cap->logical : NULL;
}
