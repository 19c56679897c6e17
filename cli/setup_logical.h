/* setup_logical: `sqlq setup --source logical` (and --drop) of one table: what it prints. */
#ifndef SQLQ_SETUP_LOGICAL_H
#define SQLQ_SETUP_LOGICAL_H

#include "db.h"

#include <stdbool.h>

/* Exit code (SQLQ_EXIT_*): the refusals and errors on stderr, each step and warning on stdout. */
int sqlq_setup_logical(sqlq_db *db, const char *table, const char *key_columns,
                       const char *bridge_name, bool full_identity, bool drop);

#endif
