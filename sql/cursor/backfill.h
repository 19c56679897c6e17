/* backfill: the current rows of a table in key order, page by page (keyset pagination:
 * WHERE (key) > (last key) ORDER BY key), resumable after a crash from its own checkpoint: the
 * cursor_state row "backfill:<name>", never the checkpoint of a live bridge. Works on any table
 * with a primary key, whatever change source its bridge uses. Publishing is the caller's. */
#ifndef SQLQ_BACKFILL_H
#define SQLQ_BACKFILL_H

#include "cursor_state.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQLQ_BACKFILL_PREFIX "backfill:"
#define SQLQ_BACKFILL_VERSION_COL "__sqlq_version"
#define SQLQ_BACKFILL_FLOOR_COL "__sqlq_floor"

/* Where a backfilled row's version comes from (docs/messages.md, "Versions"): the same version
 * the bridge gives the row's latest change, so backfill and bridge messages of one key compare. */
typedef enum {
    SQLQ_BACKFILL_VERSION_NONE = 0,        /* no change source: 0, outranked by any change */
    SQLQ_BACKFILL_VERSION_CHANGE_LOG,      /* the log's sqlq_version of the key, 0 if none */
    SQLQ_BACKFILL_VERSION_CHANGE_TRACKING, /* CHANGETABLE(VERSION …), 0 if none */
    SQLQ_BACKFILL_VERSION_CURSOR           /* the cursor value, as the cursor source sends it */
} sqlq_backfill_version_source;

const char *sqlq_backfill_version_source_name(sqlq_backfill_version_source v);

typedef struct sqlq_backfill_config {
    const char *name;        /* "default": the state row is bridge_name "backfill:<name>" */
    const char *table;       /* as the user wrote it */
    const char *where;       /* the user's SQL filter, pasted into the query as written; NULL */
    const char *instance_id; /* lease owner; NULL makes host:pid:random */
    int page_size;           /* 500 */
    int lease_s;             /* 60 */
    bool restart;            /* forget an earlier run (finished or not) and start over */
    const char *cursor_column; /* the table's bridge uses the cursor source on this column */
    const char *key_columns;   /* NULL: the change log's key or the primary key (table_key.h) */
} sqlq_backfill_config;

void sqlq_backfill_config_default(sqlq_backfill_config *c);

typedef struct sqlq_backfill_page {
    json_t *keys; /* array of key objects (primary-key column -> value) */
    json_t *rows; /* array of row objects, in the same (key) order */
    json_t *versions; /* array of integers: each row's version (sqlq_backfill_version_source) */
    size_t count; /* 0: every row was read */
    /* Change log and change tracking: the version a row without one of its own carries, as of
     * the page's snapshot (backfill_version.h): above every earlier message of such a key,
     * below every later change. 0 for the cursor source and without a source. */
    int64_t floor;
    sqlq_checkpoint end;
} sqlq_backfill_page;

void sqlq_backfill_page_free(sqlq_backfill_page *p);

typedef struct sqlq_backfill sqlq_backfill;

/* Describe the table, take the lease of this backfill name (SQLQ_E_CONFLICT while another
 * process runs the same backfill), load its checkpoint (or forget it with restart). state_db:
 * where the checkpoint lives (NULL: db). */
SQLQ_NODISCARD sqlq_result sqlq_backfill_open(sqlq_db *db, sqlq_db *state_db,
                                              const sqlq_backfill_config *cfg,
                                              sqlq_backfill **out, sqlq_error *err);
/* Resigns the lease. */
void sqlq_backfill_close(sqlq_backfill *bf);
const sqlq_table *sqlq_backfill_table(const sqlq_backfill *bf);
const char *sqlq_backfill_table_key(const sqlq_backfill *bf); /* canonical: public.orders */
const sqlq_checkpoint *sqlq_backfill_checkpoint(const sqlq_backfill *bf);
sqlq_backfill_version_source sqlq_backfill_version_source_of(const sqlq_backfill *bf);

/* Rows matching the filter (for progress); a full COUNT(*). */
SQLQ_NODISCARD sqlq_result sqlq_backfill_count(sqlq_backfill *bf, int64_t *out, sqlq_error *err);
/* The page after the last committed one. */
SQLQ_NODISCARD sqlq_result sqlq_backfill_next(sqlq_backfill *bf, sqlq_backfill_page *out,
                                              sqlq_error *err);
/* Every row of the page was accepted: move the checkpoint past it (compare-and-set on the
 * lease token; SQLQ_E_LEASE_LOST when another process took this backfill over). */
SQLQ_NODISCARD sqlq_result sqlq_backfill_commit(sqlq_backfill *bf, const sqlq_backfill_page *page,
                                                sqlq_error *err);
/* Extend the lease (a page that takes long to publish). */
SQLQ_NODISCARD sqlq_result sqlq_backfill_renew(sqlq_backfill *bf, sqlq_error *err);
/* Mark the run finished: a later open says so instead of starting again (unless restart). */
SQLQ_NODISCARD sqlq_result sqlq_backfill_finish(sqlq_backfill *bf, sqlq_error *err);

/* The SELECT of one page, exposed for unit tests: cols, then checkpoint forms of the key as
 * __sqlq_v<i>, then version_sql (NULL: 0) AS __sqlq_version; WHERE (user filter) AND
 * (key) > (?, …); ORDER BY key; LIMIT/TOP page_size. */
SQLQ_NODISCARD sqlq_result sqlq_backfill_page_sql(const sqlq_dialect *d, const sqlq_table *t,
                                                  const char *where, const char *version_sql,
                                                  bool after, int page_size, sqlq_buf *out,
                                                  size_t *map, size_t map_cap, size_t *out_nmap,
                                                  sqlq_error *err);

#endif
