/* change_source: finding a database's sources, and the change signal as the bridge uses it
 * (the source says what to wait on; bridge/wakeup.c keeps the timing). */
#include "change_source.h"

#include "capture_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const sqlq_change_source_ops *sqlq_change_source_find(const sqlq_dialect *d, sqlq_source_kind kind)
{
    if (!d || !d->sources || !d->sources[0])
        return NULL;
    if (kind == SQLQ_SOURCE_AUTO)
        return d->sources[0];
    for (size_t i = 0; d->sources[i]; i++)
        if (d->sources[i]->kind == kind)
            return d->sources[i];
    return NULL;
}

const char *sqlq_change_source_home(sqlq_source_kind kind,
                                    const sqlq_change_source_ops **out_source)
{
    const sqlq_dialect *d;
    for (size_t i = 0; (d = sqlq_dialect_at(i)) != NULL; i++) {
        const sqlq_change_source_ops *s =
            kind == SQLQ_SOURCE_AUTO ? NULL : sqlq_change_source_find(d, kind);
        if (s) {
            if (out_source)
                *out_source = s;
            return d->title;
        }
    }
    return NULL;
}

const sqlq_change_source_ops *sqlq_capture_source(const sqlq_capture *cap)
{
    return cap ? cap->ops : NULL;
}

void *sqlq_capture_source_state(const sqlq_capture *cap)
{
    return cap ? cap->src : NULL;
}

struct sqlq_change_signal {
    const sqlq_change_signal_ops *ops;
    void *sig;
};

sqlq_result sqlq_change_signal_open(sqlq_capture *cap, const char *db_connection, sqlq_db *db,
                                    sqlq_change_signal **out, sqlq_error *err)
{
    *out = NULL;
    const sqlq_change_signal_ops *ops = cap && cap->ops ? cap->ops->signal : NULL;
    if (!ops)
        return SQLQ_OK;
    void *sig = NULL;
    sqlq_result r = ops->open(cap, db_connection, db, &sig, err);
    if (r != SQLQ_OK || !sig)
        return r;
    sqlq_change_signal *s = calloc(1, sizeof(*s));
    if (!s) {
        ops->close(sig);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    s->ops = ops;
    s->sig = sig;
    *out = s;
    return SQLQ_OK;
}

void sqlq_change_signal_close(sqlq_change_signal *s)
{
    if (!s)
        return;
    s->ops->close(s->sig);
    free(s);
}

const sqlq_change_signal_ops *sqlq_change_signal_kind(const sqlq_change_signal *s)
{
    return s ? s->ops : NULL;
}

sqlq_signal_event sqlq_change_signal_wait(sqlq_change_signal *s, sqlq_db *db,
                                          const sqlq_clock *clock, uint64_t ms, int64_t covered)
{
    return s->ops->wait(s->sig, db, clock, ms, covered);
}

sqlq_signal_event sqlq_change_signal_check(sqlq_change_signal *s, sqlq_db *db, int64_t covered)
{
    return s->ops->check(s->sig, db, covered);
}

void sqlq_change_signal_peek(sqlq_change_signal *s, int64_t covered)
{
    if (s && s->ops->peek)
        s->ops->peek(s->sig, covered);
}

void sqlq_change_signal_consume(sqlq_change_signal *s, int64_t covered)
{
    if (s && s->ops->consume)
        s->ops->consume(s->sig, covered);
}

bool sqlq_source_setup_say(sqlq_source_setup *s, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    return s->lines && json_array_append_new(s->lines, json_string(line)) == 0;
}
