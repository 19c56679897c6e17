/* change_log_internal: what the change log's files share (change_log.c the table and the
 * commands; change_log_sqlite.c SQLite's triggers and version floor; change_log_pg.c
 * PostgreSQL's trigger functions, triggers and version sequence). Private to sql/. */
#ifndef SQLQ_CHANGE_LOG_INTERNAL_H
#define SQLQ_CHANGE_LOG_INTERNAL_H

#include "catalog.h"
#include "change_log_options.h"
#include "db.h"
#include "dialect.h"
#include "sql_text.h"
#include "table.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct sqlq_log_ctx {
    sqlq_db *db;
    const sqlq_table *t;
    sqlq_catalog_names names;
    const char *version_from; /* PostgreSQL: the FROM item that takes the version; NULL: VALUES */
    sqlq_change_log_options opts; /* what the log keeps beyond the key (change_log_options.h) */
} sqlq_log_ctx;

/* The two change logs: SQLite's (triggers bump a counter) or PostgreSQL's (plpgsql functions
 * take the next value of a sequence); ctx_init refuses every other capture shape. */
static inline bool sqlq_change_log_counter(const sqlq_log_ctx *c)
{
    return sqlq_db_dialect(c->db)->capture_shape == SQLQ_CAPTURE_LOG_COUNTER;
}

/* MariaDB/MySQL's log: triggers write unstamped rows (change_log_stamped.c). */
static inline bool sqlq_change_log_stamped(const sqlq_log_ctx *c)
{
    return sqlq_db_dialect(c->db)->capture_shape == SQLQ_CAPTURE_LOG_STAMPED;
}

/* INSERT … ON CONFLICT DO UPDATE of the key's log row (change_log.c). */
void sqlq_change_log_upsert(sqlq_sql_text *q, const sqlq_log_ctx *c, const char *row, char op,
                            const char *version_sql);
/* old key IS new key, column by column (NULL-safe). */
void sqlq_change_log_same_key(sqlq_sql_text *q, const sqlq_log_ctx *c);
/* Takes q's text and runs it. */
sqlq_result sqlq_change_log_exec(sqlq_db *db, sqlq_sql_text *q, sqlq_error *err);

/* SQLite (change_log_sqlite.c). */
void sqlq_change_log_sqlite_trigger_name(const sqlq_log_ctx *c, size_t i, char *out, size_t size);
sqlq_result sqlq_change_log_sqlite_install(const sqlq_log_ctx *c, sqlq_error *err);
/* own_only: only the triggers on c's table (their names may be on another's: a shared log). */
sqlq_result sqlq_change_log_sqlite_drop(const sqlq_log_ctx *c, bool catalog, bool own_only,
                                        sqlq_error *err);

/* PostgreSQL (change_log_pg.c). */
sqlq_result sqlq_change_log_pg_lock_table(const sqlq_log_ctx *c, sqlq_error *err);
sqlq_result sqlq_change_log_pg_install(const sqlq_log_ctx *c, sqlq_error *err);
sqlq_result sqlq_change_log_pg_trigger(const sqlq_log_ctx *c, bool create, sqlq_error *err);
/* The triggers and both functions (the log table stays). */
sqlq_result sqlq_change_log_pg_drop(const sqlq_log_ctx *c, sqlq_error *err);
/* The bare name of the row trigger's function: <log function>_row (at most 59 bytes). */
void sqlq_change_log_pg_row_function(const sqlq_catalog_names *n, char *out, size_t size);

#endif
