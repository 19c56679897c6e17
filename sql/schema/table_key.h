/* table_key: which columns identify a table's rows: its primary key, or the columns of a unique
 * index or constraint named with --key-columns (a table without a primary key).
 *
 * A unique key qualifies when an index or constraint is unique on exactly those columns (in
 * any order; the key then takes the index's order, but a key taken from a change log keeps the
 * log's order, so an index made again over the same columns in another order changes nothing), is neither partial nor on expressions,
 * is valid and not deferrable (PostgreSQL), and every one of its columns is NOT NULL: the
 * change log stores keys in NOT NULL columns and the poll joins the log to the table with =,
 * under which NULL matches nothing (a PostgreSQL 15 NULLS NOT DISTINCT index does not change
 * that, so it is refused too). SQL Server is not supported: change tracking itself needs a
 * primary key. */
#ifndef SQLQ_TABLE_KEY_H
#define SQLQ_TABLE_KEY_H

#include "db.h"
#include "result.h"
#include "table.h"

#include <stddef.h>

/* Make t's key the columns named in key_columns ("a, b"): its primary key when they are
 * exactly the primary key's columns, else the qualifying unique index on exactly them (its
 * name goes to t->key_index). t is unchanged on failure: SQLQ_E_INVALID naming the table, the
 * columns and the unique indexes it has; SQLQ_E_UNSUPPORTED on SQL Server. */
SQLQ_NODISCARD sqlq_result sqlq_table_key_use(sqlq_db *db, sqlq_table *t, const char *key_columns,
                                              sqlq_error *err);
/* The same with the key columns of `other` (a change log, an earlier description), by name;
 * the key keeps other's order even when the index now has its columns in another order. */
SQLQ_NODISCARD sqlq_result sqlq_table_key_use_like(sqlq_db *db, sqlq_table *t,
                                                   const sqlq_table *other, sqlq_error *err);
/* Whether t's key columns are other's (by name, any order). */
bool sqlq_table_key_same(const sqlq_table *t, const sqlq_table *other);
/* SQLQ_OK when t has a key; else SQLQ_E_INVALID: "table T has no primary key; … use
 * --key-columns" with the unique indexes it has. */
SQLQ_NODISCARD sqlq_result sqlq_table_key_require(sqlq_db *db, const sqlq_table *t,
                                                  sqlq_error *err);
/* Describe the table with the key key_columns names (NULL or "": the primary key, required). */
SQLQ_NODISCARD sqlq_result sqlq_table_key_describe(sqlq_db *db, const sqlq_table_name *name,
                                                   const char *key_columns, sqlq_table **out,
                                                   sqlq_error *err);
/* Describe again the table `was` describes, with the same choice of key (its unique index's
 * columns when it had one): a later shape compared with sqlq_table_compare. */
SQLQ_NODISCARD sqlq_result sqlq_table_key_describe_again(sqlq_db *db, const sqlq_table *was,
                                                         sqlq_table **out, sqlq_error *err);
/* Without a primary key: the one qualifying unique key, when there is exactly one (the SQL
 * sink's target table); SQLQ_E_INVALID listing them otherwise. */
SQLQ_NODISCARD sqlq_result sqlq_table_key_use_sole_unique(sqlq_db *db, sqlq_table *t,
                                                          sqlq_error *err);
/* The key's column names as "a,b" (the text --key-columns takes), cut to fit out. */
void sqlq_table_key_names(const sqlq_table *t, char *out, size_t size);
/* Whether the comma-separated names in `names` are exactly t's key columns (any order). */
bool sqlq_table_key_is(const sqlq_table *t, const char *names);

#endif
