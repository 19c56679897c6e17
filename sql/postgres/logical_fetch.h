/* logical_fetch: a change's row read by key, as the capture poll and backfill read rows (the
 * trigger source's JSON), for what pgoutput cannot give (an unchanged TOASTed value without the
 * old row, a column whose text is not its value). */
#ifndef SQLQ_LOGICAL_FETCH_H
#define SQLQ_LOGICAL_FETCH_H

#include "db.h"
#include "logical_txn.h"
#include "result.h"
#include "table.h"

/* c->row becomes the row of c->key as it is now; a row gone since makes c a delete (as the
 * trigger source publishes a change whose row is gone). *sql caches the statement (free it
 * when done; NULL at first). */
SQLQ_NODISCARD sqlq_result sqlq_logical_fetch_row(sqlq_db *db, const sqlq_table *t, char **sql,
                                                  sqlq_logical_change *c, sqlq_error *err);

#endif
