/* upsert: the statements a sink runs to apply a change to a target table: insert-or-update by
 * primary key, and delete by key. Values are always ? parameters, never pasted. */
#ifndef SQLQ_UPSERT_H
#define SQLQ_UPSERT_H

#include "buf.h"
#include "db.h"
#include "dialect.h"
#include "result.h"

#include <stddef.h>

/* Appends the upsert of one row to out. cols are the columns given (every key column among
 * them); parameters bind in the order of cols. key lists the primary-key columns.
 *  - PostgreSQL: INSERT INTO t (cols) VALUES (?…) ON CONFLICT (key) DO UPDATE SET c = EXCLUDED.c
 *  - SQLite (3.24+): the same with excluded.c
 *  - SQL Server: MERGE INTO t WITH (HOLDLOCK) AS [target] USING (SELECT ? AS c, …) AS [source]
 *    ON … WHEN MATCHED THEN UPDATE SET … WHEN NOT MATCHED THEN INSERT … VALUES …;
 * When every column is a key column there is nothing to update: DO NOTHING / no MATCHED arm. */
SQLQ_NODISCARD sqlq_result sqlq_upsert_sql(const sqlq_dialect *d, const sqlq_table_name *t,
                                           const char *const *cols, size_t ncols,
                                           const char *const *key, size_t nkey, sqlq_buf *out,
                                           sqlq_error *err);

/* Appends DELETE FROM t WHERE k1 = ? AND k2 = ?; parameters bind in the order of key. */
SQLQ_NODISCARD sqlq_result sqlq_upsert_delete_sql(const sqlq_dialect *d, const sqlq_table_name *t,
                                                  const char *const *key, size_t nkey,
                                                  sqlq_buf *out, sqlq_error *err);

#endif
