/* db: one ODBC connection, its dialect, parameterised statements and rows as JSON. */
#ifndef SQLQ_DB_H
#define SQLQ_DB_H

#include "result.h"
#include "stop.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The database's dialect: a table of SQL and capabilities (dialect.h), one per database. */
typedef struct sqlq_dialect sqlq_dialect;

typedef enum {
    SQLQ_PARAM_NULL = 0,
    SQLQ_PARAM_TEXT,  /* UTF-8 text */
    SQLQ_PARAM_INT64,
    SQLQ_PARAM_DOUBLE,
    SQLQ_PARAM_BINARY
} sqlq_param_type;

typedef struct sqlq_param {
    sqlq_param_type type;
    const char *text; /* TEXT (NUL-terminated) or BINARY bytes */
    size_t len;       /* BINARY length */
    int64_t i64;
    double f64;
} sqlq_param;

sqlq_param sqlq_param_text(const char *s); /* NULL s gives a NULL parameter */
sqlq_param sqlq_param_int(int64_t v);
sqlq_param sqlq_param_null(void);
sqlq_param sqlq_param_double(double v);
sqlq_param sqlq_param_binary(const void *bytes, size_t len); /* bytes must outlive the call */

/* Not thread-safe: one connection per thread. */
typedef struct sqlq_db sqlq_db;

/* conn is an ODBC connection string ("Driver={SQLite3};Database=…") or "DSN=name;…".
 * The dialect comes from SQL_DBMS_NAME (sqlq_dialect_find; an unknown database fails). The
 * connection string is registered as a secret source: its PWD= value never reaches a log
 * line. Autocommit is on until sqlq_db_begin. The dialect's session_sql runs once connected
 * (PostgreSQL: TIME ZONE 'UTC', so timestamptz values come out exact). */
SQLQ_NODISCARD sqlq_result sqlq_db_connect(const char *conn, sqlq_db **out, sqlq_error *err);
void sqlq_db_close(sqlq_db *db);
const sqlq_dialect *sqlq_db_dialect(const sqlq_db *db); /* never NULL once connected */
const char *sqlq_db_dbms_name(const sqlq_db *db);
/* The connection string db was opened with (a secret: never log it), for a second connection
 * to the same server (PostgreSQL's replication protocol through libpq). */
const char *sqlq_db_conn_string(const sqlq_db *db);

/* Close and re-open the same connection string (after a transient failure), retrying with
 * back-off until it succeeds, the budget is spent or *stop becomes non-zero. Every connection
 * opened again, here or by sqlq_db_reopen, is logged as event=db_reconnected. */
SQLQ_NODISCARD sqlq_result sqlq_db_reconnect(sqlq_db *db, const sqlq_stop *stop, sqlq_error *err);
/* One attempt of the same: close and re-open now, no retry (the caller backs off). */
SQLQ_NODISCARD sqlq_result sqlq_db_reopen(sqlq_db *db, sqlq_error *err);

/* Errors carry SQLSTATE, native code and driver message in err, with err->transient set by
 * sqlq_classify_sql_transient. SQLQ_E_SQL for every ODBC failure. */
SQLQ_NODISCARD sqlq_result sqlq_db_exec(sqlq_db *db, const char *sql, const sqlq_param *params,
                                        size_t nparams, long long *out_rows_affected,
                                        sqlq_error *err);
/* Run a query and return every row as a JSON object keyed by column name, in an array, with
 * the type mapping of REFERENCE.md §7: NULL → null; BIT/boolean → true/false; integers →
 * number (outside ±2^53 → string); DECIMAL/NUMERIC → string (exact); float → number; text →
 * string (invalid UTF-8 → {"$base64": "…"}); binary → {"$base64": "…"}; date/time/timestamp
 * → ISO 8601 string; GUID → string. */
SQLQ_NODISCARD sqlq_result sqlq_db_query(sqlq_db *db, const char *sql, const sqlq_param *params,
                                         size_t nparams, json_t **out_rows, sqlq_error *err);
/* Stream a query: fn gets each row (borrowed: json_incref to keep it) as sqlq_db_query would
 * build it, one at a time; a result other than SQLQ_OK from fn stops the query and is returned.
 * Rows are fetched one by one with SQLFetch: memory stays flat for any result size as long as
 * the driver does not buffer (psqlODBC UseDeclareFetch=1). */
typedef sqlq_result (*sqlq_db_row_fn)(void *ctx, json_t *row, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_db_query_each(sqlq_db *db, const char *sql,
                                              const sqlq_param *params, size_t nparams,
                                              sqlq_db_row_fn fn, void *ctx, sqlq_error *err);
/* A query whose columns are not all known in advance (`SELECT b.*, r.*`: a name may repeat):
 * *out_columns gets [{"name": …, "type": ODBC SQL_* type}, …] in result-set order (also when
 * no row comes back), *out_rows one array of values per row, in that order, typed as
 * sqlq_db_query types them. */
SQLQ_NODISCARD sqlq_result sqlq_db_query_values(sqlq_db *db, const char *sql,
                                                const sqlq_param *params, size_t nparams,
                                                json_t **out_columns, json_t **out_rows,
                                                sqlq_error *err);
/* While on, every statement this connection runs is prepared once per SQL text (SQLPrepare)
 * and its handle kept for the next execution of the same text (SQLExecute with the new
 * parameters), up to SQLQ_STMT_CACHE_MAX statements: PostgreSQL then keeps the plan instead
 * of parsing and planning the text on every execution. For a fixed set of statements run in a
 * loop (the capture loop's), not for DDL or texts built per call. A kept statement whose
 * execution fails is dropped and prepared again next time. A dialect whose driver describes
 * columns only at prepare (columns_at_prepare) keeps nothing: a kept SELECT * would
 * answer with the old columns after ALTER TABLE. Returns the previous setting. */
bool sqlq_db_keep_prepared(sqlq_db *db, bool on);
/* First column of the first row as int64 (SQLQ_E_NOT_FOUND when there is no row; *out 0 for NULL). */
SQLQ_NODISCARD sqlq_result sqlq_db_query_int(sqlq_db *db, const char *sql, const sqlq_param *params,
                                             size_t nparams, int64_t *out, sqlq_error *err);

/* Transactions. begin turns autocommit off (SQLite: BEGIN IMMEDIATE, taking the write lock,
 * waiting up to the connection's Timeout= for another writer, then a transient BUSY error).
 * After any failed statement or commit inside a transaction, call sqlq_db_rollback: what the
 * driver did with the transaction differs (psqlODBC by default rolls back only the failed
 * statement and goes on; with Protocol=7.4-1 it aborts the whole transaction and the next
 * statement silently runs in a new one; SQLite keeps the transaction open after a BUSY). */
SQLQ_NODISCARD sqlq_result sqlq_db_begin(sqlq_db *db, sqlq_error *err);
SQLQ_NODISCARD sqlq_result sqlq_db_commit(sqlq_db *db, sqlq_error *err);
void sqlq_db_rollback(sqlq_db *db); /* best effort; safe when no transaction is open */

#endif
