/* sql/pg_listen: the listener never falls back to libpq's defaults (a local socket could be
 * another PostgreSQL than the one ODBC reaches): with no server determined it says wakeup_off
 * and never connects; a DSN's odbc.ini section gives the server. */
#include "log.h"
#include "pg_listen.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char captured[4096];
static void capture(void *ctx, sqlq_log_level level, const char *event, const char *fields)
{
    (void)ctx;
    (void)level;
    size_t n = strlen(captured);
    snprintf(captured + n, sizeof(captured) - n, "%s %s\n", event, fields);
}

static sqlq_pg_listen *create(const char *conn)
{
    captured[0] = '\0';
    sqlq_error e;
    sqlq_error_clear(&e);
    sqlq_pg_listen *l = NULL;
    sqlq_log_set_sink(capture, NULL);
    assert_int_equal(sqlq_pg_listen_create(conn, "ch", NULL, &l, &e), SQLQ_OK);
    sqlq_log_set_sink(NULL, NULL);
    assert_non_null(l);
    return l;
}

static void test_no_server_is_wakeup_off(void **state)
{
    (void)state;
    sqlq_pg_listen *l = create("DSN=sqlq_no_such_dsn;UID=u;");
    assert_non_null(strstr(captured, "wakeup_off"));
    assert_non_null(strstr(captured, "dsn=sqlq_no_such_dsn"));
    assert_non_null(strstr(captured, "wakeup: false"));
    captured[0] = '\0';
    sqlq_log_set_sink(capture, NULL);
    assert_int_equal(sqlq_pg_listen_wait(l, 1, INT64_MIN), SQLQ_PG_LISTEN_TIMEOUT); /* no connect attempt */
    sqlq_log_set_sink(NULL, NULL);
    assert_null(strstr(captured, "listen_failed"));
    assert_int_equal(sqlq_pg_listen_backend_pid(l), 0);
    sqlq_pg_listen_destroy(l);
    l = create("Driver=x;Server=;Database=d;");
    assert_non_null(strstr(captured, "wakeup_off"));
    sqlq_pg_listen_destroy(l);
}

static void test_server_named_is_no_warning(void **state)
{
    (void)state;
    sqlq_pg_listen *l = create("Driver=x;Server=127.0.0.1;Port=1;");
    assert_null(strstr(captured, "wakeup_off"));
    sqlq_pg_listen_destroy(l);
    l = create("Driver=x;pqopt={host=127.0.0.1 port=1};");
    assert_null(strstr(captured, "wakeup_off"));
    sqlq_pg_listen_destroy(l);
}

static void test_dsn_section_gives_the_server(void **state)
{
    (void)state;
    char path[] = "/tmp/sqlq_pg_listen_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("[sqlq_t]\nDriver = x\nServername = 127.0.0.1\nPort = 1\n", f);
    fclose(f);
    setenv("ODBCINI", path, 1);
    sqlq_pg_listen *l = create("DSN=sqlq_t;");
    assert_null(strstr(captured, "wakeup_off"));
    sqlq_pg_listen_destroy(l);
    unsetenv("ODBCINI");
    unlink(path);
}

int main(void)
{
    unsetenv("PGHOST");
    unsetenv("PGSERVICE");
    setenv("ODBCINI", "/nonexistent/odbc.ini", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_server_is_wakeup_off),
        cmocka_unit_test(test_server_named_is_no_warning),
        cmocka_unit_test(test_dsn_section_gives_the_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
