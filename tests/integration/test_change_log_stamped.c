/* The stamped change log (MariaDB/MySQL: versions given at commit by the stamping poll, where
 * SQLite's counter and PostgreSQL's sequence give them as rows are written) on a real server
 * through Connector/ODBC, $SQLQ_TEST_DATABASE naming the database: setup installs three
 * triggers that log inserts, updates, deletes and a primary key that changes, per composite
 * key; stamping gives committed rows increasing versions and passes over the rows of an open
 * transaction, which are stamped (later, larger) once it commits: a late commit is never
 * skipped. Setup twice keeps the log; --drop removes triggers and log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "catalog.h"
#include "change_log.h"
#include "mariadb_change_log.h"
#include "db.h"
#include "testdb.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *conn;
    sqlq_db *db;
    sqlq_table *table;
    sqlq_catalog_names names;
    char log[128]; /* `sqlq`.`log_…` */
} fixture;

static void setup_table(fixture *f, const char *create, const char *name)
{
    f->conn = sqlq_test_create_db(sqlq_test_database(), "cl");
    f->db = sqlq_test_db_open(f->conn);
    sqlq_test_db_exec(f->db, create);
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_catalog_lookup(f->db, name, NULL, &f->table, &f->names, &err) != SQLQ_OK ||
        sqlq_change_log_install(f->db, f->table, &err) != SQLQ_OK)
        fail_msg("setup %s: %s", name, err.message);
    snprintf(f->log, sizeof(f->log), "sqlq.%s", f->names.log_table);
}

static void teardown_table(fixture *f)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_change_log_drop(f->db, f->table, NULL, &err), SQLQ_OK);
    bool installed = true;
    assert_int_equal(sqlq_change_log_installed(f->db, f->table, &installed, &err), SQLQ_OK);
    assert_false(installed);
    sqlq_table_free(f->table);
    sqlq_db_close(f->db);
    free(f->conn);
}

/* The log as text: "key:op:version-class:since-class;…" in key order, where the classes are
 * 0 (unstamped), s (stamped) and for since also n (NULL) and = (equal to the version). */
static void log_text(fixture *f, const char *keys, char *out, size_t size)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT CONCAT(%s, ':', sqlq_op, ':', IF(sqlq_version = 0, '0', 's'), ':', "
             "CASE WHEN sqlq_since IS NULL THEN 'n' WHEN sqlq_since = 0 THEN '0' "
             "WHEN sqlq_since = sqlq_version THEN '=' ELSE 's' END) AS e FROM %s ORDER BY %s",
             keys, f->log, keys);
    json_t *rows = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_query(f->db, sql, NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("%s: %s", sql, err.message);
    out[0] = '\0';
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", i ? ";" : "",
                 json_string_value(json_object_get(row, "e")));
    }
    json_decref(rows);
}

static long long stamp(fixture *f, int64_t *version)
{
    long long n = 0;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_change_log_stamp(f->db, f->table, &f->names, 1000, &n, version, &err) != SQLQ_OK)
        fail_msg("stamp: %s", err.message);
    return n;
}

/* Inserts, updates, deletes and a changed key, on a composite key of int and text. */
static void test_change_log_operations(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f,
                "CREATE TABLE orders (region varchar(8) NOT NULL, id int NOT NULL, "
                "total decimal(10,2), PRIMARY KEY (region, id))",
                "orders");
    sqlq_test_db_exec(f.db, "INSERT INTO orders VALUES ('eu', 1, 1.50), ('eu', 2, 2.50), ('us', 1, 9)");
    char got[512];
    log_text(&f, "region, '/', id", got, sizeof(got));
    assert_string_equal(got, "eu/1:I:0:0;eu/2:I:0:0;us/1:I:0:0");
    int64_t v1 = 0, v2 = 0;
    assert_int_equal(stamp(&f, &v1), 3);
    log_text(&f, "region, '/', id", got, sizeof(got));
    assert_string_equal(got, "eu/1:I:s:=;eu/2:I:s:=;us/1:I:s:=");
    assert_int_equal(stamp(&f, &v2), 0); /* nothing left: no version used */

    sqlq_test_db_exec(f.db, "UPDATE orders SET total = 3 WHERE region = 'eu' AND id = 1");
    sqlq_test_db_exec(f.db, "UPDATE orders SET id = 7 WHERE region = 'eu' AND id = 2"); /* key changes */
    sqlq_test_db_exec(f.db, "DELETE FROM orders WHERE region = 'us'");
    log_text(&f, "region, '/', id", got, sizeof(got));
    /* The update keeps the since of its insert; the old key is deleted, the new one born. */
    assert_string_equal(got, "eu/1:U:0:s;eu/2:D:0:s;eu/7:I:0:0;us/1:D:0:s");
    assert_int_equal(stamp(&f, &v2), 4);
    assert_true(v2 > v1);
    log_text(&f, "region, '/', id", got, sizeof(got));
    assert_string_equal(got, "eu/1:U:s:s;eu/2:D:s:s;eu/7:I:s:=;us/1:D:s:s");

    /* Setup again: triggers replaced, the log kept. */
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_change_log_install(f.db, f.table, &err), SQLQ_OK);
    log_text(&f, "region, '/', id", got, sizeof(got));
    assert_string_equal(got, "eu/1:U:s:s;eu/2:D:s:s;eu/7:I:s:=;us/1:D:s:s");
    teardown_table(&f);
}

/* T1 writes and stays open; T2 writes and commits: stamping takes T2's row and passes over
 * T1's (without waiting for it). T1 commits: its row is stamped with a larger version, so a
 * reader that has read everything up to T2's version still reads it. */
static void test_change_log_late_commit(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, "CREATE TABLE t (id int PRIMARY KEY, v text)", "t");
    sqlq_test_db_exec(f.db, "INSERT INTO t VALUES (5, 'committed before')");
    int64_t v0 = 0;
    assert_int_equal(stamp(&f, &v0), 1);

    sqlq_db *t1 = sqlq_test_db_open(f.conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(t1, &err), SQLQ_OK);
    sqlq_test_db_exec(t1, "INSERT INTO t VALUES (1, 'late')");
    sqlq_test_db_exec(t1, "UPDATE t SET v = 'late too' WHERE id = 5"); /* a stamped row, locked by T1 */
    sqlq_test_db_exec(f.db, "INSERT INTO t VALUES (2, 'early')");      /* T2, autocommit */

    int64_t v2 = 0;
    assert_int_equal(stamp(&f, &v2), 1);
    assert_true(v2 > v0);
    char got[512];
    log_text(&f, "id", got, sizeof(got));
    assert_string_equal(got, "2:I:s:=;5:I:s:="); /* T1's rows are not visible yet */

    assert_int_equal(sqlq_db_commit(t1, &err), SQLQ_OK);
    sqlq_db_close(t1);
    int64_t v3 = 0;
    assert_int_equal(stamp(&f, &v3), 2);
    assert_true(v3 > v2);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE sqlq_version > %lld", f.log,
             (long long)v2);
    int64_t after = 0;
    assert_int_equal(sqlq_db_query_int(f.db, sql, NULL, 0, &after, &err), SQLQ_OK);
    assert_int_equal(after, 2); /* both of T1's changes, after the version T2 took */
    log_text(&f, "id", got, sizeof(got));
    assert_string_equal(got, "1:I:s:=;2:I:s:=;5:U:s:s");
    teardown_table(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_change_log_operations),
        cmocka_unit_test(test_change_log_late_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
