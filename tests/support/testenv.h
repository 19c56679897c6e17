/* testenv: where the integration fixtures left their servers, and unique names for tests. */
#ifndef SQLQ_TESTENV_H
#define SQLQ_TESTENV_H

#include <stdbool.h>
#include <stddef.h>

/* Contents of $SQLQ_TEST_ENV_DIR/<rel> with trailing whitespace cut, or NULL (static buffer
 * per call site not needed: the result is malloc'd and owned by the caller). */
char *sqlq_test_read_env_file(const char *rel);
/* Azurite connection string written by the azurite fixture (malloc'd); fails the test if absent. */
char *sqlq_test_azurite_conn(void);
/* A fresh PostgreSQL database named after prefix + pid + counter; returns its ODBC connection
 * string (malloc'd). Fails the test if the postgres fixture is not running. */
char *sqlq_test_pg_create_db(const char *prefix);
/* A new empty MariaDB database on the test server: its ODBC connection string (malloc'd). */
char *sqlq_test_maria_create_db(const char *prefix);
/* A fresh SQLite database file under the build tree; returns its ODBC connection string. */
char *sqlq_test_sqlite_db(const char *prefix, char *out_path, size_t out_path_size);
/* A new empty database of kind "sqlite", "postgres" or "mariadb" named after prefix: its ODBC
 * connection string (malloc'd). Exits 1 on another kind. */
char *sqlq_test_create_db(const char *kind, const char *prefix);
/* The database ($SQLQ_TEST_DATABASE: sqlite, postgres, mariadb, ...) and change source
 * ($SQLQ_TEST_SOURCE: log, cursor, ...; "" in a suite without sources) that sqlq_database_test
 * (tests/support/database_test.cmake) registered this test for. The database exits 1 when unset. */
const char *sqlq_test_database(void);
const char *sqlq_test_source(void);
/* The entry of `table`, an array of `count` structs of `size` bytes whose first member is the
 * `const char *` name of a database, for sqlq_test_database(); exits 1 naming the entries when
 * none matches. SQLQ_TEST_DATABASE_ENTRY passes an array's count and size. */
const void *sqlq_test_database_entry(const void *table, size_t count, size_t size);
#define SQLQ_TEST_DATABASE_ENTRY(table)                                                            \
    sqlq_test_database_entry((table), sizeof(table) / sizeof((table)[0]), sizeof((table)[0]))
/* A product bug a test found and reports: the databases it breaks on (space-separated; a word
 * database-source, e.g. postgres-logical, names one source of a database), what goes wrong
 * there, and whether it shows only in some runs (a race). */
typedef struct sqlq_test_bug {
    const char *databases;
    const char *what;
    bool intermittent;
} sqlq_test_bug;
/* A check that a known product bug breaks. On a database the bug lists, a failed check is
 * printed as the bug (with the printf-style detail) and the test goes on, and a passed one fails
 * the test, asking for the database to come off the bug's list (unless the bug is intermittent);
 * on every other database the check must pass. */
#define SQLQ_TEST_CHECK(cond, bug) sqlq_test_check((cond), &(bug), __FILE__, __LINE__, "%s", #cond)
#define SQLQ_TEST_CHECK_MSG(cond, bug, ...)                                                        \
    sqlq_test_check((cond), &(bug), __FILE__, __LINE__, __VA_ARGS__)
void sqlq_test_check(bool ok, const sqlq_test_bug *bug, const char *file, int line,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A name unique to this process and call: prefix-<pid>-<n>, lowercase (valid queue name). */
void sqlq_test_unique_name(const char *prefix, char *out, size_t out_size);
/* Path of the sqlq binary ($SQLQ_BIN) and the source tree ($SQLQ_SOURCE_DIR). */
const char *sqlq_test_bin(void);
const char *sqlq_test_source_dir(void);
/* Run a shell command; returns its exit status (or -1). */
int sqlq_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
