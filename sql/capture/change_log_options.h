/* change_log_options: what a change log keeps beyond the key, version and operation when
 * `sqlq setup` asks for it (opt-in, so the default trigger stays as cheap as it is): the
 * changed-column map (--track-columns) and the before image (--before-image). The log
 * triggers (change_log.c, mariadb_change_log.c) write these columns through the SQL pieces
 * below; the poll (capture_sql_image.c) reads them. docs/capture.md, docs/messages.md. */
#ifndef SQLQ_CHANGE_LOG_OPTIONS_H
#define SQLQ_CHANGE_LOG_OPTIONS_H

#include "result.h"
#include "sql_text.h"
#include "table.h"

#include <stdbool.h>

/* The changed-column map: {"column": version at which it last changed}, merged by each
 * update of the key, reset ({}) by an insert; NULL when unknown (a log row written before
 * --track-columns). PostgreSQL jsonb, SQLite text, MariaDB/MySQL JSON (0: the change not yet
 * stamped, whose version is the row's once stamped). */
#define SQLQ_COL_CHANGED "sqlq_changed"
/* Before image: one column per table column, "sqlq_b_<name>" with its type, the row as it was
 * before the key's latest update or delete (NULL after an insert). */
#define SQLQ_COL_BEFORE_PREFIX "sqlq_b_"

typedef struct sqlq_change_log_options {
    bool track_columns; /* the changed-column map */
    bool before_image;  /* the before-image columns */
} sqlq_change_log_options;

/* What an existing log keeps, from its description (log: the log table as described). */
void sqlq_change_log_options_of(const sqlq_table *log, sqlq_change_log_options *out);
/* The before-image column of column `name` is in the log. */
bool sqlq_change_log_options_mirrors(const sqlq_table *log, const char *name);
/* The before-image column name of a column ("sqlq_b_<name>"); false when it does not fit. */
bool sqlq_change_log_options_mirror_name(const char *name, char *out, size_t size);

/* What the log (bare name) of table t keeps now, by its columns. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_options_found(sqlq_db *db, const sqlq_table *t,
                                                         const char *log_table,
                                                         sqlq_change_log_options *out,
                                                         sqlq_error *err);
/* Add the columns `o` asks for that the log (bare name, in sqlq's schema or with its prefix)
 * lacks: ALTER TABLE … ADD. Column names too long for a before-image column are refused. */
SQLQ_NODISCARD sqlq_result sqlq_change_log_options_add_columns(sqlq_db *db, const sqlq_table *t,
                                                               const char *log_table,
                                                               const sqlq_change_log_options *o,
                                                               sqlq_error *err);

/* The pieces of the trigger's upsert of the log row (op 'I', 'U' or 'D'; row: "NEW." or
 * "OLD."; version_sql: the change's version, NULL on MariaDB/MySQL where it is stamped later):
 * ", sqlq_changed, sqlq_b_…" after the column list; ", <values>" after the VALUES; the SET
 * assignments on conflict (PostgreSQL, SQLite: ", a = …" appended after the others;
 * MariaDB/MySQL: "a = …, " written first, before the version is reset; log_name: the log
 * table's bare name, which PostgreSQL needs to name the existing row). */
void sqlq_change_log_options_names(sqlq_sql_text *q, const sqlq_table *t,
                                   const sqlq_change_log_options *o);
void sqlq_change_log_options_values(sqlq_sql_text *q, const sqlq_table *t,
                                    const sqlq_change_log_options *o, char op,
                                    const char *version_sql);
/* Whether those values of op name version_sql (the changed-column map of an update): a
 * trigger that writes the version as an expression must then take it once, in a FROM item. */
bool sqlq_change_log_options_use_version(const sqlq_change_log_options *o, char op);
void sqlq_change_log_options_updates(sqlq_sql_text *q, const sqlq_table *t,
                                     const sqlq_change_log_options *o, char op,
                                     const char *log_name);

#endif
