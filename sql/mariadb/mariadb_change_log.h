/* mariadb_change_log: the stamped change log of databases without a snapshot horizon (MariaDB,
 * MySQL). Row triggers write each key's latest operation with
 * version 0 ("not stamped yet"); sqlq_change_log_stamp gives committed rows their version in a
 * short transaction of its own, passing over the rows of open transactions, so versions become
 * visible in the order they are handed out and a late commit is stamped late, never skipped
 * (docs/capture.md, "MariaDB and MySQL"). */
#ifndef SQLQ_MARIADB_CHANGE_LOG_H
#define SQLQ_MARIADB_CHANGE_LOG_H

#include "catalog.h"
#include "change_log_options.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <stdbool.h>
#include <stdint.h>

/* Create or replace the three triggers (insert, update, delete) of table t; the log table
 * exists. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_stamped_install(sqlq_db *db, const sqlq_table *t,
                                                           const sqlq_catalog_names *n,
                                                           const sqlq_change_log_options *o,
                                                           sqlq_error *err);
/* Drop the triggers (when present). */
SQLQ_NODISCARD sqlq_result sqlq_change_log_stamped_drop(sqlq_db *db, const sqlq_catalog_names *n,
                                                        sqlq_error *err);
/* Whether all three triggers are present. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_stamped_installed(sqlq_db *db,
                                                             const sqlq_catalog_names *n,
                                                             bool *out, sqlq_error *err);
/* Stamp up to limit committed, unstamped log rows of t with the next version, in a transaction
 * of its own (db must not be in one); *out_stamped: how many (0: nothing to stamp, no version
 * used), *out_version: the version they took. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_stamp(sqlq_db *db, const sqlq_table *t,
                                                 const sqlq_catalog_names *n, int limit,
                                                 long long *out_stamped, int64_t *out_version,
                                                 sqlq_error *err);
/* The trigger names: sqlq_<log table>_ai, _au, _ad (MariaDB triggers share their table's
 * database's namespace). */
void sqlq_change_log_stamped_trigger(const sqlq_catalog_names *n, int i, char *out, size_t size);

#endif
