/* sql_sink: `sqlq consume --sql CONN --table T`: applies the bridge's change messages to a
 * target table (insert/update -> upsert on the primary key, delete -> delete), idempotently. */
#ifndef SQLQ_SQL_SINK_H
#define SQLQ_SQL_SINK_H

#include "consumer.h"
#include "db.h"
#include "metrics.h"
#include "result.h"

#include <stddef.h>

/* Accepted bodies (docs/messages.md): a row-format object {"op", "key", "row", ...}, a batch
 * {"changes": [row-format, ...]}, or the Functions shape [{"Operation": 0|1|2, "Item": {...}}].
 * All changes of one message are applied in one transaction. Values follow docs/types.md:
 * numbers, strings, true/false, null, {"$base64": "..."} for binary, ISO dates as strings; they
 * are always bound as parameters. A message the sink cannot trust fails with a reason
 * (consumer/sink_change.h): a defect of the message itself (not JSON, no key, duplicate JSON
 * fields, a row whose key columns disagree with its key, a version that is not an integer or is
 * beyond 2^53, a truncated insert/update) is SQLQ_E_REJECTED and poisoned at once; a change
 * that does not fit the table (a column it lacks, key columns that are not exactly its primary
 * key) is poisoned after the usual attempts. */
typedef struct sqlq_sql_sink sqlq_sql_sink;

/* Connects once to check the table: SQLQ_E_NOT_FOUND when it does not exist, SQLQ_E_INVALID
 * when it has no primary key. With version_table (not NULL or ""), that state table is created
 * if missing (sql/sink/version_guard.h) and a change carrying a "version" is applied only when it is
 * newer than the last one applied for its key: redeliveries and older changes arriving late are
 * skipped, and a delete is remembered so a late insert does not bring the row back. */
SQLQ_NODISCARD sqlq_result sqlq_sql_sink_create(const char *conn, const char *table,
                                                const char *version_table, sqlq_sql_sink **out,
                                                sqlq_error *err);
void sqlq_sql_sink_destroy(sqlq_sql_sink *s);

/* Checks a message body against the table without touching the database. SQLQ_E_REJECTED for a
 * defect of the message, SQLQ_E_INVALID when its keys or columns do not fit the table. (Not
 * used at start: a bad message takes the message path, it never stops the consumer.) */
SQLQ_NODISCARD sqlq_result sqlq_sql_sink_check(const sqlq_sql_sink *s, const char *body, size_t len,
                                               sqlq_error *err);

/* The consumer handler: one database connection per worker. On SQLite, changes are applied one
 * at a time (one writer). */
sqlq_handler sqlq_sql_sink_bind(sqlq_sql_sink *s);

/* Apply one body on a fresh connection of its own (tests, one-off use). */
SQLQ_NODISCARD sqlq_result sqlq_sql_sink_apply_once(sqlq_sql_sink *s, const char *body, size_t len,
                                                    sqlq_error *err);

/* The counter of changes skipped as not newer than the version last applied for their key;
 * each skip is also logged at info level, at most once per SQLQ_SQL_SINK_SKIP_LOG_MS. */
#define SQLQ_METRIC_SINK_SKIPPED "sqlq_sink_changes_skipped_total" /* counter {table} */
#define SQLQ_SQL_SINK_SKIP_LOG_MS 10000
void sqlq_sql_sink_use_metrics(sqlq_sql_sink *s, sqlq_metrics *m);
unsigned long long sqlq_sql_sink_skipped(const sqlq_sql_sink *s);

/* Forget the remembered version of one key (key_json: the key object as the messages carry
 * it, e.g. {"id":1}) or of the whole target table (key_json "all" or NULL), so the next change
 * of those keys applies whatever its version. *out_n: rows forgotten. SQLQ_E_INVALID without
 * the version check or for a malformed key. */
SQLQ_NODISCARD sqlq_result sqlq_sql_sink_reset_versions(sqlq_sql_sink *s, const char *key_json,
                                                        long long *out_n, sqlq_error *err);

/* A database error that no retry can fix (a NOT NULL or CHECK violation, a value that does not
 * fit) on a database of dialect d: the sink reports it as SQLQ_E_REJECTED and the message goes
 * to poison at once. */
bool sqlq_sql_sink_rejects(const sqlq_dialect *d, const sqlq_error *e);

#endif
