/* sink_manifest: the --sql sink applying a repair manifest of `sqlq backfill --repair`
 * (message/msg_manifest.h, sql/sink/sink_repair.h): it records the keys each page found and, once
 * every page of the run is there (in whatever order the messages came), deletes the rows it
 * holds at a version below the run's first page whose key no page found, leaving the version
 * as a tombstone (a late older message does not bring the row back). */
#ifndef SQLQ_SINK_MANIFEST_H
#define SQLQ_SINK_MANIFEST_H

#include "db.h"
#include "msg_manifest.h"
#include "result.h"
#include "sink_repair.h"
#include "table.h"

/* Delete the row of a canonical key (the sink's own delete). */
typedef sqlq_result (*sqlq_sink_delete_fn)(void *arg, sqlq_db *db, json_t *key, sqlq_error *err);

typedef struct sqlq_sink_manifest_ctx {
    const sqlq_table *table;
    const char *shown;          /* the table as the user wrote it, for messages */
    const sqlq_sink_repair *rp; /* the bookkeeping and the version table */
    sqlq_sink_delete_fn delete_key;
    void *arg;
} sqlq_sink_manifest_ctx;

/* Apply m in one transaction on db. SQLQ_E_INVALID for keys that are not the table's (the
 * usual failure path); database errors as they come. *out_deleted: rows the sweep deleted
 * (-1 when no sweep ran). */
SQLQ_NODISCARD sqlq_result sqlq_sink_manifest_apply(const sqlq_sink_manifest_ctx *ctx,
                                                    sqlq_db *db, const sqlq_msg_manifest *m,
                                                    long long *out_deleted, sqlq_error *err);

#endif
