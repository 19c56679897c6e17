/* change_log_internal: what the change log's files share: change_log.c (the log table and
 * the commands) and change_log_options.c (the opt-in columns) with each database's triggers
 * (sql/<database>/), which they reach through that database's sqlq_change_log_ops. Private to
 * sql/. */
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

typedef struct sqlq_change_log_ops sqlq_change_log_ops;

typedef struct sqlq_log_ctx {
    sqlq_db *db;
    const sqlq_change_log_ops *ops; /* the database's triggers */
    const sqlq_table *t;
    sqlq_catalog_names names;
    const char *version_from; /* PostgreSQL: the FROM item that takes the version; NULL: VALUES */
    sqlq_change_log_options opts; /* what the log keeps beyond the key (change_log_options.h) */
} sqlq_log_ctx;

/* How one database's triggers write the opt-in columns (change_log_options.h): the pieces
 * change_log_options.c assembles. */
typedef struct sqlq_change_log_options_sql {
    const char *changed_decl; /* the map column's declaration ("jsonb NULL") */
    /* After "ALTER TABLE <log>": retype a before-image column; NULL: never needed (types that
     * are affinities: a copy of any value fits any column). */
    void (*retype)(sqlq_sql_text *q, const char *name, const char *type);
    /* OLD.c differs from NEW.c, NULL-safe. */
    void (*differs)(sqlq_sql_text *q, const sqlq_column *c);
    /* The map of one update: merge_fn (NULL: a chain of ||) over object_fn entries from empty. */
    const char *merge_fn, *object_fn, *empty;
    /* On conflict: the existing row's map merged with this update's (unknown stays unknown). */
    void (*merge)(sqlq_sql_text *q, const sqlq_table *t, const char *log_name);
    /* Upserts name the new row as VALUES(col) in an ON DUPLICATE KEY UPDATE list written first,
     * not excluded.col after the others. */
    bool on_duplicate_key;
    /* What goes wrong while the opt-in triggers name columns a later ALTER TABLE changed, for
     * setup's warning ("writes that reach a dropped column fail in the trigger"). */
    const char *stale_triggers;
} sqlq_change_log_options_sql;

/* One database's change log: its triggers, and what the shared log table code must know of
 * them. */
struct sqlq_change_log_ops {
    /* Inside setup's transaction, before the log table: lock what the triggers' writers lock
     * first (NULL: nothing). */
    sqlq_result (*lock_table)(const sqlq_log_ctx *c, sqlq_error *err);
    /* Create or replace the triggers (and what they use); the log table exists. */
    sqlq_result (*install)(const sqlq_log_ctx *c, sqlq_error *err);
    /* Drop the triggers; own_only: only those on c's table (the log is another's too), else
     * also what they use (the log table itself goes in change_log.c). */
    sqlq_result (*drop)(const sqlq_log_ctx *c, bool catalog, bool own_only, sqlq_error *err);
    /* The triggers are there (the log table is). */
    sqlq_result (*installed)(const sqlq_log_ctx *c, bool *out, sqlq_error *err);
    /* An 'I' row's since is left NULL (its version is a read: one per row fewer; a later
     * change of the key stores it), else it is the row's version. */
    bool born_since_null;
    /* An index of an earlier sqlq on (version) alone may exist (replaced by setup). */
    bool legacy_index;
    const sqlq_change_log_options_sql *options;
    /* A backfill's floor F over the log (backfill_version.h), into q; *param: one "?" in it. */
    void (*backfill_floor_sql)(sqlq_sql_text *q, const sqlq_catalog_names *n, bool *param);
};

/* The change log of d's databases; NULL when d keeps none. */
const sqlq_change_log_ops *sqlq_change_log_ops_of(const sqlq_dialect *d);

/* INSERT … ON CONFLICT DO UPDATE of the key's log row (change_log.c). */
void sqlq_change_log_upsert(sqlq_sql_text *q, const sqlq_log_ctx *c, const char *row, char op,
                            const char *version_sql);
/* old key IS new key, column by column (NULL-safe). */
void sqlq_change_log_same_key(sqlq_sql_text *q, const sqlq_log_ctx *c);
/* Takes q's text and runs it. */
sqlq_result sqlq_change_log_exec(sqlq_db *db, sqlq_sql_text *q, sqlq_error *err);

/* The members every change log source shares (change_source.h): its name, setup (the log and
 * its triggers, with the lines `sqlq setup` prints), and its version for backfills. */
#define SQLQ_CHANGE_LOG_SOURCE                                                                     \
    .name = "change_log", .title = "change log", .kind = SQLQ_SOURCE_CHANGE_LOG,                   \
    .install = sqlq_change_log_setup_install, .drop = sqlq_change_log_setup_drop,                  \
    .installed = sqlq_change_log_installed, .backfill_version = sqlq_change_log_backfill_version
/* What a trigger does when a column it names was dropped or retyped (stale_triggers). */
#define SQLQ_CHANGE_LOG_TRIGGER_FAILS                                                              \
    "writes that reach a dropped or renamed column, or a value the copy's old type cannot "       \
    "hold, fail in the trigger"
/* What capture says is gone when a log's triggers are (capture_source_gone). */
#define SQLQ_CHANGE_LOG_OBJECTS_GONE                                                               \
    "sqlq's capture triggers on it are gone or disabled (the table was created again?)"

struct sqlq_source_setup;
sqlq_result sqlq_change_log_setup_install(sqlq_db *db, struct sqlq_source_setup *s,
                                          sqlq_error *err);
sqlq_result sqlq_change_log_setup_drop(sqlq_db *db, struct sqlq_source_setup *s, sqlq_error *err);

#endif
