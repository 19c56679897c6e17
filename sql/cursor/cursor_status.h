/* cursor_status: what `sqlq status` shows of cursor sources: the rule each one reads by (the
 * safety lag in force and why, recorded by the poller when it opens) next to its lease, from
 * sqlq's cursor_state table. Backfill rows ("backfill:<name>") are left out. */
#ifndef SQLQ_CURSOR_STATUS_H
#define SQLQ_CURSOR_STATUS_H

#include "db.h"
#include "result.h"

#include <jansson.h>

/* Record rule (e.g. "lag 10000 ms (PostgreSQL default: …)") on the (bridge, table) row, adding
 * the column lag_rule to a state table created by an older sqlq. Best effort: a failure (no
 * right to alter the table) is logged as a warning and the source runs on. */
void sqlq_cursor_status_note(sqlq_db *db, const char *bridge, const char *table,
                             const char *rule);

/* One object per cursor source: bridge, table, rule ("" when not recorded), owner ("" when no
 * lease is held), lease_expires_in_ms, rows_done, cursor_value. An empty array when the state
 * table does not exist. */
SQLQ_NODISCARD sqlq_result sqlq_cursor_status_list(sqlq_db *db, json_t **out, sqlq_error *err);

#endif
