/* sink_repair: what a sink remembers of the repair manifests of backfill runs (message/
 * msg_manifest.h), in a small table beside its version table (<versions>_repair), and the sweep
 * they lead to: once every page of a run is known, the rows the sink holds at a version below
 * the run's first page whose key no page found are deleted (docs/messages.md, "Repair
 * manifests").
 *
 * Rows (target_table, run_id, kind, page, attempt, item, n), one per:
 *  'p' a part of a page's manifest: attempt = that page's floor, item = the part, n = parts;
 *  'k' a key a page found: attempt = the page's floor, item = the key's hash;
 *  'c' the floor page `page` was committed with (from the next page's "prev", or the end);
 *  'e' the end: n = the number of pages;
 *  's' the sweep is done; 'L' the run's lock row (its n counts the manifests applied).
 * Every call runs in the caller's transaction, after sqlq_sink_repair_lock. */
#ifndef SQLQ_SINK_REPAIR_H
#define SQLQ_SINK_REPAIR_H

#include "db.h"
#include "dialect.h"
#include "result.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct sqlq_sink_repair {
    sqlq_table_name table;    /* <versions>_repair */
    sqlq_table_name versions; /* the version table (version_guard.h) */
    const char *target;       /* the target table as the version table stores it */
} sqlq_sink_repair;

/* The names, from the version table's. */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_init(sqlq_sink_repair *rp,
                                                 const sqlq_table_name *versions,
                                                 const char *target, sqlq_error *err);
/* CREATE TABLE … when missing. */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_install(sqlq_db *db, const sqlq_sink_repair *rp,
                                                    sqlq_error *err);
/* Serialise the manifests of one run: the run's lock row, made or updated. */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_lock(sqlq_db *db, const sqlq_sink_repair *rp,
                                                 int64_t run, sqlq_error *err);
/* One row as above (kept once: a manifest delivered again adds nothing). */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_add(sqlq_db *db, const sqlq_sink_repair *rp,
                                                int64_t run, char kind, int64_t page,
                                                int64_t attempt, const char *item, int64_t n,
                                                sqlq_error *err);
/* Whether the sweep is due: the end known, every page 1..pages committed with all the parts of
 * its committed manifest present, not swept yet. *out_version: the sweep's version (page 1's
 * floor); *out_pages the number of pages (0: nothing to compare, no sweep). */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_due(sqlq_db *db, const sqlq_sink_repair *rp,
                                                int64_t run, bool *out_due, int64_t *out_version,
                                                int64_t *out_pages, sqlq_error *err);
/* The rows to delete: [{"key_hash", "key_json"}] of the version table's rows of the target
 * below `version` whose key no committed page of the run found (rows without key_json, kept
 * before it existed, are not known). */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_gone(sqlq_db *db, const sqlq_sink_repair *rp,
                                                 int64_t run, int64_t version, json_t **out,
                                                 sqlq_error *err);
/* The sweep is done: mark it, forget the run's keys and parts and every older run. */
SQLQ_NODISCARD sqlq_result sqlq_sink_repair_done(sqlq_db *db, const sqlq_sink_repair *rp,
                                                 int64_t run, sqlq_error *err);

#endif
