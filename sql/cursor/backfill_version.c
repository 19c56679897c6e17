/* backfill_version: a backfilled row's version where the source has none (see the header),
 * from the database's default source (change_source.h: backfill_version, backfill_floor). */
#include "backfill_version.h"

#include "change_source.h"
#include "dialect.h"

sqlq_result sqlq_backfill_version_sql(sqlq_db *db, const sqlq_catalog_names *n,
                                      const sqlq_table *t, char **out_floor, char **out_version,
                                      bool *out_param, sqlq_backfill_version_source *out_kind,
                                      sqlq_error *err)
{
    *out_param = false;
    *out_floor = *out_version = NULL;
    *out_kind = SQLQ_BACKFILL_VERSION_NONE;
    const sqlq_change_source_ops *src =
        sqlq_change_source_find(sqlq_db_dialect(db), SQLQ_SOURCE_AUTO);
    if (!src || !src->backfill_version)
        return SQLQ_OK;
    sqlq_result r = src->backfill_version(db, n, t, out_floor, out_version, out_param, err);
    if (r == SQLQ_OK && *out_version)
        *out_kind = src->kind == SQLQ_SOURCE_CHANGE_TRACKING
                        ? SQLQ_BACKFILL_VERSION_CHANGE_TRACKING
                        : SQLQ_BACKFILL_VERSION_CHANGE_LOG;
    return r;
}

sqlq_result sqlq_backfill_floor_begin(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out,
                                      bool *out_txn, sqlq_error *err)
{
    *out = 0;
    *out_txn = false;
    const sqlq_change_source_ops *src =
        sqlq_change_source_find(sqlq_db_dialect(db), SQLQ_SOURCE_AUTO);
    return src && src->backfill_floor ? src->backfill_floor(db, n, out, out_txn, err) : SQLQ_OK;
}

sqlq_result sqlq_backfill_floor_end(sqlq_db *db, bool ok, sqlq_error *err)
{
    if (ok)
        return sqlq_db_commit(db, err);
    sqlq_db_rollback(db);
    return SQLQ_OK;
}
