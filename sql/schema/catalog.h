/* catalog: names and shared tables of sqlq's own objects (registry, state, change logs,
 * leases), derived safely from user table names, per dialect.
 *
 * Layout. Databases with schemas (the dialect's `schemas`; on MariaDB/MySQL a schema is a
 * database): schema sqlq with tables "tables" (the registry), "state",
 * the lease token source (the sequence "lease_token", or the counter table the dialect's
 * catalog_token_object names), one "log_<base>" per watched table and one "leases_<hash12>" per
 * (bridge, table). SQLite has no schemas: the same objects carry the prefix sqlq_
 * (sqlq_tables, sqlq_state, sqlq_counter, sqlq_log_<base>, sqlq_leases_<hash12>).
 * <base> is the table name when it is short and plain (lowercase letters, digits, _; public
 * schema on PostgreSQL) and does not itself end in _ and 12 hex digits, otherwise a sanitised
 * prefix plus 12 hex digits of SHA-256 of the canonical table key, so that no two tables get
 * one <base>. Every derived object is recorded in the registry, and a change log registered to
 * one table is never installed, dropped or read for another (sqlq_catalog_log_check). */
#ifndef SQLQ_CATALOG_H
#define SQLQ_CATALOG_H

#include "db.h"
#include "dialect.h"
#include "result.h"
#include "sql_text.h"
#include "table.h"

#include <stdbool.h>

/* Columns sqlq adds beside the key columns; a user key column may not use these names. */
#define SQLQ_COL_VERSION "sqlq_version"
#define SQLQ_COL_OP "sqlq_op"
#define SQLQ_COL_ATTEMPTS "sqlq_attempts"
#define SQLQ_COL_EXPIRES "sqlq_expires_ms"
#define SQLQ_COL_OWNER "sqlq_owner"
#define SQLQ_COL_TOKEN "sqlq_token"
#define SQLQ_COL_SINCE "sqlq_since" /* change log: version that created the key's current row */

#define SQLQ_TABLE_KEY_MAX 1100
#define SQLQ_BRIDGE_NAME_MAX 128

typedef struct sqlq_catalog_names {
    const sqlq_dialect *dialect;
    sqlq_table_name table;              /* canonical user table */
    char table_key[SQLQ_TABLE_KEY_MAX]; /* canonical text in state/registry: public.orders */
    char log_table[64];                 /* bare: log_<base> (qualify with sqlq_catalog_object) */
    char log_function[64];              /* PostgreSQL trigger function: capture_<base> */
    char trigger[64];                   /* PostgreSQL: sqlq_capture; SQLite: prefix of 4 triggers */
    char bridge[SQLQ_BRIDGE_NAME_MAX + 1];
    char leases_table[64];              /* bare: leases_<hash12>; "" without a bridge */
    char lock_key[SQLQ_TABLE_KEY_MAX + SQLQ_BRIDGE_NAME_MAX + 8]; /* sqlq:<bridge>:<table_key> */
    char lock_hash[32];                 /* sqlq:<hash12> (SQL Server app-lock resource) */
} sqlq_catalog_names;

/* Pure: derive every name from a canonical table (and bridge, may be NULL). */
SQLQ_NODISCARD sqlq_result sqlq_catalog_names_make(const sqlq_dialect *d, const sqlq_table_name *t,
                                                   const char *bridge, sqlq_catalog_names *out,
                                                   sqlq_error *err);
/* The same for a table in db: a table whose change log an earlier sqlq installed under its
 * plain name although that name ends in _ and 12 hex digits (the registry says so) keeps it, so
 * a deployed log is never renamed under its bridge. What setup, bridges and status use. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_names_find(sqlq_db *db, const sqlq_table_name *t,
                                                   const char *bridge, sqlq_catalog_names *out,
                                                   sqlq_error *err);
/* The change log's name as the registry's object_name holds it: sqlq.log_x / sqlq_log_x. */
void sqlq_catalog_log_display(const sqlq_catalog_names *n, char *out, size_t size);
/* SQLQ_E_CONFLICT, naming both tables and the remedy, when the registry lists n's change log
 * against a table other than n's: two tables would share one log (the changes of one read as
 * the other's). SQLQ_OK when it does not, or there is no registry. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_log_check(sqlq_db *db, const sqlq_catalog_names *n,
                                                  sqlq_error *err);
/* The first table other than table_key that the registry lists against change log `object`
 * (a registry object_name) into out; "" when none. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_log_sharer(sqlq_db *db, const char *object,
                                                   const char *table_key, char *out, size_t size,
                                                   sqlq_error *err);
/* 12 lowercase hex digits of SHA-256(a '\n' b); b may be NULL. */
void sqlq_catalog_hash12(const char *a, const char *b, char out[13]);

/* Append one of our objects by bare name: sqlq."state" / "sqlq_state" / [sqlq].[state]. */
void sqlq_catalog_object(sqlq_sql_text *s, const char *bare);

/* The canonical name of a user table (PostgreSQL: schema and case as in pg_class, resolved
 * like the server resolves `raw` (search_path, folding) when given; SQLite: the name as
 * created; SQL Server: OBJECT_ID). SQLQ_E_NOT_FOUND when it does not exist. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_resolve(sqlq_db *db, const char *raw,
                                                const sqlq_table_name *parsed,
                                                sqlq_table_name *out, sqlq_error *err);
/* Parse, resolve, describe and name in one go (what setup, status and capture open do). */
SQLQ_NODISCARD sqlq_result sqlq_catalog_lookup(sqlq_db *db, const char *table_text,
                                               const char *bridge, sqlq_table **out_table,
                                               sqlq_catalog_names *out_names, sqlq_error *err);
/* The same with the key a command was given (--key-columns: "a,b", table_key.h); NULL or "":
 * the key of the table's change log when it has one (what `sqlq setup` chose, so a bridge
 * started without the flag keeps it), else the key setup recorded for the bridge's route
 * (SQLQ_CATALOG_KEY_KIND), else the primary key. Given columns that differ from an existing
 * change log's key, or from the recorded one, are refused (the messages would name other rows).
 * SQLQ_CATALOG_ANY_KEY: no key needed (removing the table's objects). */
#define SQLQ_CATALOG_ANY_KEY "*"
/* The registry row kind that keeps, for a route whose source has no change log (logical), the
 * key columns its setup was given (object_name "a,b"): they take the change log's place above. */
#define SQLQ_CATALOG_KEY_KIND "key"
SQLQ_NODISCARD sqlq_result sqlq_catalog_lookup_keyed(sqlq_db *db, const char *table_text,
                                                     const char *bridge, const char *key_columns,
                                                     sqlq_table **out_table,
                                                     sqlq_catalog_names *out_names,
                                                     sqlq_error *err);
/* The change log table's name as a table name (schema sqlq, or SQLite's sqlq_ prefix). */
void sqlq_catalog_log_name(const sqlq_catalog_names *n, sqlq_table_name *out);
/* Refuse key columns named like sqlq's own columns. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_check_key(const sqlq_table *t, sqlq_error *err);
/* Column declarations of the key (same types as the user table), malloc'd array of nkey
 * malloc'd strings, for the DDL of log and leases tables. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_key_types(sqlq_db *db, const sqlq_table *t,
                                                  char ***out, sqlq_error *err);
void sqlq_catalog_key_types_free(char **types, size_t n);
/* Append the key column definitions for a log or leases table: "id" integer NOT NULL, …
 * (SQLite: no NOT NULL, since a SQLite primary key may hold NULL and a trigger must never
 * make the user's write fail). */
void sqlq_catalog_key_defs(sqlq_sql_text *s, const sqlq_table *t, char *const *types);
/* Append the key column list: prefix"a", prefix"b" (prefix may be ""). */
void sqlq_catalog_key_list(sqlq_sql_text *s, const sqlq_table *t, const char *prefix);

/* Create (idempotently) schema, registry, state table and version/token sources. Runs its own
 * transaction; call outside one. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_ensure(sqlq_db *db, sqlq_error *err);
/* Serialise sqlq DDL (call inside a transaction; SQLite's BEGIN IMMEDIATE already does). */
SQLQ_NODISCARD sqlq_result sqlq_catalog_ddl_lock(sqlq_db *db, sqlq_error *err);
/* Whether the shared tables exist (without creating them). */
SQLQ_NODISCARD sqlq_result sqlq_catalog_exists(sqlq_db *db, bool *out, sqlq_error *err);
/* Whether one of our objects (bare name) exists. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_object_exists(sqlq_db *db, const char *bare, bool *out,
                                                      sqlq_error *err);
/* Registry rows: kind "log" (bridge ""), "leases", "slot" (a logical route's replication slot)
 * or SQLQ_CATALOG_KEY_KIND. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_register(sqlq_db *db, const char *kind, const char *bridge,
                                                 const char *table_key, const char *object,
                                                 sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_catalog_unregister(sqlq_db *db, const char *kind,
                                                   const char *bridge, const char *table_key,
                                                   sqlq_error *err);
/* Registry rows (kind, bridge_name, table_name, object_name) of one table, or of every table
 * when table_key is NULL, as JSON objects. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_list(sqlq_db *db, const char *table_key, json_t **out,
                                             sqlq_error *err);
/* Registry rows of one table of one kind (and of one bridge, unless bridge is NULL), as
 * sqlq_catalog_list gives them; an empty array when the registry does not exist yet. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_find(sqlq_db *db, const char *table_key, const char *kind,
                                             const char *bridge, json_t **out, sqlq_error *err);
/* Drop the shared objects (and the sqlq schema) when no registry or state row is left.
 * *out_dropped (optional) says whether it did. Runs its own transaction. */
SQLQ_NODISCARD sqlq_result sqlq_catalog_drop_if_unused(sqlq_db *db, bool *out_dropped,
                                                       sqlq_error *err);

/* After `sqlq setup` installed capture for at least one table (never when it refused them
 * all): the database's warnings about this session (a role whose name resolves into sqlq's
 * schema, say), logged. */
void sqlq_catalog_setup_warn(sqlq_db *db);

#endif
