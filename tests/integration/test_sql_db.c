/* sql/db through the installed ODBC drivers on the database $SQLQ_TEST_DATABASE names (sqlite,
 * postgres, mariadb): statements, parameters compared across types, transactions, streaming,
 * errors with SQLSTATE + native code, a DSN, busy locks (SQLite), a password never shown and
 * a reconnect after the server killed the session (servers). What differs per database is in
 * `databases` below. */
#include "db.h"
#include "dialect.h"
#include "log.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void kill_postgres(sqlq_db *killer, int64_t id)
{
    sqlq_param p = sqlq_param_int(id);
    assert_int_equal(sqlq_test_db_query_int(killer, "SELECT CASE WHEN pg_terminate_backend(CAST(? "
                                                    "AS int)) THEN 1 ELSE 0 END",
                                            &p, 1),
                     1);
}

static void kill_mariadb(sqlq_db *killer, int64_t id)
{
    sqlq_test_db_execf(killer, "KILL CONNECTION %lld", (long long)id);
}

/* The server names the database it refuses: the password as the database's name. */
static char *postgres_echo(const char *base)
{
    size_t n = strlen(base) + 64;
    char *conn = malloc(n);
    assert_non_null(conn);
    snprintf(conn, n, "%sDatabase=s3cretPw77-long-one;PWD={s3cretPw77-long-one};", base);
    return conn;
}

/* A user whose password is the text, refused the database of that name. */
static char *mariadb_echo(const char *base)
{
    char user[64];
    sqlq_test_unique_name("pw", user, sizeof(user));
    for (char *c = user; *c; c++)
        *c = *c == '-' ? '_' : *c;
    char *admin = sqlq_test_create_db("mariadb", "pw");
    sqlq_db *db = sqlq_test_db_open(admin);
    sqlq_test_db_execf(db, "CREATE USER '%s'@'%%' IDENTIFIED BY 's3cretPw77-long-one'", user);
    sqlq_db_close(db);
    free(admin);
    const char *uid = strstr(base, "UID=sqlq;");
    assert_non_null(uid);
    size_t n = strlen(base) + 128;
    char *conn = malloc(n);
    assert_non_null(conn);
    snprintf(conn, n, "%.*sUID=%s;%sDatabase=s3cretPw77-long-one;PWD={s3cretPw77-long-one};", (int)(uid - base), base,
             user, uid + strlen("UID=sqlq;"));
    return conn;
}

/* A database sql/db runs on, and what differs there. */
typedef struct database {
    const char *name;
    const sqlq_dialect *dialect;
    const char *series; /* n = 1 .. at least 100000 */
    /* a duplicate primary key: SQLSTATE, native code (0: any but 0), a piece of the message */
    const char *dup_state;
    long dup_native;
    const char *dup_text;
    const char *params_create; /* table p (i, b bigint, s text, n numeric(20,2), f double, y bytes) */
    const char *params_insert; /* (7, 2^62, '7', 7.5, 0.25, 0x00ff) */
    const char *null_safe_eq;  /* equality that holds for NULL = NULL */
    const char *dsn_keys[3][2]; /* a connection string key and its odbc.ini name, where they differ */
    const char *server;        /* the fixture's directory (NULL: a file, no server) */
    /* a connection string with password s3cretPw77 whose refusal the server words with that
     * text in it (malloc'd), and the refusal's SQLSTATE */
    char *(*echoed_password)(const char *base);
    const char *bad_password_state;
    const char *session_id;    /* the session's id on its server */
    void (*kill_session)(sqlq_db *killer, int64_t id); /* ends session id */
    const char *killed_states[2]; /* what the killed session's next statement says */
} database;

static const database databases[] = {
    {.name = "sqlite",
     .dialect = &sqlq_dialect_sqlite,
     .series = "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100000) "
               "SELECT n FROM s",
     .dup_state = "HY000",
     .dup_native = 19, /* SQLITE_CONSTRAINT */
     .dup_text = "UNIQUE",
     .params_create = "CREATE TABLE p (i int PRIMARY KEY, b bigint, s text, n numeric(20,2), "
                      "f double, y blob)",
     .params_insert = "INSERT INTO p VALUES (7, 4611686018427387904, '7', 7.5, 0.25, x'00ff')",
     .null_safe_eq = "IS"},
    {.name = "postgres",
     .dialect = &sqlq_dialect_postgres,
     .series = "SELECT n FROM generate_series(1, 1000000) AS n",
     .dup_state = "23505",
     .dup_text = "duplicate key",
     .params_create = "CREATE TABLE p (i int PRIMARY KEY, b bigint, s text, n numeric(20,2), "
                      "f float8, y bytea)",
     .params_insert = "INSERT INTO p VALUES (7, 4611686018427387904, '7', 7.5, 0.25, '\\x00ff')",
     .null_safe_eq = "IS NOT DISTINCT FROM",
     .dsn_keys = {{"Server", "Servername"}, {"UID", "Username"}, {"PWD", "Password"}},
     .server = "postgres",
     .echoed_password = postgres_echo,
     /* psqlODBC reports every failed connect as 08001 (native 101), so even a missing database
      * counts as transient: it cannot be told from a server that is still starting. */
     .bad_password_state = "08001",
     .session_id = "SELECT pg_backend_pid()",
     .kill_session = kill_postgres,
     /* psqlODBC 13 passes the server's 57P01 (admin shutdown) through; 08S01 if it only saw
      * the socket close. */
     .killed_states = {"57P01", "08S01"}},
    {.name = "mariadb",
     .dialect = &sqlq_dialect_mariadb,
     .series = "SELECT seq AS n FROM seq_1_to_1000000",
     .dup_state = "23000",
     .dup_native = 1062, /* ER_DUP_ENTRY */
     .dup_text = "Duplicate entry",
     .params_create = "CREATE TABLE p (i int PRIMARY KEY, b bigint, s text, n decimal(20,2), "
                      "f double, y varbinary(8))",
     .params_insert = "INSERT INTO p VALUES (7, 4611686018427387904, '7', 7.5, 0.25, 0x00ff)",
     .null_safe_eq = "<=>",
     .server = "mariadb",
     .echoed_password = mariadb_echo,
     .bad_password_state = "42000",
     .session_id = "SELECT CONNECTION_ID()",
     .kill_session = kill_mariadb,
     .killed_states = {"08S01", "HY000"}},
};

static const database *db_under_test;

/* A product difference the suite found (SQLQ_TEST_CHECK). */
static const sqlq_test_bug sql_db_bug_rows_changed = {
    "mariadb",
    "sqlq_db_exec's rows affected counts the rows an UPDATE changed, not those it matched "
    "(Connector/ODBC without FOUND_ROWS): a row set to the values it has is not counted, so "
    "capture's lost count (n - affected) can take an unchanged lease row for a lost one",
    false};

/* ---- every database ---- */

static void basic_statements(const char *conn, const sqlq_dialect *want)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    assert_ptr_equal(sqlq_db_dialect(db), want);
    assert_true(strlen(sqlq_db_dbms_name(db)) > 0);
    sqlq_test_db_exec_params(db,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(100), score DOUBLE PRECISION, "
            "big BIGINT)",
            NULL, 0);
    sqlq_param p[4] = {sqlq_param_int(1), sqlq_param_text("žluťoučký kůň"), sqlq_param_double(2.5),
                       sqlq_param_int(4611686018427387904LL)};
    sqlq_error err;
    sqlq_error_clear(&err);
    long long rows = -1;
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO t VALUES (?, ?, ?, ?)", p, 4, &rows, &err),
                     SQLQ_OK);
    assert_int_equal(rows, 1);
    sqlq_param p2[4] = {sqlq_param_int(2), sqlq_param_null(), sqlq_param_null(),
                        sqlq_param_int(-5)};
    sqlq_test_db_exec_params(db, "INSERT INTO t VALUES (?, ?, ?, ?)", p2, 4);
    assert_int_equal(sqlq_db_exec(db, "UPDATE t SET score = score + 1", NULL, 0, &rows, &err),
                     SQLQ_OK);
    SQLQ_TEST_CHECK_MSG(rows == 2, sql_db_bug_rows_changed,
                        "UPDATE of 2 rows (one score NULL, left NULL) affected %lld", rows);
    assert_int_equal(sqlq_db_exec(db, "DELETE FROM t WHERE id = 99", NULL, 0, &rows, &err),
                     SQLQ_OK);
    assert_int_equal(rows, 0);

    json_t *out = NULL;
    assert_int_equal(
        sqlq_db_query(db, "SELECT id, name, score, big FROM t ORDER BY id", NULL, 0, &out, &err),
        SQLQ_OK);
    assert_int_equal(json_array_size(out), 2);
    json_t *r0 = json_array_get(out, 0), *r1 = json_array_get(out, 1);
    assert_int_equal(json_integer_value(json_object_get(r0, "id")), 1);
    assert_string_equal(json_string_value(json_object_get(r0, "name")), "žluťoučký kůň");
    assert_true(json_real_value(json_object_get(r0, "score")) == 3.5);
    assert_string_equal(json_string_value(json_object_get(r0, "big")), "4611686018427387904");
    assert_true(json_is_null(json_object_get(r1, "name")));
    assert_true(json_is_null(json_object_get(r1, "score")));
    assert_int_equal(json_integer_value(json_object_get(r1, "big")), -5);
    json_decref(out);

    sqlq_param by_name = sqlq_param_text("žluťoučký kůň");
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT id FROM t WHERE name = ?", &by_name, 1), 1);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM t", NULL, 0), 2);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT name FROM t WHERE id = 2", NULL, 0), 0); /* NULL -> 0 */
    int64_t v = 7;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_query_int(db, "SELECT id FROM t WHERE id = 99", NULL, 0, &v, &err),
                     SQLQ_E_NOT_FOUND);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_query_int(db, "SELECT name FROM t WHERE id = 1", NULL, 0, &v, &err),
                     SQLQ_E_PARSE);
    sqlq_db_close(db);
}

static void transactions(const char *conn)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_test_db_exec_params(db, "CREATE TABLE tx (id INTEGER PRIMARY KEY)", NULL, 0);
    sqlq_db_rollback(db); /* nothing open: harmless */
    assert_int_equal(sqlq_db_commit(db, &err), SQLQ_E_INVALID);

    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_E_INVALID);
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (1)", NULL, 0);
    sqlq_db_rollback(db);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM tx", NULL, 0), 0);

    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (2)", NULL, 0);
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (3)", NULL, 0);
    assert_int_equal(sqlq_db_commit(db, &err), SQLQ_OK);

    /* Autocommit is back on: this insert survives a fresh connection. */
    sqlq_test_db_exec_params(db, "INSERT INTO tx VALUES (4)", NULL, 0);
    sqlq_db_close(db);
    db = sqlq_test_db_open(conn);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM tx", NULL, 0), 3);
    sqlq_db_close(db);
}

static int count_rows(void *ctx, json_t *row, sqlq_error *err)
{
    (void)err;
    int *n = ctx;
    assert_true(json_is_object(row));
    return ++*n == 5 ? SQLQ_E_CANCELLED : SQLQ_OK;
}

static void streaming(const char *conn, const char *series_sql)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    int n = 0;
    assert_int_equal(sqlq_db_query_each(db, series_sql, NULL, 0, count_rows, &n, &err),
                     SQLQ_E_CANCELLED);
    assert_int_equal(n, 5);
    /* The connection is usable after an abandoned cursor. */
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT 42", NULL, 0), 42);
    sqlq_db_close(db);
}

static void test_sql_db_statements(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "db_basic");
    basic_statements(conn, db_under_test->dialect);
    free(conn);
}

static void test_sql_db_transactions(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "db_tx");
    transactions(conn);
    free(conn);
}

static void test_sql_db_streaming(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "db_stream");
    streaming(conn, db_under_test->series);
    free(conn);
}

/* A duplicate key: the database's SQLSTATE, native code and words, not transient; in a
 * transaction the failed statement leaves the connection usable after rollback. A missing
 * table is named. */
static void test_sql_db_unique_violation(void **state)
{
    (void)state;
    const database *d = db_under_test;
    char *conn = sqlq_test_create_db(d->name, "db_err");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(db, "CREATE TABLE u (id INTEGER PRIMARY KEY)", NULL, 0);
    sqlq_test_db_exec_params(db, "INSERT INTO u VALUES (1)", NULL, 0);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO u VALUES (1)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    assert_string_equal(err.sqlstate, d->dup_state);
    if (d->dup_native)
        assert_int_equal(err.native_code, d->dup_native);
    else
        assert_true(err.native_code != 0);
    assert_false(err.transient);
    assert_non_null(strstr(err.message, d->dup_text));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_exec(db, "INSERT INTO u VALUES (1)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    sqlq_db_rollback(db);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM u", NULL, 0), 1);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(db, "SELECT * FROM missing_table", NULL, 0, NULL, &err),
                     SQLQ_E_SQL);
    assert_non_null(strstr(err.message, "missing_table"));
    sqlq_db_close(db);
    free(conn);
}

/* BEGIN IMMEDIATE takes the write lock at begin: a second writer is refused (BUSY, transient)
 * at its own begin, after its Timeout=, not in the middle of its transaction. */
static void test_sql_db_busy_is_transient(void **state)
{
    (void)state;
    if (db_under_test->server) {
        print_message("%s: writers wait for row locks, not for the database file\n",
                      db_under_test->name);
        skip();
    }
    char path[1024];
    char *conn = sqlq_test_sqlite_db("db-busy", path, sizeof(path));
    sqlq_db *a = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(a, "CREATE TABLE b (id INTEGER PRIMARY KEY)", NULL, 0);
    char conn2[1200];
    /* Timeout=0 means "wait 1000 s" to sqliteodbc (values < 1 fall back to its maximum). */
    snprintf(conn2, sizeof(conn2), "Driver={SQLite3};Database=%s;Timeout=50;", path);
    sqlq_db *b = sqlq_test_db_open(conn2);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(a, &err), SQLQ_OK);
    sqlq_test_db_exec_params(a, "INSERT INTO b VALUES (1)", NULL, 0);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(b, &err), SQLQ_E_SQL);
    assert_true(err.transient);
    assert_string_equal(err.sqlstate, "HY000");
    assert_int_equal(err.native_code, 5); /* SQLITE_BUSY */
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_exec(b, "INSERT INTO b VALUES (2)", NULL, 0, NULL, &err), SQLQ_E_SQL);
    assert_true(err.transient);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_commit(a, &err), SQLQ_OK);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(b, &err), SQLQ_OK);
    sqlq_test_db_exec_params(b, "INSERT INTO b VALUES (2)", NULL, 0);
    assert_int_equal(sqlq_db_commit(b, &err), SQLQ_OK);
    assert_int_equal(sqlq_test_db_query_int(a, "SELECT count(*) FROM b", NULL, 0), 2);
    sqlq_db_close(a);
    sqlq_db_close(b);
    free(conn);
}

/* "DSN=name" works as well as a driver connection string (a user DSN from $ODBCINI whose lines
 * are the connection string's keys). */
static void test_sql_db_dsn(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "db_dsn");
    char ini[1100], dsn[64];
    sqlq_test_unique_name("sqlqdsn", dsn, sizeof(dsn));
    snprintf(ini, sizeof(ini), "%s/%s.odbc.ini", getenv("SQLQ_TEST_ENV_DIR"), dsn);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "[%s]\n", dsn);
    for (const char *p = conn; *p;) {
        size_t len = strcspn(p, ";");
        const char *eq = memchr(p, '=', len);
        if (eq) { /* Key=value, the braces of {Driver} dropped */
            const char *v = eq + 1;
            size_t vlen = len - (size_t)(v - p);
            if (vlen >= 2 && v[0] == '{' && v[vlen - 1] == '}') {
                v++;
                vlen -= 2;
            }
            char key[64];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
            for (size_t k = 0; k < 3 && db_under_test->dsn_keys[k][0]; k++)
                if (strcmp(key, db_under_test->dsn_keys[k][0]) == 0)
                    snprintf(key, sizeof(key), "%s", db_under_test->dsn_keys[k][1]);
            fprintf(f, "%s=%.*s\n", key, (int)vlen, v);
        }
        p += len + (p[len] == ';');
    }
    fclose(f);
    setenv("ODBCINI", ini, 1);
    char dsn_conn[128];
    snprintf(dsn_conn, sizeof(dsn_conn), "DSN=%s;", dsn);
    sqlq_db *db = sqlq_test_db_open(dsn_conn);
    assert_ptr_equal(sqlq_db_dialect(db), db_under_test->dialect);
    sqlq_test_db_exec_params(db, "CREATE TABLE d (id INTEGER PRIMARY KEY)", NULL, 0);
    sqlq_db_close(db);
    db = sqlq_test_db_open(conn); /* the same database */
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM d", NULL, 0), 0);
    sqlq_db_close(db);
    unsetenv("ODBCINI");
    unlink(ini);
    free(conn);
}

static void test_sql_db_connect_failures(void **state)
{
    (void)state;
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect("", &db, &err), SQLQ_E_INVALID);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect("Driver={No Such Driver};PWD=hunter2", &db, &err), SQLQ_E_SQL);
    assert_null(db);
    assert_string_equal(err.sqlstate, "01000"); /* unixODBC: cannot load the driver */
    assert_null(strstr(err.message, "hunter2"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect("DSN=sqlq_no_such_dsn", &db, &err), SQLQ_E_SQL);
    assert_string_equal(err.sqlstate, "IM002");
    assert_false(err.transient);
}

/* Text and int64 parameters compare with integer, bigint and text columns (psqlODBC sends them
 * untyped); doubles, decimals as text, bytes and NULL compare as the column's type. */
static void test_sql_db_param_types(void **state)
{
    (void)state;
    const database *d = db_under_test;
    char *conn = sqlq_test_create_db(d->name, "db_params");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec_params(db, d->params_create, NULL, 0);
    sqlq_test_db_exec_params(db, d->params_insert, NULL, 0);
    static const char *const int_cols[] = {"i", "b", "s"};
    for (size_t c = 0; c < 3; c++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM p WHERE %s = ?", int_cols[c]);
        sqlq_param text = sqlq_param_text(c == 1 ? "4611686018427387904" : "7");
        sqlq_param num = sqlq_param_int(c == 1 ? 4611686018427387904LL : 7);
        assert_int_equal(sqlq_test_db_query_int(db, sql, &text, 1), 1);
        assert_int_equal(sqlq_test_db_query_int(db, sql, &num, 1), 1);
        sqlq_param other = sqlq_param_int(8);
        assert_int_equal(sqlq_test_db_query_int(db, sql, &other, 1), 0);
    }
    sqlq_param n = sqlq_param_text("7.50");
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE n = ?", &n, 1), 1);
    sqlq_param f = sqlq_param_double(0.25);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE f = ?", &f, 1), 1);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE i < ?", &f, 1), 0);
    sqlq_param y = sqlq_param_binary("\x00\xff", 2);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE y = ?", &y, 1), 1);
    sqlq_param null = sqlq_param_null();
    char null_sql[128];
    snprintf(null_sql, sizeof(null_sql), "SELECT count(*) FROM p WHERE s %s ?", d->null_safe_eq);
    assert_int_equal(sqlq_test_db_query_int(db, null_sql, &null, 1), 0);
    sqlq_param big[2] = {sqlq_param_int(INT64_MIN), sqlq_param_int(INT64_MAX)};
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT count(*) FROM p WHERE b > ? AND b < ?", big, 2), 1);
    sqlq_db_close(db);
    free(conn);
}

/* A password of real strength never reaches an error message, even when the server echoes it;
 * a short one (redact.h: under 16 bytes, it could be an ordinary word) does not blank a name
 * that happens to equal it (PostgreSQL: the name of a database that does not exist). */
static void test_sql_db_password_redacted(void **state)
{
    (void)state;
    const database *d = db_under_test;
    if (!d->server) {
        print_message("%s: a file, no password\n", d->name);
        skip();
    }
    char file[64];
    snprintf(file, sizeof(file), "%s/odbc", d->server);
    char *base = sqlq_test_read_env_file(file);
    assert_non_null(base);
    char *conn = d->echoed_password(base);
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_connect(conn, &db, &err), SQLQ_E_SQL);
    assert_null(db);
    assert_null(strstr(err.message, "s3cretPw77"));
    assert_non_null(strstr(err.message, "***"));
    assert_string_equal(err.sqlstate, d->bad_password_state);
    free(conn);
    if (strcmp(d->name, "postgres") == 0) {
        char shortpw[2048];
        snprintf(shortpw, sizeof(shortpw), "%sDatabase=orders7;PWD={orders7};", base);
        sqlq_error_clear(&err);
        assert_int_equal(sqlq_db_connect(shortpw, &db, &err), SQLQ_E_SQL);
        assert_non_null(strstr(err.message, "database \"orders7\" does not exist"));
    }
    free(base);
}

static void test_sql_db_reconnect_after_kill(void **state)
{
    (void)state;
    const database *d = db_under_test;
    if (!d->server) {
        print_message("%s: a file, no session to kill\n", d->name);
        skip();
    }
    char *conn = sqlq_test_create_db(d->name, "db_kill");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_db *killer = sqlq_test_db_open(conn);
    int64_t pid = sqlq_test_db_query_int(db, d->session_id, NULL, 0);
    d->kill_session(killer, pid);
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t v = 0;
    /* The first statement may still be answered by the dying backend: try twice. */
    sqlq_result r = sqlq_db_query_int(db, "SELECT 1", NULL, 0, &v, &err);
    if (r == SQLQ_OK) {
        sqlq_error_clear(&err);
        r = sqlq_db_query_int(db, "SELECT 1", NULL, 0, &v, &err);
    }
    assert_int_equal(r, SQLQ_E_SQL);
    if (strcmp(err.sqlstate, d->killed_states[0]) != 0 && strcmp(err.sqlstate, d->killed_states[1]) != 0)
        fail_msg("killed: sqlstate %s (%s)", err.sqlstate, err.message);
    if (!err.transient)
        fail_msg("not transient: %s (sqlstate=%s native=%ld)", err.message, err.sqlstate,
                 err.native_code);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_reconnect(db, NULL, &err), SQLQ_OK);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT 1", NULL, 0), 1);
    assert_true(sqlq_test_db_query_int(db, d->session_id, NULL, 0) != pid);
    sqlq_db_close(killer);

    /* A stop request ends a reconnect before it tries. */
    sqlq_stop stop = 1;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_reconnect(db, &stop, &err), SQLQ_E_CANCELLED);
    stop = 0;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_reconnect(db, &stop, &err), SQLQ_OK);
    assert_int_equal(sqlq_test_db_query_int(db, "SELECT 1", NULL, 0), 1);
    sqlq_db_close(db);
    free(conn);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sql_db_dsn),
        cmocka_unit_test(test_sql_db_connect_failures),
        cmocka_unit_test(test_sql_db_statements),
        cmocka_unit_test(test_sql_db_transactions),
        cmocka_unit_test(test_sql_db_streaming),
        cmocka_unit_test(test_sql_db_unique_violation),
        cmocka_unit_test(test_sql_db_busy_is_transient),
        cmocka_unit_test(test_sql_db_param_types),
        cmocka_unit_test(test_sql_db_password_redacted),
        cmocka_unit_test(test_sql_db_reconnect_after_kill),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
