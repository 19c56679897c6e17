/* ct_query: the SQL Server change-tracking specifics (CHANGETABLE checks, enabling change
 * tracking, the per-(bridge, table) app lock, retention-gap decisions), as pure text
 * builders and decisions so they are unit-tested without a server. The poll, pending and
 * advance statements over CHANGETABLE come from capture_sql.h (source = change tracking). */
#ifndef SQLQ_CT_QUERY_H
#define SQLQ_CT_QUERY_H

#include "dialect.h"
#include "result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Column type for DDL from sys.columns: nvarchar(50) (max_length is in bytes: 100),
 * varchar(max) (-1), decimal(18,2), datetime2(7), int. Odd type names come bracket-quoted. */
void sqlq_ct_type_decl(const char *type, long max_length, int precision, int scale, char *out,
                       size_t size);

/* One row: enabled (0/1), min_valid, current_version. Parameter: the quoted table name. */
const char *sqlq_ct_info_sql(void);

/* Enable change tracking on the database (when off: retention days, auto cleanup) and on one
 * table (when off). Two statements, to run outside a transaction (ALTER DATABASE cannot run
 * inside one). */
SQLQ_NODISCARD sqlq_result sqlq_ct_enable_sql(const sqlq_table_name *t, int retention_days,
                                              char **out_database, char **out_table,
                                              sqlq_error *err);

/* Whether change tracking records changed columns: one row, tracked = sys.change_tracking_tables'
 * is_track_columns_updated_on of the table (1 or 0; -1 when change tracking is off on it).
 * Parameter: the quoted table name. */
const char *sqlq_ct_track_columns_sql(void);
/* Enable change tracking on one table with TRACK_COLUMNS_UPDATED = ON, when it is off (run
 * before sqlq_ct_enable_sql's table statement). A table already tracked without it keeps its
 * setting (turning it on means disabling change tracking first: the operator's call). */
SQLQ_NODISCARD sqlq_result sqlq_ct_track_columns_enable_sql(const sqlq_table_name *t, char **out,
                                                            sqlq_error *err);

/* sp_getapplock on one resource (parameter: the resource, e.g. "sqlq:<hash12>" of the bridge
 * and table), exclusive, owned by the transaction, waiting up to timeout_ms; throws 51000
 * when it cannot be had. Not the one global lock Azure Functions takes for every trigger. */
SQLQ_NODISCARD sqlq_result sqlq_ct_applock_sql(int timeout_ms, char **out, sqlq_error *err);

/* The sync version is below CHANGE_TRACKING_MIN_VALID_VERSION: change tracking's cleanup
 * removed changes this bridge never read. Never skipped silently: SQLQ_E_INVALID naming the
 * table, both versions and the ways out, unless allow_gap, then *out_sync = min_valid and
 * *out_gap = true (the caller logs a warning). Otherwise *out_sync = sync. */
SQLQ_NODISCARD sqlq_result sqlq_ct_retention_check(const char *bridge, const char *table_key,
                                                   int64_t sync, int64_t min_valid,
                                                   bool allow_gap, int64_t *out_sync,
                                                   bool *out_gap, sqlq_error *err);

#endif
