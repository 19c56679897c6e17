/* testdb: a database connection and SQL for tests, failing the test (cmocka) on any error with
 * the statement and the driver's message. Shared by every C test that talks to a database. */
#ifndef SQLQ_TESTDB_H
#define SQLQ_TESTDB_H

#include "db.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fail the test naming what failed and err's message, SQLSTATE and native code. */
void sqlq_test_fail_error(const char *what, const sqlq_error *err) __attribute__((noreturn));
/* Evaluate call, a sqlq function that may use `err` (a sqlq_error * this provides, cleared),
 * or fail the test naming the call and the error. */
#define SQLQ_TEST_OK(call)                                                                         \
    do {                                                                                           \
        sqlq_error err_;                                                                           \
        sqlq_error_clear(&err_);                                                                   \
        sqlq_error *err = &err_;                                                                   \
        if ((call) != SQLQ_OK)                                                                     \
            sqlq_test_fail_error(#call, err);                                                      \
    } while (0)

/* Connect or fail the test. */
sqlq_db *sqlq_test_db_open(const char *conn);
/* Execute one statement or fail the test. */
void sqlq_test_db_exec(sqlq_db *db, const char *sql);
/* The same with a printf format (statements up to 8 KB). */
void sqlq_test_db_execf(sqlq_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with parameters. */
void sqlq_test_db_exec_params(sqlq_db *db, const char *sql, const sqlq_param *params, size_t n);
/* The integer in the first column of the first row, or fail the test. */
int64_t sqlq_test_db_query_int(sqlq_db *db, const char *sql, const sqlq_param *params, size_t n);
/* The same without parameters. */
int64_t sqlq_test_db_int(sqlq_db *db, const char *sql);
/* The SQL that differs between the test databases where tests write the same statement. */
typedef struct sqlq_test_sql {
    const char *name;     /* sqlite, postgres, mariadb */
    const char *key_text; /* a text type a primary key may hold */
    const char *upsert_v; /* after INSERT INTO t (id, v) VALUES (…): on a duplicate id, v replaced */
    bool backticks;       /* identifiers are quoted `so` (sqlq_test_backticks) */
    const char *sqlq;     /* sqlq's own tables are this prefix + bare name: sqlq_state, sqlq.state */
    /* appended to a WHERE on sqlq's state tables: only this database's rows (MariaDB keeps one
     * database sqlq per server; the others one per database) */
    const char *this_database;
} sqlq_test_sql;
/* The entry of the database under test (sqlq_test_database()); exits 1 when it has none. */
const sqlq_test_sql *sqlq_test_sql_under_test(void);
/* sql written with standard quoted identifiers ("x") as MariaDB/MySQL quote them (malloc'd): a
 * "" inside becomes ", the quotes become ` (a ` inside doubled); text literals stay as they are. */
char *sqlq_test_backticks(const char *sql);
/* Install or drop the change log of table, found through the catalog as `sqlq setup` finds
 * it, or fail the test. */
void sqlq_test_change_log_install(sqlq_db *db, const char *table);
void sqlq_test_change_log_drop(sqlq_db *db, const char *table);

#endif
