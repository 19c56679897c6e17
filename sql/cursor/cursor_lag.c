/* cursor_lag: the safety lag in force and why (see the header). */
#include "cursor_lag.h"

#include <stdbool.h>
#include <stdio.h>

int sqlq_cursor_lag_resolve(const sqlq_dialect *d, sqlq_value_class cls, int configured_ms,
                            char *rule, size_t rule_size)
{
    bool set = configured_ms != SQLQ_CURSOR_LAG_DEFAULT;
    if (cls == SQLQ_VALUE_ROWVERSION && d->rowversion) {
        snprintf(rule, rule_size, "exact: rowversion below MIN_ACTIVE_ROWVERSION() (no lag needed)");
        return set ? configured_ms : 0;
    }
    if (set) {
        snprintf(rule, rule_size, "lag %d ms (set by safety_lag_ms)", configured_ms);
        return configured_ms;
    }
    if (d->serial_writer) {
        snprintf(rule, rule_size,
                 "lag 0 ms (%s default: one writer at a time commits in cursor order)", d->title);
        return 0;
    }
    snprintf(rule, rule_size,
             "lag %d ms (%s default: a commit up to %d s after its cursor value is still read)",
             SQLQ_CURSOR_DEFAULT_LAG_MS, d->title, SQLQ_CURSOR_DEFAULT_LAG_MS / 1000);
    return SQLQ_CURSOR_DEFAULT_LAG_MS;
}
