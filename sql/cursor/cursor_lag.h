/* cursor_lag: the safety lag a cursor source reads with (safe by default: non-zero wherever
 * writers may commit out of order), and the rule in words. docs/cursor-source.md, "The safety
 * lag". */
#ifndef SQLQ_CURSOR_LAG_H
#define SQLQ_CURSOR_LAG_H

#include "dialect.h"
#include "keyset.h"

#include <stddef.h>

/* safety_lag_ms of -1 (what sqlq_capture_config_default sets): the database's default, safe with
 * concurrent writers: SQLite 0 (one writer commits in order), SQL Server rowversion exact
 * (MIN_ACTIVE_ROWVERSION), everything else SQLQ_CURSOR_DEFAULT_LAG_MS. Other values, 0 among
 * them, only when the user sets them. */
#define SQLQ_CURSOR_LAG_DEFAULT (-1)
#define SQLQ_CURSOR_DEFAULT_LAG_MS 10000

/* The lag in force for a cursor of class cls on dialect d given the configured value, and the
 * rule in words ("lag 10000 ms (PostgreSQL default: …)") in rule. */
int sqlq_cursor_lag_resolve(const sqlq_dialect *d, sqlq_value_class cls, int configured_ms,
                            char *rule, size_t rule_size);

#endif
