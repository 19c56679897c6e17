/* drop_guard: what `sqlq setup --drop` of a table (or of one bridge's state) would discard:
 * bridge instances working on it now (capture_presence.h), leases held, and changes not
 * delivered yet per bridge (capture_backlog.h). Without --force setup refuses while there is
 * any; with it, it says what it discards. */
#ifndef SQLQ_DROP_GUARD_H
#define SQLQ_DROP_GUARD_H

#include "db.h"
#include "result.h"

#include <jansson.h>

/* Findings as an array of objects: {"bridge", "kind": "instance", "instance", "left_s"},
 * {"bridge", "kind": "leases", "leased"}, {"bridge", "kind": "pending", "pending",
 * "sync_version"}; empty when the drop loses nothing. bridge NULL: every bridge of the table.
 * table as the user names it. */
SQLQ_NODISCARD sqlq_result sqlq_drop_guard_check(sqlq_db *db, const char *table,
                                                 const char *bridge, json_t **out,
                                                 sqlq_error *err);
/* One finding as a line for the operator ("bridge default: instance h:1:ab is working on the
 * table (seen within its lease, 52 s left)"). */
void sqlq_drop_guard_text(const json_t *finding, char *out, size_t size);

#endif
