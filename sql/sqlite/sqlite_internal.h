/* sqlite_internal: what SQLite's folder shares within sql/ (its dialect lists its sources). */
#ifndef SQLQ_SQLITE_INTERNAL_H
#define SQLQ_SQLITE_INTERNAL_H

#include "capture_sql.h"
#include "change_source.h"

/* sqlite_capture_sql.c: the counter log's SQL. */
extern const sqlq_capture_log_sql sqlq_sqlite_log_sql;
/* sqlite_change_log.c: the triggers (change_log_internal.h). */
struct sqlq_log_ctx;
void sqlq_change_log_sqlite_trigger_name(const struct sqlq_log_ctx *c, size_t i, char *out,
                                         size_t size);
sqlq_result sqlq_change_log_sqlite_install(const struct sqlq_log_ctx *c, sqlq_error *err);
/* own_only: only the triggers on c's table (their names may be on another's: a shared log). */
sqlq_result sqlq_change_log_sqlite_drop(const struct sqlq_log_ctx *c, bool catalog, bool own_only,
                                        sqlq_error *err);
/* sqlite_source.c: the counter log as a change source. */
extern const sqlq_change_source_ops sqlq_sqlite_log_source;

#endif
