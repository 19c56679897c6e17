/*
 * db: one ODBC connection.
 *
 * Parameter binding (verified against the drivers installed here, see tests/integration/
 * test_sql_db.c):
 *  - TEXT   SQL_C_CHAR / SQL_VARCHAR with the byte length. psqlODBC 13 sends such a parameter
 *           untyped ("unknown", pg_typeof($1) = unknown), so PostgreSQL infers its type from
 *           the context: text compares correctly with integer, bigint, numeric and text
 *           columns. Only where no context exists (SELECT ?, CASE WHEN ? IS NULL …) must the
 *           SQL cast it (CAST(? AS text)). sqliteodbc binds it with sqlite3_bind_text, and
 *           SQLite's column affinity converts it when compared with an INTEGER column.
 *           SQL Server: SQL_C_WCHAR / SQL_WVARCHAR (UTF-16), because the narrow calls of its
 *           drivers convert through the client code page.
 *  - INT64  SQL_C_SBIGINT / SQL_BIGINT. psqlODBC sends this untyped as well (as its decimal
 *           text), so it also compares with text columns; sqliteodbc binds sqlite3_bind_int64.
 *  - DOUBLE SQL_C_DOUBLE / SQL_DOUBLE: psqlODBC sends float8 (typed: compare it with text only
 *           through a cast).
 *  - BINARY SQL_C_BINARY / SQL_VARBINARY: bytea in PostgreSQL (not SQL_LONGVARBINARY, which
 *           psqlODBC may map to large objects), a blob in SQLite.
 *  - NULL   SQL_C_CHAR / SQL_VARCHAR with SQL_NULL_DATA.
 *
 * Results are read row by row with SQLFetch + SQLGetData; whether the driver buffers the whole
 * result is the connection string's choice (psqlODBC UseDeclareFetch=1;Fetch=N; sqliteodbc
 * steps without buffering only with StepAPI=1 for statements without parameters outside a
 * transaction).
 */
#include "db.h"

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "conn_string.h"
#include "diag.h"
#include "dialect.h"
#include "json_int.h"
#include "log.h"
#include "row_json.h"
#include "stmt_cache.h"
#include "wtext.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sql.h>
#include <sqlext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sqlq_db {
    SQLHENV env;
    SQLHDBC dbc;
    char *conn;
    char **secrets; /* sqlq_conn_string_secrets, NULL-terminated: redacted from every error message */
    const sqlq_dialect *dialect;
    char dbms_name[64];
    bool connected;
    bool in_tx;
    bool keep; /* sqlq_db_keep_prepared: statements are prepared once and kept in cache */
    sqlq_stmt_cache cache;
};

const char *sqlq_db_conn_string(const sqlq_db *db)
{
    return db ? db->conn : NULL;
}

sqlq_param sqlq_param_text(const char *s)
{
    sqlq_param p = {.type = s ? SQLQ_PARAM_TEXT : SQLQ_PARAM_NULL, .text = s};
    return p;
}

sqlq_param sqlq_param_int(int64_t v)
{
    sqlq_param p = {.type = SQLQ_PARAM_INT64, .i64 = v};
    return p;
}

sqlq_param sqlq_param_null(void)
{
    sqlq_param p = {.type = SQLQ_PARAM_NULL};
    return p;
}

sqlq_param sqlq_param_double(double v)
{
    sqlq_param p = {.type = SQLQ_PARAM_DOUBLE, .f64 = v};
    return p;
}

sqlq_param sqlq_param_binary(const void *bytes, size_t len)
{
    sqlq_param p = {.type = SQLQ_PARAM_BINARY, .text = bytes, .len = len};
    return p;
}

/* ---- connect ------------------------------------------------------------------------------ */

static pthread_mutex_t connect_lock = PTHREAD_MUTEX_INITIALIZER; /* see driver_connect */

static void db_disconnect(sqlq_db *db)
{
    sqlq_stmt_cache_clear(&db->cache); /* the handles belong to this connection */
    pthread_mutex_lock(&connect_lock);
    if (db->dbc) {
        if (db->connected)
            SQLDisconnect(db->dbc);
        SQLFreeHandle(SQL_HANDLE_DBC, db->dbc);
    }
    if (db->env)
        SQLFreeHandle(SQL_HANDLE_ENV, db->env);
    pthread_mutex_unlock(&connect_lock);
    db->dbc = NULL;
    db->env = NULL;
    db->connected = false;
    db->in_tx = false;
}

static sqlq_result detect_dialect(sqlq_db *db, sqlq_error *err)
{
    SQLSMALLINT len = 0;
    SQLRETURN rc =
        SQLGetInfo(db->dbc, SQL_DBMS_NAME, db->dbms_name, (SQLSMALLINT)sizeof(db->dbms_name), &len);
    if (!SQL_SUCCEEDED(rc))
        return sqlq_diag_set(err, SQL_HANDLE_DBC, db->dbc, "SQLGetInfo(SQL_DBMS_NAME)",
                             db->secrets);
    db->dialect = sqlq_dialect_find(db->dbms_name);
    if (!db->dialect) {
        char titles[256];
        sqlq_dialect_titles(titles, sizeof(titles));
        return sqlq_error_set(err, SQLQ_E_UNSUPPORTED, false,
                              "database %s is not supported (%s are)", db->dbms_name, titles);
    }
    return SQLQ_OK;
}

/* The dialect's session set-up, once per connection (PostgreSQL: TIME ZONE 'UTC', see
 * pg_dialect.c). */
static sqlq_result session_setup(sqlq_db *db, sqlq_error *err)
{
    if (!db->dialect->session_sql)
        return SQLQ_OK;
    SQLHSTMT h = NULL;
    if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_STMT, db->dbc, &h)))
        return sqlq_diag_set(err, SQL_HANDLE_DBC, db->dbc, "allocate statement", db->secrets);
    sqlq_result r = SQLQ_OK;
    for (const char *const *s = db->dialect->session_sql; *s && r == SQLQ_OK; s++) {
        SQLRETURN rc = SQLExecDirect(h, (SQLCHAR *)(uintptr_t)*s, SQL_NTS);
        if (!SQL_SUCCEEDED(rc))
            r = sqlq_diag_set(err, SQL_HANDLE_STMT, h, "session setup", db->secrets);
        SQLFreeStmt(h, SQL_CLOSE);
    }
    SQLFreeHandle(SQL_HANDLE_STMT, h);
    return r;
}

/* Connection handles, the driver's connect and disconnect: one thread at a time in the
 * process (connect_lock, above): they are not thread-safe in the stack below us. psqlODBC's connect calls setlocale(), whose returned name
 * the next call frees, and unixODBC's handle allocation and connect format into shared state
 * (ThreadSanitizer: two `sqlq consume --sql` workers, and two bridge routes, connecting at
 * once). Connects are rare (start, reconnect); a connect that hangs until its timeout holds
 * the others back that long. */
static sqlq_result driver_connect(sqlq_db *db, sqlq_error *err)
{
    if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &db->env)))
        return sqlq_error_set(err, SQLQ_E_SQL, false, "cannot allocate an ODBC environment");
    SQLSetEnvAttr(db->env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER)SQL_OV_ODBC3, 0);
    if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_DBC, db->env, &db->dbc)))
        return sqlq_diag_set(err, SQL_HANDLE_ENV, db->env, "allocate connection", NULL);
    SQLRETURN rc = SQLDriverConnect(db->dbc, NULL, (SQLCHAR *)db->conn, SQL_NTS, NULL, 0, NULL,
                                    SQL_DRIVER_NOPROMPT);
    if (!SQL_SUCCEEDED(rc))
        return sqlq_diag_set(err, SQL_HANDLE_DBC, db->dbc, "connect", db->secrets);
    return SQLQ_OK;
}

static sqlq_result db_open(sqlq_db *db, sqlq_error *err)
{
    pthread_mutex_lock(&connect_lock);
    sqlq_result r = driver_connect(db, err);
    pthread_mutex_unlock(&connect_lock);
    if (r != SQLQ_OK) {
        db_disconnect(db);
        return r;
    }
    db->connected = true;
    r = detect_dialect(db, err);
    if (r == SQLQ_OK)
        r = session_setup(db, err);
    if (r != SQLQ_OK) {
        db_disconnect(db);
        return r;
    }
    return SQLQ_OK;
}

sqlq_result sqlq_db_connect(const char *conn, sqlq_db **out, sqlq_error *err)
{
    *out = NULL;
    if (!conn || !*conn)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "empty database connection string");
    sqlq_result r = sqlq_conn_string_check(conn, err); /* before any driver reads it */
    if (r != SQLQ_OK)
        return r;
    sqlq_db *db = calloc(1, sizeof(*db));
    if (!db || !(db->conn = strdup(conn))) {
        free(db);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    db->secrets = sqlq_conn_string_secrets(conn);
    if (!db->secrets) {
        sqlq_db_close(db);
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    }
    for (size_t i = 0; db->secrets && db->secrets[i]; i++)
        sqlq_log_add_secret(db->secrets[i]);
    r = db_open(db, err);
    if (r != SQLQ_OK) {
        sqlq_db_close(db);
        return r;
    }
    SQLQ_DEBUG("db_connected", "dbms=\"%s\"", db->dbms_name);
    *out = db;
    return SQLQ_OK;
}

void sqlq_db_close(sqlq_db *db)
{
    if (!db)
        return;
    if (db->in_tx)
        sqlq_db_rollback(db);
    db_disconnect(db);
    free(db->conn);
    sqlq_conn_string_list_free(db->secrets);
    free(db);
}

const sqlq_dialect *sqlq_db_dialect(const sqlq_db *db)
{
    return db->dialect;
}

const char *sqlq_db_dbms_name(const sqlq_db *db)
{
    return db->dbms_name;
}

/* The one place a connection opened again is logged: every reconnect path comes through here. */
static sqlq_result reopen(sqlq_db *db, unsigned attempt, sqlq_error *err)
{
    db_disconnect(db);
    sqlq_result r = db_open(db, err);
    if (r == SQLQ_OK)
        SQLQ_INFO("db_reconnected", "dbms=\"%s\" attempts=%u", db->dbms_name, attempt);
    return r;
}

sqlq_result sqlq_db_reopen(sqlq_db *db, sqlq_error *err)
{
    return reopen(db, 1, err);
}

sqlq_result sqlq_db_reconnect(sqlq_db *db, const sqlq_stop *stop, sqlq_error *err)
{
    sqlq_clock clock = sqlq_clock_system(stop);
    sqlq_backoff_policy policy = sqlq_backoff_policy_default();
    sqlq_backoff backoff;
    sqlq_backoff_init(&backoff, &policy, &clock);
    for (unsigned attempt = 1;; attempt++) {
        if (stop && *stop)
            return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "reconnect cancelled");
        sqlq_error e;
        sqlq_error_clear(&e);
        sqlq_result r = reopen(db, attempt, &e);
        if (r == SQLQ_OK)
            return SQLQ_OK;
        uint64_t delay = 0;
        if (!e.transient || !sqlq_backoff_next(&backoff, 0, &delay)) {
            if (err && err->code == SQLQ_OK)
                *err = e;
            return r;
        }
        SQLQ_WARN("db_reconnect_retry", "attempt=%u delay_ms=%llu sqlstate=%s err=\"%s\"", attempt,
                  (unsigned long long)delay, e.sqlstate, e.message);
        if (!sqlq_clock_sleep_ms(&clock, delay))
            return sqlq_error_set(err, SQLQ_E_CANCELLED, false, "reconnect cancelled");
    }
}

/* ---- statements --------------------------------------------------------------------------- */

/* An executed statement and the parameter buffers it may still point into. */
typedef struct db_stmt {
    SQLHSTMT h;
    SQLLEN *ind;
    void **owned;
    size_t nparams;
    bool kept; /* h belongs to the connection's cache: closed, not freed */
} db_stmt;

static void stmt_free(db_stmt *s)
{
    if (s->h && s->kept) {
        SQLFreeStmt(s->h, SQL_CLOSE);
        SQLFreeStmt(s->h, SQL_RESET_PARAMS); /* the next execution binds its own buffers */
    } else if (s->h) {
        SQLFreeHandle(SQL_HANDLE_STMT, s->h); /* closes an open cursor too */
    }
    for (size_t i = 0; s->owned && i < s->nparams; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s->ind);
    memset(s, 0, sizeof(*s));
}

static SQLPOINTER unconst(const void *p)
{
    return (SQLPOINTER)(uintptr_t)p; /* ODBC takes input buffers as non-const pointers */
}

static SQLRETURN bind_text(sqlq_db *db, db_stmt *s, SQLUSMALLINT num, size_t i, const char *text,
                           sqlq_error *err, bool *invalid)
{
    size_t len = strlen(text);
    if (!db->dialect->wide_text) {
        s->ind[i] = (SQLLEN)len;
        return SQLBindParameter(s->h, num, SQL_PARAM_INPUT, SQL_C_CHAR, SQL_VARCHAR, len ? len : 1,
                                0, unconst(text), (SQLLEN)len, &s->ind[i]);
    }
    uint16_t *w = NULL;
    size_t units = 0;
    if (sqlq_wtext_from_utf8(text, len, &w, &units) != SQLQ_OK) {
        *invalid = true;
        sqlq_error_set(err, SQLQ_E_INVALID, false, "parameter %u is not valid UTF-8", num);
        return SQL_ERROR;
    }
    s->owned[i] = w;
    s->ind[i] = (SQLLEN)(units * sizeof(uint16_t));
    return SQLBindParameter(s->h, num, SQL_PARAM_INPUT, SQL_C_WCHAR,
                            units > 4000 ? SQL_WLONGVARCHAR : SQL_WVARCHAR, units ? units : 1, 0, w,
                            s->ind[i], &s->ind[i]);
}

static sqlq_result bind_params(sqlq_db *db, db_stmt *s, const sqlq_param *params, size_t n,
                               sqlq_error *err)
{
    if (n == 0)
        return SQLQ_OK;
    if (n > 32767 || !(s->ind = calloc(n, sizeof(SQLLEN))) ||
        !(s->owned = calloc(n, sizeof(void *))))
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "cannot bind %zu parameters", n);
    s->nparams = n;
    for (size_t i = 0; i < n; i++) {
        const sqlq_param *p = &params[i];
        SQLUSMALLINT num = (SQLUSMALLINT)(i + 1);
        SQLRETURN rc;
        bool invalid = false;
        if (p->type == SQLQ_PARAM_TEXT && p->text) {
            rc = bind_text(db, s, num, i, p->text, err, &invalid);
        } else if (p->type == SQLQ_PARAM_INT64) {
            rc = SQLBindParameter(s->h, num, SQL_PARAM_INPUT, SQL_C_SBIGINT, SQL_BIGINT, 0, 0,
                                  unconst(&p->i64), 0, &s->ind[i]);
        } else if (p->type == SQLQ_PARAM_DOUBLE) {
            rc = SQLBindParameter(s->h, num, SQL_PARAM_INPUT, SQL_C_DOUBLE, SQL_DOUBLE, 15, 0,
                                  unconst(&p->f64), 0, &s->ind[i]);
        } else if (p->type == SQLQ_PARAM_BINARY && (p->text || p->len == 0)) {
            s->ind[i] = (SQLLEN)p->len;
            rc = SQLBindParameter(s->h, num, SQL_PARAM_INPUT, SQL_C_BINARY,
                                  db->dialect->long_binary_over &&
                                          p->len > db->dialect->long_binary_over
                                      ? SQL_LONGVARBINARY
                                      : SQL_VARBINARY,
                                  p->len ? p->len : 1, 0, unconst(p->text ? p->text : ""),
                                  (SQLLEN)p->len, &s->ind[i]);
        } else {
            s->ind[i] = SQL_NULL_DATA;
            rc = SQLBindParameter(s->h, num, SQL_PARAM_INPUT, SQL_C_CHAR, SQL_VARCHAR, 1, 0, NULL,
                                  0, &s->ind[i]);
        }
        if (invalid)
            return SQLQ_E_INVALID;
        if (!SQL_SUCCEEDED(rc))
            return sqlq_diag_set(err, SQL_HANDLE_STMT, s->h, "bind parameter", NULL);
    }
    return SQLQ_OK;
}

/* SQLPrepare (prepare_only) or SQLExecDirect of sql: as UTF-16 where the dialect's driver
 * wants wide text, as the bytes when it does not or when sql is not valid UTF-8. */
static SQLRETURN send_text(sqlq_db *db, SQLHSTMT h, const char *sql, bool prepare_only)
{
    uint16_t *w = NULL;
    size_t units = 0;
    if (!db->dialect->wide_text || sqlq_wtext_from_utf8(sql, strlen(sql), &w, &units) != SQLQ_OK)
        return prepare_only ? SQLPrepare(h, (SQLCHAR *)unconst(sql), SQL_NTS)
                            : SQLExecDirect(h, (SQLCHAR *)unconst(sql), SQL_NTS);
    SQLRETURN rc = prepare_only ? SQLPrepareW(h, (SQLWCHAR *)w, (SQLINTEGER)units)
                                : SQLExecDirectW(h, (SQLWCHAR *)w, (SQLINTEGER)units);
    free(w);
    return rc;
}

/* A statement handle for sql: the kept one, a new one prepared and kept (sqlq_db_keep_prepared
 * on), or a new one for SQLExecDirect. */
static sqlq_result stmt_open(sqlq_db *db, const char *sql, db_stmt *s, sqlq_error *err)
{
    if (db->keep && (s->h = sqlq_stmt_cache_take(&db->cache, sql)) != NULL) {
        s->kept = true;
        return SQLQ_OK;
    }
    if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_STMT, db->dbc, &s->h))) {
        s->h = NULL;
        return sqlq_diag_set(err, SQL_HANDLE_DBC, db->dbc, "allocate statement", db->secrets);
    }
    if (!db->keep)
        return SQLQ_OK;
    if (!SQL_SUCCEEDED(send_text(db, s->h, sql, true))) {
        sqlq_result r = sqlq_diag_set(err, SQL_HANDLE_STMT, s->h, "prepare", db->secrets);
        SQLFreeHandle(SQL_HANDLE_STMT, s->h);
        s->h = NULL;
        return r;
    }
    if (!sqlq_stmt_cache_add(&db->cache, sql, s->h)) {
        s->h = NULL; /* freed by the cache */
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory keeping a statement");
    }
    s->kept = true;
    return SQLQ_OK;
}

/* Allocate (or take the kept statement), bind and execute. On failure nothing is left to
 * free, and a kept statement is dropped: the next execution prepares it again (PostgreSQL
 * refuses a prepared `r.*` once ALTER TABLE changed its columns: "cached plan must not change
 * result type"). */
static sqlq_result stmt_run(sqlq_db *db, const char *sql, const sqlq_param *params, size_t n,
                            db_stmt *s, sqlq_error *err)
{
    memset(s, 0, sizeof(*s));
    if (!sql || (n > 0 && !params))
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "no SQL or parameters given");
    if (!db->connected)
        return sqlq_error_set(err, SQLQ_E_SQL, true, "not connected to the database");
    sqlq_result r = stmt_open(db, sql, s, err);
    if (r == SQLQ_OK)
        r = bind_params(db, s, params, n, err);
    if (r == SQLQ_OK) {
        SQLRETURN rc = s->kept ? SQLExecute(s->h) : send_text(db, s->h, sql, false);
        if (rc != SQL_NO_DATA && !SQL_SUCCEEDED(rc))
            r = sqlq_diag_set(err, SQL_HANDLE_STMT, s->h, "execute", db->secrets);
    }
    if (r != SQLQ_OK) {
        if (err && err->code == SQLQ_E_SQL)
            SQLQ_DEBUG("db_statement_failed", "sqlstate=%s native=%ld err=\"%s\"", err->sqlstate,
                       err->native_code, err->message);
        if (s->kept) {
            sqlq_stmt_cache_drop(&db->cache, s->h);
            s->h = NULL;
        }
        stmt_free(s);
    }
    return r;
}

bool sqlq_db_keep_prepared(sqlq_db *db, bool on)
{
    bool was = db->keep;
    db->keep = on && !(db->dialect && db->dialect->columns_at_prepare);
    return was;
}

sqlq_result sqlq_db_exec(sqlq_db *db, const char *sql, const sqlq_param *params, size_t nparams,
                         long long *out_rows_affected, sqlq_error *err)
{
    if (out_rows_affected)
        *out_rows_affected = 0;
    db_stmt s;
    sqlq_result r = stmt_run(db, sql, params, nparams, &s, err);
    if (r != SQLQ_OK)
        return r;
    SQLLEN count = 0;
    if (out_rows_affected && SQL_SUCCEEDED(SQLRowCount(s.h, &count)) && count > 0)
        *out_rows_affected = (long long)count;
    stmt_free(&s);
    return SQLQ_OK;
}

sqlq_result sqlq_db_query_each(sqlq_db *db, const char *sql, const sqlq_param *params,
                               size_t nparams, sqlq_db_row_fn fn, void *ctx, sqlq_error *err)
{
    db_stmt s;
    sqlq_result r = stmt_run(db, sql, params, nparams, &s, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_row_json *reader = NULL;
    r = sqlq_row_json_create(s.h, db->dialect, &reader, err);
    while (r == SQLQ_OK && sqlq_row_json_ncols(reader) > 0) {
        SQLRETURN rc = SQLFetch(s.h);
        if (rc == SQL_NO_DATA)
            break;
        if (!SQL_SUCCEEDED(rc)) {
            r = sqlq_diag_set(err, SQL_HANDLE_STMT, s.h, "fetch", db->secrets);
            break;
        }
        json_t *row = NULL;
        r = sqlq_row_json_read(reader, &row, err);
        if (r == SQLQ_OK)
            r = fn(ctx, row, err);
        json_decref(row);
    }
    sqlq_row_json_destroy(reader);
    stmt_free(&s);
    return r;
}

static sqlq_result append_row(void *ctx, json_t *row, sqlq_error *err)
{
    if (json_array_append(ctx, row) != 0)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory collecting rows");
    return SQLQ_OK;
}

sqlq_result sqlq_db_query(sqlq_db *db, const char *sql, const sqlq_param *params, size_t nparams,
                          json_t **out_rows, sqlq_error *err)
{
    *out_rows = NULL;
    json_t *rows = json_array();
    if (!rows)
        return sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory");
    sqlq_result r = sqlq_db_query_each(db, sql, params, nparams, append_row, rows, err);
    if (r != SQLQ_OK) {
        json_decref(rows);
        return r;
    }
    *out_rows = rows;
    return SQLQ_OK;
}

/* The result set's columns as [{"name": …, "type": ODBC SQL_* type}, …]. */
static json_t *describe_columns(const sqlq_row_json *reader)
{
    json_t *cols = json_array();
    for (size_t i = 0; cols && i < sqlq_row_json_ncols(reader); i++) {
        json_t *c = json_pack("{s:s, s:i}", "name", sqlq_row_json_name(reader, i), "type",
                              (int)sqlq_row_json_sql_type(reader, i));
        if (!c || json_array_append_new(cols, c) != 0) {
            json_decref(cols);
            cols = NULL;
        }
    }
    return cols;
}

sqlq_result sqlq_db_query_values(sqlq_db *db, const char *sql, const sqlq_param *params,
                                 size_t nparams, json_t **out_columns, json_t **out_rows,
                                 sqlq_error *err)
{
    *out_columns = NULL;
    *out_rows = NULL;
    db_stmt s;
    sqlq_result r = stmt_run(db, sql, params, nparams, &s, err);
    if (r != SQLQ_OK)
        return r;
    sqlq_row_json *reader = NULL;
    json_t *rows = json_array(), *cols = NULL;
    r = sqlq_row_json_create(s.h, db->dialect, &reader, err);
    if (r == SQLQ_OK && (!rows || !(cols = describe_columns(reader))))
        r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory describing a result");
    while (r == SQLQ_OK && sqlq_row_json_ncols(reader) > 0) {
        SQLRETURN rc = SQLFetch(s.h);
        if (rc == SQL_NO_DATA)
            break;
        if (!SQL_SUCCEEDED(rc)) {
            r = sqlq_diag_set(err, SQL_HANDLE_STMT, s.h, "fetch", db->secrets);
            break;
        }
        json_t *values = NULL;
        r = sqlq_row_json_read_values(reader, &values, err);
        if (r == SQLQ_OK && json_array_append_new(rows, values) != 0)
            r = sqlq_error_set(err, SQLQ_E_NOMEM, false, "out of memory collecting rows");
    }
    sqlq_row_json_destroy(reader);
    stmt_free(&s);
    if (r != SQLQ_OK) {
        json_decref(rows);
        json_decref(cols);
        return r;
    }
    *out_columns = cols;
    *out_rows = rows;
    return SQLQ_OK;
}

/* An integer as text: decimal digits, or (SQLite REAL, PostgreSQL numeric) an integral
 * floating value such as "42.0". */
static bool parse_int64(const char *text, int64_t *out)
{
    if (sqlq_json_int64_text(text, out))
        return true;
    char *end = NULL;
    errno = 0;
    double d = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || d != floor(d) || d < -9.2e18 || d > 9.2e18)
        return false;
    *out = (int64_t)d;
    return true;
}

sqlq_result sqlq_db_query_int(sqlq_db *db, const char *sql, const sqlq_param *params,
                              size_t nparams, int64_t *out, sqlq_error *err)
{
    *out = 0;
    db_stmt s;
    sqlq_result r = stmt_run(db, sql, params, nparams, &s, err);
    if (r != SQLQ_OK)
        return r;
    SQLRETURN rc = SQLFetch(s.h);
    if (rc == SQL_NO_DATA) {
        r = sqlq_error_set(err, SQLQ_E_NOT_FOUND, false, "query returned no row");
    } else if (!SQL_SUCCEEDED(rc)) {
        r = sqlq_diag_set(err, SQL_HANDLE_STMT, s.h, "fetch", db->secrets);
    } else {
        char text[128] = {0};
        SQLLEN ind = 0;
        rc = SQLGetData(s.h, 1, SQL_C_CHAR, text, (SQLLEN)sizeof(text), &ind);
        if (!SQL_SUCCEEDED(rc))
            r = sqlq_diag_set(err, SQL_HANDLE_STMT, s.h, "read column", db->secrets);
        else if (ind != SQL_NULL_DATA && !parse_int64(text, out))
            r = sqlq_error_set(err, SQLQ_E_PARSE, false, "query returned %.60s, not an integer",
                               text);
    }
    stmt_free(&s);
    return r;
}

/* ---- transactions -------------------------------------------------------------------------
 * PostgreSQL and SQL Server: autocommit off; the driver opens the transaction with the next
 * statement (psqlODBC sends BEGIN), SQLEndTran ends it, autocommit goes back on.
 * SQLite: sqliteodbc with autocommit off opens a *deferred* transaction ("BEGIN TRANSACTION")
 * lazily, so the write lock would only be requested at the first write, where SQLite may
 * answer BUSY without waiting (a reader cannot always upgrade). Instead the connection stays
 * in ODBC autocommit mode (sqliteodbc then leaves transactions alone) and sqlq issues
 * BEGIN IMMEDIATE / COMMIT / ROLLBACK itself: the write lock is taken up front, waiting up to
 * the connection's Timeout= for another writer. A COMMIT that fails (BUSY) leaves the SQLite
 * transaction open: call sqlq_db_rollback after a failed commit (always safe). */

static sqlq_result set_autocommit(sqlq_db *db, bool on, sqlq_error *err)
{
    SQLRETURN rc = SQLSetConnectAttr(
        db->dbc, SQL_ATTR_AUTOCOMMIT,
        (SQLPOINTER)(uintptr_t)(on ? SQL_AUTOCOMMIT_ON : SQL_AUTOCOMMIT_OFF), SQL_IS_UINTEGER);
    if (!SQL_SUCCEEDED(rc))
        return sqlq_diag_set(err, SQL_HANDLE_DBC, db->dbc, on ? "autocommit on" : "autocommit off",
                             db->secrets);
    return SQLQ_OK;
}

sqlq_result sqlq_db_begin(sqlq_db *db, sqlq_error *err)
{
    if (db->in_tx)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "a transaction is already open");
    if (!db->connected)
        return sqlq_error_set(err, SQLQ_E_SQL, true, "not connected to the database");
    sqlq_result r = db->dialect->serial_writer
                        ? sqlq_db_exec(db, "BEGIN IMMEDIATE", NULL, 0, NULL, err)
                        : set_autocommit(db, false, err);
    if (r == SQLQ_OK)
        db->in_tx = true;
    return r;
}

sqlq_result sqlq_db_commit(sqlq_db *db, sqlq_error *err)
{
    if (!db->in_tx)
        return sqlq_error_set(err, SQLQ_E_INVALID, false, "no transaction is open");
    if (db->dialect->serial_writer) {
        sqlq_result r = sqlq_db_exec(db, "COMMIT", NULL, 0, NULL, err);
        if (r == SQLQ_OK)
            db->in_tx = false;
        return r;
    }
    sqlq_result r = SQLQ_OK;
    if (!SQL_SUCCEEDED(SQLEndTran(SQL_HANDLE_DBC, db->dbc, SQL_COMMIT))) {
        r = sqlq_diag_set(err, SQL_HANDLE_DBC, db->dbc, "commit", db->secrets);
        SQLEndTran(SQL_HANDLE_DBC, db->dbc, SQL_ROLLBACK);
    }
    db->in_tx = false;
    sqlq_result r2 = set_autocommit(db, true, err);
    return r != SQLQ_OK ? r : r2;
}

void sqlq_db_rollback(sqlq_db *db)
{
    if (!db || !db->in_tx)
        return;
    db->in_tx = false;
    if (!db->connected)
        return;
    if (db->dialect->serial_writer) {
        /* SQLite may have rolled back already (after some errors): ignore "no transaction". */
        sqlq_error ignored;
        sqlq_error_clear(&ignored);
        if (sqlq_db_exec(db, "ROLLBACK", NULL, 0, NULL, &ignored) != SQLQ_OK)
            SQLQ_DEBUG("db_rollback_ignored", "err=\"%s\"", ignored.message);
        return;
    }
    SQLEndTran(SQL_HANDLE_DBC, db->dbc, SQL_ROLLBACK);
    sqlq_error ignored;
    sqlq_error_clear(&ignored);
    if (set_autocommit(db, true, &ignored) != SQLQ_OK)
        SQLQ_WARN("db_autocommit_failed", "err=\"%s\"", ignored.message);
}
