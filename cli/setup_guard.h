/* setup_guard: `sqlq setup --drop` asks before it discards: it refuses while a bridge instance
 * works on the table, holds leases or has changes not delivered yet (drop_guard.h), naming
 * them; --force drops anyway and says what it discards. */
#ifndef SQLQ_SETUP_GUARD_H
#define SQLQ_SETUP_GUARD_H

#include "db.h"

#include <stdbool.h>

/* SQLQ_EXIT_OK: go on with the drop (nothing to lose, or force, after saying what is
 * discarded); SQLQ_EXIT_FAILED: refused or the check failed (said on stderr). bridge NULL:
 * the whole table. */
int sqlq_setup_drop_guard(sqlq_db *db, const char *table, const char *bridge, bool force);

#endif
