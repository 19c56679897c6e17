/* pg_slot: a logical route's publication and replication slot: names, refusals, setup, drop,
 * and the slot's state (retained WAL, lag), over the route's ODBC connection. */
#ifndef SQLQ_PG_SLOT_H
#define SQLQ_PG_SLOT_H

#include "catalog.h"
#include "db.h"
#include "result.h"
#include "setup_hint.h"
#include "table.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Publication sqlq_<base> per table (its log's <base>, catalog.h; hashed when long), in the
 * table's database; slot <publication>_<8 hex digits of the database and the bridge name> per
 * route: slots are the whole server's, so two databases' tables of one name get two slots. */
typedef struct sqlq_pg_slot_names {
    char publication[64];
    char slot[64];
    char setup_args[SQLQ_SETUP_ROUTE_ARGS_MAX]; /* the route's `--table T [--bridge-name B]` */
} sqlq_pg_slot_names;

void sqlq_pg_slot_names_make(const sqlq_catalog_names *n, const char *database,
                             sqlq_pg_slot_names *out);
/* The same in db's current database. */
SQLQ_NODISCARD sqlq_result sqlq_pg_slot_names_find(sqlq_db *db, const sqlq_catalog_names *n,
                                                   sqlq_pg_slot_names *out, sqlq_error *err);

typedef struct sqlq_pg_slot_need {
    bool slot;         /* the slot must exist and be usable (the bridge, config check) */
    bool publication;  /* the publication must exist and hold the table (not setup) */
    bool full_identity;/* the route asks for before or changed: REPLICA IDENTITY FULL */
} sqlq_pg_slot_need;

/* The refusals, before anything is created: wal_level not logical, a role without
 * REPLICATION, a table without a replica identity (its writers' UPDATE and DELETE would fail),
 * a route asking for before/changed without REPLICA IDENTITY FULL, and (as need says) a
 * publication missing or without the table, a slot missing or lost (a retention overrun: the
 * message names `sqlq backfill`). Each is SQLQ_E_UNSUPPORTED with what to do in err.
 * warnings (a JSON array, may be NULL) gets one string per warning: max_slot_wal_keep_size -1,
 * Azure's drop of an unused slot, standbys without failover slots. */
SQLQ_NODISCARD sqlq_result sqlq_pg_slot_check(sqlq_db *db, const sqlq_table *t,
                                              const sqlq_pg_slot_names *n, sqlq_pg_slot_need need,
                                              json_t *warnings, sqlq_error *err);

/* Create what is missing: the publication FOR TABLE t (or add t to it), then the slot
 * (pgoutput). lines (JSON array) gets one line per step for the operator, including how long
 * slot creation waited for running transactions. A role that may not create the publication:
 * SQLQ_E_UNSUPPORTED and the DDL to run in err. A lost slot is never re-created. */
SQLQ_NODISCARD sqlq_result sqlq_pg_slot_setup(sqlq_db *db, const sqlq_table *t,
                                              const sqlq_pg_slot_names *n, json_t *lines,
                                              sqlq_error *err);
/* Drop the slot (refused while a bridge streams from it: SQLQ_E_CONFLICT) and, when no other
 * route's slot of the table is left, the publication. lines as for setup. */
SQLQ_NODISCARD sqlq_result sqlq_pg_slot_drop(sqlq_db *db, const sqlq_pg_slot_names *n,
                                             json_t *lines, sqlq_error *err);

/* Whether the table is in its publication (what setup makes for every route of the table). */
SQLQ_NODISCARD sqlq_result sqlq_pg_slot_installed(sqlq_db *db, const sqlq_table *t,
                                                  const sqlq_pg_slot_names *n, bool *out,
                                                  sqlq_error *err);

/* The route's table as the server has it now: what a running logical route compares with the
 * table it opened on (one dropped, built again under its name, or taken out of the publication
 * streams nothing more). */
typedef struct sqlq_pg_slot_table {
    uint32_t oid;      /* the table's OID now; 0: no table of that name */
    bool publication;  /* the publication exists */
    bool member;       /* it holds a table of that name */
} sqlq_pg_slot_table;

SQLQ_NODISCARD sqlq_result sqlq_pg_slot_table_now(sqlq_db *db, const sqlq_table *t,
                                                  const sqlq_pg_slot_names *n,
                                                  sqlq_pg_slot_table *out, sqlq_error *err);
/* SQLQ_OK while a table of the name is in the publication (opened: its OID when the route
 * opened, to say whether it was built again); otherwise what happened and what to run,
 * SQLQ_E_INVALID with reason capture_source_gone (capture_stop.h). */
SQLQ_NODISCARD sqlq_result sqlq_pg_slot_table_verdict(const sqlq_table *t,
                                                      const sqlq_pg_slot_names *n, uint32_t opened,
                                                      const sqlq_pg_slot_table *now,
                                                      sqlq_error *err);

typedef struct sqlq_pg_slot_state {
    bool exists;
    bool elsewhere;          /* it exists, in another database than db's (never used here) */
    char database[64];       /* the database it belongs to */
    bool active;             /* a session streams from it now */
    int active_pid;
    char wal_status[16];     /* reserved, extended, unreserved, lost ("" before PostgreSQL 13) */
    int64_t retained_bytes;  /* WAL the slot keeps: current LSN - restart_lsn */
    int64_t lag_bytes;       /* current LSN - confirmed_flush_lsn */
    uint64_t confirmed_flush;
} sqlq_pg_slot_state;

SQLQ_NODISCARD sqlq_result sqlq_pg_slot_state_get(sqlq_db *db, const sqlq_pg_slot_names *n,
                                                  sqlq_pg_slot_state *out, sqlq_error *err);

#endif
