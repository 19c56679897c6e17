/* change_source: the seam between capture (capture.h: the algorithm a route runs, with its
 * leases, attempts and advance rule) and one way of finding a table's changes, a source.
 *
 * A source is a table of operations, in the style of curl's `struct Curl_ssl` and PostgreSQL's
 * `WalWriteMethodOps`: capture.c calls them and never asks which database or source it has.
 * Each source keeps its own state behind them (the `void *` its open returns). The sources:
 *
 *   SQLite counter log       sql/sqlite/     triggers write a log, versions from a counter
 *   PostgreSQL trigger log   sql/postgres/   triggers write a log, versions from a sequence,
 *                                            read up to the horizon of the log's open writers
 *   MariaDB stamped log      sql/mariadb/    triggers write unversioned rows the poll stamps
 *   SQL Server change trk.   sql/mssql/      CHANGETABLE(CHANGES …) of the server's tracking
 *   cursor                   sql/cursor/     a monotonic column polled, one checkpoint a table
 *   (PostgreSQL logical      sql/postgres/   a replication slot streamed with pgoutput)
 *
 * Two kinds, one table:
 *  - A *leased* source keeps per-key changes in the database and lets capture.c's shared lease
 *    machinery read them: poll = select + lease in one transaction, release/renew/abandon by
 *    lease token, advance by the rule "everything below the oldest unprocessed change is
 *    done". It fills `leased` (capture_internal.h: the statements and the hooks around them)
 *    and leaves the lease operations below NULL.
 *  - A source with *its own* leases (cursor: one lease a table; logical: changes in memory,
 *    attempts counted in memory, the slot confirmed only past a fully released transaction)
 *    fills open … status below; capture.c then only forwards. Its poll may be fed by a
 *    stream (a reader thread of its own filling a ring that poll drains, and its `signal`
 *    waiting on that ring).
 *
 * Every source fills name, title, kind and what setup needs (install, drop, installed,
 * describe). A database lists its sources in its dialect (`sqlq_dialect.sources`, first the
 * one `--source auto` picks). docs/dialects.md says what a new source implements. */
#ifndef SQLQ_CHANGE_SOURCE_H
#define SQLQ_CHANGE_SOURCE_H

#include "capture.h"
#include "catalog.h"
#include "change_log_options.h"
#include "clock.h"
#include "db.h"
#include "result.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the change signal ------------------------------------------------------------------- */

/* What one wait (or check) on a signal found. */
typedef enum {
    SQLQ_SIGNAL_NONE = 0,    /* nothing yet: the slice ran out */
    SQLQ_SIGNAL_CHANGED,     /* a change was signalled now (a burst may still be committing) */
    SQLQ_SIGNAL_CHANGED_BEFORE /* changes committed unsignalled since the last poll began */
} sqlq_signal_event;

/* A cheap hint that a table changed, so an idle route polls at once instead of at its
 * interval (bridge/wakeup.c keeps the timing: slices, coalescing, stop requests; the source
 * says what to wait on). A hint only: the poll stays the truth. */
typedef struct sqlq_change_signal_ops {
    const char *name;        /* trace lines: "notify", "data_version", "stream" */
    const char *name_before; /* the same for SQLQ_SIGNAL_CHANGED_BEFORE ("arm"), or NULL */
    uint64_t slice_ms;       /* the longest single wait: a stop request is seen within it */
    uint64_t coalesce_ms;    /* after a hint, wait this long so a burst becomes one poll; 0 for
                              * a source handed whole transactions */
    /* The signal of a route whose capture cap is open on db (db_connection: the connection
     * string, for a signal with a connection of its own). *out NULL: no signal after all. */
    sqlq_result (*open)(sqlq_capture *cap, const char *db_connection, sqlq_db *db, void **out,
                        sqlq_error *err);
    void (*close)(void *sig);
    /* Wait up to ms for a hint. covered: sqlq_capture_covered_version of the last poll. db is
     * the route's connection (a probe may run on it; nobody else uses it meanwhile). A signal
     * that cannot block sleeps on clock (its sleep ends at once on a stop request). */
    sqlq_signal_event (*wait)(void *sig, sqlq_db *db, const sqlq_clock *clock, uint64_t ms,
                              int64_t covered);
    /* Without waiting: a hint since the last wait or check (consumed). */
    sqlq_signal_event (*check)(void *sig, sqlq_db *db, int64_t covered);
    /* A short batch goes on the queue: start, without waiting, what check compares with the
     * batch's covered version (NULL: nothing to start). */
    void (*peek)(void *sig, int64_t covered);
    /* After a hint and its coalescing window: take along, without waiting, what the rest of
     * the burst signalled (the poll that follows covers it). NULL: nothing to take. */
    void (*consume)(void *sig, int64_t covered);
} sqlq_change_signal_ops;

/* ---- setup ------------------------------------------------------------------------------- */

/* What `sqlq setup` asks of a source for one table (capture.h: sqlq_capture_install,
 * sqlq_capture_uninstall). */
typedef struct sqlq_source_setup {
    const sqlq_capture_config *cfg;  /* table, key_columns, bridge_name (drop: only that
                                      * bridge's part), source, cursor_column, … */
    sqlq_change_log_options options; /* --track-columns, --before-image */
    int retention_days;              /* change tracking's retention when setup turns it on */
    /* Out: lines for the operator, printed as they are (strings); the name errors are reported
     * under (the table's canonical key once it is found, else ""); and whether a failure is
     * the operator's input (setup exits 2). */
    json_t *lines;
    char name[SQLQ_TABLE_KEY_MAX];
    bool usage;
} sqlq_source_setup;

/* Add one line to s->lines (printf-style); false when out of memory. */
bool sqlq_source_setup_say(sqlq_source_setup *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the source -------------------------------------------------------------------------- */

struct sqlq_capture_leased; /* capture_internal.h: the shared lease machinery's hooks */

typedef struct sqlq_change_source_ops {
    const char *name;  /* "change_log", "change_tracking", "cursor", "logical": --source, logs */
    const char *title; /* for people: "change log", "change tracking", "cursor" */
    sqlq_source_kind kind;

    /* ---- a source with its own leases (NULL for a leased source) */
    /* Open on db for cfg (checks first; nothing is created when one fails). db outlives it. */
    sqlq_result (*open)(sqlq_db *db, const sqlq_capture_config *cfg, void **out_src,
                        sqlq_error *err);
    void (*close)(void *src);
    const sqlq_table *(*table)(const void *src);
    /* capture.h's contracts, each for this source (sqlq_capture_poll, _release, …). poll
     * resumes where the source's durable position says (its checkpoint, the slot's confirmed
     * position). renew's out_lost and release's out_lost may be NULL. */
    sqlq_result (*poll)(void *src, sqlq_change_batch *out, sqlq_error *err);
    sqlq_result (*release)(void *src, const sqlq_change *changes, size_t n, size_t *out_lost,
                           sqlq_error *err);
    sqlq_result (*renew)(void *src, const sqlq_change *changes, size_t n, size_t *out_lost,
                         sqlq_error *err);
    /* true: the leases live in this process until released or abandoned and never expire
     * (renew has nothing to extend), so a route keeps no copy of its changes for renewal. */
    bool leases_never_expire;
    sqlq_result (*abandon)(void *src, const sqlq_change *changes, size_t n, bool count_attempt,
                           sqlq_error *err);
    sqlq_result (*advance)(void *src, int64_t *out_version, sqlq_error *err);
    /* pending, leased and owners; held_back and why (writers) where the source knows them. */
    sqlq_result (*status)(void *src, sqlq_capture_status *out, sqlq_error *err);

    /* ---- a leased source: capture.c's shared machinery over these (NULL otherwise) */
    const struct sqlq_capture_leased *leased;

    /* ---- both */
    /* Everything open verifies, creating and changing nothing: `sqlq config check`. warnings
     * (may be NULL) gets strings worth saying that do not refuse. */
    sqlq_result (*check)(sqlq_db *db, const sqlq_capture_config *cfg, json_t *warnings,
                         sqlq_error *err);
    /* `sqlq setup`: install (idempotently) what the source needs for one table, or remove it
     * with every bridge's state (s->cfg->bridge_name set: only that bridge's state). Lines for
     * the operator in s->lines; s->usage when a failure is the operator's input. */
    sqlq_result (*install)(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err);
    sqlq_result (*drop)(sqlq_db *db, sqlq_source_setup *s, sqlq_error *err);
    /* Why the source cannot keep before images (setup refuses --before-image), NULL: it can. */
    const char *no_before_image;
    /* Whether what install makes is there (NULL: nothing to install). */
    sqlq_result (*installed)(sqlq_db *db, const sqlq_table *t, bool *out, sqlq_error *err);
    /* The objects install makes for a table, for people ("table sqlq.log_t, triggers …"). */
    void (*describe)(const sqlq_dialect *d, const sqlq_catalog_names *n, char *out, size_t size);
    /* `sqlq backfill` (backfill_version.h): select-list expressions over the table's row (the
     * table named as it is): *out_floor F, a version that outranks every earlier message of a
     * key and is outranked by every later change, and *out_version, the source's version of
     * the row's key, else F; *out_param: each holds one "?" for F's value (backfill_floor).
     * Both NULL when the source is not set up on the table. NULL: the source gives none. */
    sqlq_result (*backfill_version)(sqlq_db *db, const sqlq_catalog_names *n, const sqlq_table *t,
                                    char **out_floor, char **out_version, bool *out_param,
                                    sqlq_error *err);
    /* Before each page whose F has a parameter: its value; *out_txn when it opened the page's
     * transaction (it ends after the page's statement). */
    sqlq_result (*backfill_floor)(sqlq_db *db, const sqlq_catalog_names *n, int64_t *out_floor,
                                  bool *out_txn, sqlq_error *err);
    /* The change signal (NULL: the route polls at its interval). */
    const sqlq_change_signal_ops *signal;
} sqlq_change_source_ops;

/* The source of kind `kind` among the dialect's (SQLQ_SOURCE_AUTO: its first); NULL when it has
 * none of that kind. */
const sqlq_change_source_ops *sqlq_change_source_find(const sqlq_dialect *d, sqlq_source_kind kind);
/* The title of the first dialect that has a source of `kind` ("SQL Server" for change
 * tracking), and that source, for messages; NULL when none has. */
const char *sqlq_change_source_home(sqlq_source_kind kind,
                                    const sqlq_change_source_ops **out_source);

/* The source and its state behind an open capture (for a signal's open, say). */
const sqlq_change_source_ops *sqlq_capture_source(const sqlq_capture *cap);
void *sqlq_capture_source_state(const sqlq_capture *cap);

/* ---- the signal, as the bridge uses it ---------------------------------------------------- */

typedef struct sqlq_change_signal sqlq_change_signal;

/* The signal of cap's source, open on db; *out NULL when the source has none (poll at the
 * interval). */
SQLQ_NODISCARD sqlq_result sqlq_change_signal_open(sqlq_capture *cap, const char *db_connection,
                                                   sqlq_db *db, sqlq_change_signal **out,
                                                   sqlq_error *err);
void sqlq_change_signal_close(sqlq_change_signal *s);
const sqlq_change_signal_ops *sqlq_change_signal_kind(const sqlq_change_signal *s);
sqlq_signal_event sqlq_change_signal_wait(sqlq_change_signal *s, sqlq_db *db,
                                          const sqlq_clock *clock, uint64_t ms, int64_t covered);
sqlq_signal_event sqlq_change_signal_check(sqlq_change_signal *s, sqlq_db *db, int64_t covered);
void sqlq_change_signal_peek(sqlq_change_signal *s, int64_t covered);
void sqlq_change_signal_consume(sqlq_change_signal *s, int64_t covered);

#endif
