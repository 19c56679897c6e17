/* version_guard: the last applied change version per (target table, key), kept in a small
 * state table, so a sink applies a change only when it is newer than what it applied before:
 * redeliveries and out-of-order deliveries of older changes are skipped, and a delete leaves
 * a tombstone so a late insert does not bring the row back. */
#ifndef SQLQ_VERSION_GUARD_H
#define SQLQ_VERSION_GUARD_H

#include "buf.h"
#include "db.h"
#include "dialect.h"
#include "result.h"

#include <stdbool.h>
#include <stdint.h>

#define SQLQ_VERSION_GUARD_DEFAULT_TABLE "sqlq_sink_versions"

/* CREATE TABLE IF NOT EXISTS state (target_table, key_hash, version, key_json) with the
 * primary key (target_table, key_hash). key_hash is the hex SHA-256 of the canonical key JSON
 * (sorted keys, compact): fixed size, whatever the key; key_json that JSON (what a repair needs
 * to delete the row: sink_repair.h), added to a table made before it. */
SQLQ_NODISCARD sqlq_result sqlq_version_guard_install(sqlq_db *db, const sqlq_table_name *state,
                                                      sqlq_error *err);

/* The claim statement: parameters (target_table, key_hash, version, key_json); one row affected
 * when the version is newer than the stored one (or none is stored), none when it is not;
 * key_json is kept once given.
 *  - PostgreSQL, SQLite: INSERT INTO s AS cur … ON CONFLICT (…) DO UPDATE SET version =
 *    excluded.version WHERE cur.version < excluded.version
 *  - SQL Server: MERGE … WHEN MATCHED AND cur.version < src.version THEN UPDATE … */
SQLQ_NODISCARD sqlq_result sqlq_version_guard_claim_sql(const sqlq_dialect *d,
                                                        const sqlq_table_name *state, sqlq_buf *out,
                                                        sqlq_error *err);

/* Hex SHA-256 of the key JSON as canonicalised by the caller (65 bytes with the NUL). */
void sqlq_version_guard_key_hash(const char *key_json, char out[65]);

/* Record version for (target, key_hash) when it is newer; *out_newer says whether it was (the
 * caller applies the change only then). Run it in the transaction that applies the change. */
SQLQ_NODISCARD sqlq_result sqlq_version_guard_claim(sqlq_db *db, const sqlq_table_name *state,
                                                    const char *target, const char *key_hash,
                                                    const char *key_json, int64_t version,
                                                    bool *out_newer, sqlq_error *err);

/* The stored version of (target, key_hash); *out_found false when none is stored. */
SQLQ_NODISCARD sqlq_result sqlq_version_guard_stored(sqlq_db *db, const sqlq_table_name *state,
                                                     const char *target, const char *key_hash,
                                                     int64_t *out_version, bool *out_found,
                                                     sqlq_error *err);

/* Forget the stored version of one key (key_hash) or of every key of target (key_hash NULL).
 * *out_rows: rows deleted. */
SQLQ_NODISCARD sqlq_result sqlq_version_guard_reset(sqlq_db *db, const sqlq_table_name *state,
                                                    const char *target, const char *key_hash,
                                                    long long *out_rows, sqlq_error *err);

#endif
