#include "testenv.h"

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *env_dir(void)
{
    const char *d = getenv("SQLQ_TEST_ENV_DIR");
    return d && *d ? d : "testenv";
}

char *sqlq_test_read_env_file(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", env_dir(), rel);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = calloc(1, 8192);
    size_t n = buf ? fread(buf, 1, 8191, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    return buf;
}

static void die(const char *what)
{
    fprintf(stderr, "test environment: %s (run through ctest so the fixtures start the servers)\n",
            what);
    exit(1);
}

char *sqlq_test_azurite_conn(void)
{
    char *c = sqlq_test_read_env_file("azurite/conn");
    if (!c)
        die("no Azurite connection string in $SQLQ_TEST_ENV_DIR/azurite/conn");
    return c;
}

void sqlq_test_unique_name(const char *prefix, char *out, size_t out_size)
{
    static int counter;
    snprintf(out, out_size, "%s-%d-%d", prefix, (int)getpid(), ++counter);
    for (char *p = out; *p; p++)
        *p = (char)(*p == '_' ? '-' : tolower((unsigned char)*p));
}

/* A fresh database named after prefix + pid + counter on the server of fixture `server` (its
 * DIR/odbc and DIR/port), created with its command-line client: `client -h 127.0.0.1 port_flag
 * PORT run_flag 'CREATE DATABASE name'`. */
static char *create_db(const char *server, const char *client, const char *port_flag,
                       const char *run_flag, const char *prefix)
{
    char odbc_file[64], port_file[64];
    snprintf(odbc_file, sizeof(odbc_file), "%s/odbc", server);
    snprintf(port_file, sizeof(port_file), "%s/port", server);
    char *base = sqlq_test_read_env_file(odbc_file);
    char *port = sqlq_test_read_env_file(port_file);
    if (!base || !port)
        die("no database server in $SQLQ_TEST_ENV_DIR (postgres or mariadb fixture)");
    char name[128];
    sqlq_test_unique_name(prefix, name, sizeof(name));
    for (char *p = name; *p; p++)
        if (*p == '-')
            *p = '_';
    if (sqlq_test_sh("%s -h 127.0.0.1 %s %s %s 'CREATE DATABASE %s' >/dev/null", client, port_flag,
                     port, run_flag, name) != 0)
        die("CREATE DATABASE failed");
    size_t n = strlen(base) + strlen(name) + 32;
    char *conn = malloc(n);
    snprintf(conn, n, "%sDatabase=%s;", base, name);
    free(base);
    free(port);
    return conn;
}

char *sqlq_test_pg_create_db(const char *prefix)
{
    return create_db("postgres", "psql -q -U sqlq -d postgres", "-p", "-c", prefix);
}

char *sqlq_test_maria_create_db(const char *prefix)
{
    return create_db("mariadb", "mariadb --no-defaults -u sqlq", "-P", "-e", prefix);
}

char *sqlq_test_sqlite_db(const char *prefix, char *out_path, size_t out_path_size)
{
    char name[128];
    sqlq_test_unique_name(prefix, name, sizeof(name));
    snprintf(out_path, out_path_size, "%s/sqlite/%s.db", env_dir(), name);
    sqlq_test_sh("mkdir -p '%s/sqlite' && rm -f '%s'", env_dir(), out_path);
    size_t n = strlen(out_path) + 64;
    char *conn = malloc(n);
    snprintf(conn, n, "Driver={SQLite3};Database=%s;Timeout=5000;", out_path);
    return conn;
}

char *sqlq_test_create_db(const char *kind, const char *prefix)
{
    if (strcmp(kind, "postgres") == 0)
        return sqlq_test_pg_create_db(prefix);
    if (strcmp(kind, "mariadb") == 0)
        return sqlq_test_maria_create_db(prefix);
    if (strcmp(kind, "sqlite") != 0) {
        fprintf(stderr, "test environment: kind=%s\n", kind);
        die("no such kind of database (allowed: sqlite, postgres, mariadb)");
    }
    char path[512];
    return sqlq_test_sqlite_db(prefix, path, sizeof(path));
}

const char *sqlq_test_database(void)
{
    const char *d = getenv("SQLQ_TEST_DATABASE");
    if (!d || !*d)
        die("SQLQ_TEST_DATABASE is not set (sqlq_database_test in tests/CMakeLists.txt sets it)");
    return d;
}

const char *sqlq_test_source(void)
{
    const char *s = getenv("SQLQ_TEST_SOURCE");
    return s ? s : "";
}

const void *sqlq_test_database_entry(const void *table, size_t count, size_t size)
{
    const char *want = sqlq_test_database(), *name = NULL;
    for (size_t i = 0; i < count; i++) {
        memcpy(&name, (const char *)table + i * size, sizeof(name));
        if (strcmp(want, name) == 0)
            return (const char *)table + i * size;
    }
    fprintf(stderr, "test environment: SQLQ_TEST_DATABASE=%s; this suite knows ", want);
    for (size_t i = 0; i < count; i++) {
        memcpy(&name, (const char *)table + i * size, sizeof(name));
        fprintf(stderr, "%s%s", i == 0 ? "" : i + 1 == count ? " and " : ", ", name);
    }
    fprintf(stderr, "\n");
    exit(1);
}

/* Whether word is one of the space-separated words of list. */
static bool listed(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " ");
        if (len == n && strncmp(p, word, n) == 0)
            return true;
        p += len;
    }
    return false;
}

void sqlq_test_check(bool ok, const sqlq_test_bug *bug, const char *file, int line,
                     const char *fmt, ...)
{
    char db[128]; /* the database, or database-source for a source not its own */
    snprintf(db, sizeof(db), "%s", sqlq_test_database());
    bool known = listed(bug->databases, db);
    if (!known && *sqlq_test_source()) {
        snprintf(db, sizeof(db), "%s-%s", sqlq_test_database(), sqlq_test_source());
        known = listed(bug->databases, db);
    }
    if (ok && (!known || bug->intermittent))
        return;
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (!ok && known) {
        print_message("KNOWN PRODUCT BUG on %s (%s:%d): %s: %s\n", db, file, line, bug->what,
                      detail);
        return;
    }
    if (ok)
        print_error("ERROR: %s holds on %s now: the known bug (%s) is gone, take %s off its "
                    "list\n", detail, db, bug->what, db);
    else
        print_error("ERROR: %s (on %s)\n", detail, db);
    _fail(file, line);
}

const char *sqlq_test_bin(void)
{
    const char *b = getenv("SQLQ_BIN");
    return b && *b ? b : "sqlq";
}

const char *sqlq_test_source_dir(void)
{
    const char *s = getenv("SQLQ_SOURCE_DIR");
    return s && *s ? s : ".";
}

int sqlq_test_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st == -1)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
