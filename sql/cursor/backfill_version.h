/* backfill_version: the version a backfilled row carries when the change source has none for
 * its key (never changed since setup, or its log entry was delivered and trimmed): a floor F
 * that wins over every earlier message of the key and loses to every later change, given by
 * the database's source (change_source.h; docs/messages.md "Versions", docs/cursor-source.md
 * "Backfill"):
 *  - SQLite: the log's newest version, or the floor its triggers count from (one writer at a
 *    time: every change visible to the page's statement is at or below it, every later one
 *    above);
 *  - PostgreSQL: the version sequence's last value s, read before the page, once every
 *    transaction that held the log's lock then has ended (so every version <= s is final and
 *    visible to the page's snapshot, and later ones are above s), and at least the slowest
 *    bridge's sync version read in the page's statement (a change trimmed meanwhile is at or
 *    below it);
 *  - MariaDB/MySQL: a version of its own taken from the stamp counter in the page's
 *    transaction, which holds the counter's lock to its end: above every stamped version,
 *    below every later stamp (also for a change committed but not stamped yet);
 *  - SQL Server: CHANGE_TRACKING_MIN_VALID_VERSION - 1 (what is cleaned up is below it, and
 *    change tracking's versions are commit versions). */
#ifndef SQLQ_BACKFILL_VERSION_H
#define SQLQ_BACKFILL_VERSION_H

#include "backfill.h"
#include "catalog.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <stdbool.h>
#include <stdint.h>

/* SQL expressions for the page's select list: *out_floor F, and *out_version the source's
 * version of the row's key (the change log's, change tracking's), else F; both NULL when the
 * database's source is not set up on the table (*out_kind NONE). *out_param: each holds one "?"
 * for F's value (sqlq_backfill_floor_begin), bound in order. */
SQLQ_NODISCARD sqlq_result sqlq_backfill_version_sql(sqlq_db *db, const sqlq_catalog_names *n,
                                                     const sqlq_table *t, char **out_floor,
                                                     char **out_version, bool *out_param,
                                                     sqlq_backfill_version_source *out_kind,
                                                     sqlq_error *err);

/* Before a page whose F has a parameter: its value (PostgreSQL: waits for the log's writers;
 * MariaDB: opens the page's transaction and takes the version). *out_txn: end it with
 * sqlq_backfill_floor_end after the page's statement. */
SQLQ_NODISCARD sqlq_result sqlq_backfill_floor_begin(sqlq_db *db, const sqlq_catalog_names *n,
                                                     int64_t *out_floor, bool *out_txn,
                                                     sqlq_error *err);
/* Commit (ok) or roll back the page's transaction. */
SQLQ_NODISCARD sqlq_result sqlq_backfill_floor_end(sqlq_db *db, bool ok, sqlq_error *err);

/* SQLite's triggers record their floor as the counter row 'floor:<table key>' at setup. */
#define SQLQ_BACKFILL_FLOOR_ROW "floor:"

#endif
