/* cursor_source while the table's schema changes, on the database $SQLQ_TEST_DATABASE names
 * (sqlite, postgres, mariadb): after ADD, DROP, RENAME COLUMN (and a type change where ALTER
 * TABLE can make one) the next poll succeeds and its rows carry the table's columns as they are
 * now; after a primary-key change the poll fails for good with an error naming the table and
 * saying how to forget the checkpoint. */
#include "capture.h"
#include "cursor_source.h"
#include "db.h"
#include "log.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static sqlq_cursor_source *open_source(sqlq_db *db)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.source = SQLQ_SOURCE_CURSOR;
    cfg.table = "items";
    cfg.instance_id = "schema-test";
    cfg.cursor_column = "ver";
    cfg.max_batch_size = 100;
    cfg.lease_s = 30;
    cfg.safety_lag_ms = 0;
    sqlq_cursor_source *cs = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_cursor_source_open(db, NULL, &cfg, &cs, &err) != SQLQ_OK)
        fail_msg("cursor source open: %s", err.message);
    return cs;
}

/* Poll one change (the row just inserted) and check its columns ("a,b,…" in table order). */
static json_t *poll_one(sqlq_cursor_source *cs, const char *columns)
{
    sqlq_change_batch b;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_cursor_source_poll(cs, &b, &err) != SQLQ_OK)
        fail_msg("poll: %s", err.message);
    assert_int_equal(b.count, 1);
    json_t *row = json_incref(b.items[0].row);
    char got[300] = "";
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(row, k, v) {
        strncat(got, n++ ? "," : "", sizeof(got) - strlen(got) - 1);
        strncat(got, k, sizeof(got) - strlen(got) - 1);
    }
    if (strcmp(got, columns) != 0)
        fail_msg("columns %s, expected %s", got, columns);
    size_t lost = 0;
    assert_int_equal(sqlq_cursor_source_release(cs, b.items, b.count, &lost, &err), SQLQ_OK);
    sqlq_change_batch_free(&b);
    return row;
}

/* How a database changes a column's type and the primary key. */
typedef struct database {
    const char *name;
    const char *type_change; /* quantity becomes text (NULL: SQLite cannot) */
    const char *pk_change[4]; /* the key becomes (id, ver) */
} database;

static const database databases[] = {
    {"sqlite",
     NULL,
     {"CREATE TABLE items_new (id integer NOT NULL, ver integer NOT NULL, quantity integer, extra "
      "text, PRIMARY KEY (id, ver))",
      "INSERT INTO items_new SELECT * FROM items", "DROP TABLE items",
      "ALTER TABLE items_new RENAME TO items"}},
    {"postgres",
     "ALTER TABLE items ALTER COLUMN quantity TYPE text USING quantity::text",
     {"ALTER TABLE items DROP CONSTRAINT items_pkey, ADD PRIMARY KEY (id, ver)"}},
    {"mariadb",
     "ALTER TABLE items MODIFY quantity text",
     {"ALTER TABLE items DROP PRIMARY KEY, ADD PRIMARY KEY (id, ver)"}},
};

static void run(const char *conn, const database *d)
{
    sqlq_log_set_level(SQLQ_LOG_ERROR);
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, "CREATE TABLE items (id integer PRIMARY KEY, ver integer NOT NULL, note text, "
                "qty integer)");
    sqlq_cursor_source *cs = open_source(db);
    sqlq_test_db_exec(db, "INSERT INTO items VALUES (1, 1, 'n', 1)");
    json_decref(poll_one(cs, "id,ver,note,qty"));

    sqlq_test_db_exec(db, "ALTER TABLE items ADD COLUMN extra text");
    sqlq_test_db_exec(db, "INSERT INTO items VALUES (2, 2, 'n', 2, 'x')");
    json_t *row = poll_one(cs, "id,ver,note,qty,extra");
    assert_string_equal(json_string_value(json_object_get(row, "extra")), "x");
    json_decref(row);

    sqlq_test_db_exec(db, "ALTER TABLE items DROP COLUMN note");
    sqlq_test_db_exec(db, "INSERT INTO items VALUES (3, 3, 3, 'x')");
    json_decref(poll_one(cs, "id,ver,qty,extra"));

    sqlq_test_db_exec(db, "ALTER TABLE items RENAME COLUMN qty TO quantity");
    sqlq_test_db_exec(db, "INSERT INTO items VALUES (4, 4, 4, 'x')");
    json_decref(poll_one(cs, "id,ver,quantity,extra"));

    if (d->type_change) {
        sqlq_test_db_exec(db, d->type_change);
        sqlq_test_db_exec(db, "INSERT INTO items VALUES (5, 5, 'q5', 'x')");
        row = poll_one(cs, "id,ver,quantity,extra");
        assert_string_equal(json_string_value(json_object_get(row, "quantity")), "q5");
        json_decref(row);
    }
    for (size_t i = 0; i < 4 && d->pk_change[i]; i++)
        sqlq_test_db_exec(db, d->pk_change[i]);
    sqlq_test_db_exec(db, "INSERT INTO items VALUES (6, 6, NULL, 'x')");
    sqlq_change_batch b;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_cursor_source_poll(cs, &b, &err), SQLQ_E_INVALID);
    assert_int_equal(b.count, 0);
    assert_false(err.transient);
    if (!strstr(err.message, "items") || !strstr(err.message, "primary key changed") ||
        !strstr(err.message, "sqlq setup --table ") || !strstr(err.message, "--source cursor --drop"))
        fail_msg("unhelpful error: %s", err.message);
    sqlq_cursor_source_close(cs);
    sqlq_db_close(db);
}

static void test_cursor_schema(void **state)
{
    (void)state;
    const database *d = SQLQ_TEST_DATABASE_ENTRY(databases);
    char *conn = sqlq_test_create_db(d->name, "cursor_schema");
    run(conn, d);
    free(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_schema),
    };
    return cmocka_run_group_tests_name(sqlq_test_database(), tests, NULL, NULL);
}
