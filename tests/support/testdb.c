#include "testdb.h"

#include "testenv.h"

#include "catalog.h"
#include "change_log.h"

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
// clang-format on

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sqlq_test_fail_error(const char *what, const sqlq_error *err)
{
    fail_msg("%s: %s (sqlstate %s native %ld)", what, err->message, err->sqlstate,
             err->native_code);
    abort(); /* fail_msg does not return */
}

sqlq_db *sqlq_test_db_open(const char *conn)
{
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_connect(conn, &db, &err) != SQLQ_OK)
        fail_msg("connect failed: %s (sqlstate=%s)", err.message, err.sqlstate);
    return db;
}

void sqlq_test_db_exec_params(sqlq_db *db, const char *sql, const sqlq_param *params, size_t n)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_exec(db, sql, params, n, NULL, &err) != SQLQ_OK)
        fail_msg("SQL failed: %s\n  %s", err.message, sql);
}

void sqlq_test_db_exec(sqlq_db *db, const char *sql)
{
    sqlq_test_db_exec_params(db, sql, NULL, 0);
}

void sqlq_test_db_execf(sqlq_db *db, const char *fmt, ...)
{
    char sql[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(sql))
        fail_msg("statement longer than %zu bytes: %.80s...", sizeof(sql) - 1, sql);
    sqlq_test_db_exec(db, sql);
}

int64_t sqlq_test_db_query_int(sqlq_db *db, const char *sql, const sqlq_param *params, size_t n)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t v = -1;
    if (sqlq_db_query_int(db, sql, params, n, &v, &err) != SQLQ_OK)
        fail_msg("SQL failed: %s\n  %s", err.message, sql);
    return v;
}

int64_t sqlq_test_db_int(sqlq_db *db, const char *sql)
{
    return sqlq_test_db_query_int(db, sql, NULL, 0);
}

/* Look table up, then install (install true) or drop its change log; fail the test on error. */
static void change_log_set(sqlq_db *db, const char *table, bool install)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_table *t = NULL;
    sqlq_catalog_names names;
    if (sqlq_catalog_lookup(db, table, NULL, &t, &names, &err) != SQLQ_OK)
        fail_msg("lookup of %s failed: %s", table, err.message);
    sqlq_result r =
        install ? sqlq_change_log_install(db, t, &err) : sqlq_change_log_drop(db, t, NULL, &err);
    sqlq_table_free(t);
    if (r != SQLQ_OK)
        fail_msg("change log %s of %s failed: %s", install ? "install" : "drop", table,
                 err.message);
}

void sqlq_test_change_log_install(sqlq_db *db, const char *table)
{
    change_log_set(db, table, true);
}

void sqlq_test_change_log_drop(sqlq_db *db, const char *table)
{
    change_log_set(db, table, false);
}

static const sqlq_test_sql test_sql[] = {
    {"sqlite", "text", " ON CONFLICT (id) DO UPDATE SET v = excluded.v", false, "sqlq_", ""},
    {"postgres", "text", " ON CONFLICT (id) DO UPDATE SET v = excluded.v", false, "sqlq.", ""},
    {"mariadb", "varchar(40)", " ON DUPLICATE KEY UPDATE v = VALUES(v)", true, "sqlq.",
     " AND table_name LIKE CONCAT(DATABASE(), '.%')"},
};

const sqlq_test_sql *sqlq_test_sql_under_test(void)
{
    return SQLQ_TEST_DATABASE_ENTRY(test_sql);
}

char *sqlq_test_backticks(const char *sql)
{
    char *out = malloc(2 * strlen(sql) + 1);
    assert_non_null(out);
    char *o = out;
    bool in_ident = false, in_text = false;
    for (const char *p = sql; *p; p++) {
        if (in_text && *p != '\'') {
            *o++ = *p;
        } else if (*p == '\'' && !in_ident) {
            in_text = !in_text;
            *o++ = *p;
        } else if (*p == '"' && in_ident && p[1] == '"') {
            *o++ = '"';
            p++;
        } else if (*p == '"') {
            in_ident = !in_ident;
            *o++ = '`';
        } else {
            if (*p == '`' && in_ident)
                *o++ = '`';
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}
