/* The --sql sink through ODBC on the database $SQLQ_TEST_DATABASE names (sqlite, postgres,
 * mariadb): bridge-shaped messages (row, batch and Functions shapes; insert, update, delete; a
 * composite key; binary, boolean, decimal, timestamp and hostile text values: quotes, a
 * backslash, a 4-byte character) give the expected final rows, and applying every message again
 * changes nothing; the version check skips an older change delivered late and keeps a delete
 * from being undone; a target keyed by its one unique index; ISO 8601 times with an offset.
 * What is refused (a missing table, a key that does not match, defects of a message):
 * test_sql_sink_refusals.c. What differs per database is in `databases` below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "db.h"
#include "log.h"
#include "sql_sink.h"
#include "testdb.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const messages[] = {
    /* row format: two inserts, then an update of the first */
    "{\"id\":\"a1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":\"eu\",\"id\":1},"
    "\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"19.90\",\"paid\":true,"
    "\"note\":\"it's \\\"quoted\\\"; DROP TABLE orders; --\",\"data\":{\"$base64\":\"AAEC/w==\"},"
    "\"placed\":\"2024-05-01T12:00:00.123Z\"},\"version\":1,\"bridge\":\"default\","
    "\"ts\":\"2024-05-01T12:00:01Z\"}",
    "{\"id\":\"a2\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":\"us\",\"id\":1},"
    "\"row\":{\"region\":\"us\",\"id\":1,\"total\":\"1.00\",\"paid\":false,\"note\":null,"
    "\"data\":null,\"placed\":null},\"version\":2,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"id\":\"a3\",\"op\":\"update\",\"table\":\"orders\",\"key\":{\"region\":\"eu\",\"id\":1},"
    "\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":false,"
    "\"note\":\"Žluťoučký kůň\",\"data\":{\"$base64\":\"AAEC/w==\"},"
    "\"placed\":\"2024-05-01T12:00:00.123Z\"},\"version\":3,\"bridge\":\"default\",\"ts\":\"x\"}",
    /* batch format: an insert and a delete */
    "{\"changes\":[{\"id\":\"b1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":"
    "\"eu\","
    "\"id\":2},\"row\":{\"region\":\"eu\",\"id\":2,\"total\":\"3.50\",\"paid\":true,\"note\":"
    "\"two\","
    "\"data\":null,\"placed\":null},\"version\":4,\"bridge\":\"default\",\"ts\":\"x\"},"
    "{\"id\":\"b2\",\"op\":\"delete\",\"table\":\"orders\",\"key\":{\"region\":\"us\",\"id\":1},"
    "\"row\":null,\"version\":5,\"bridge\":\"default\",\"ts\":\"x\"}]}",
    /* the Functions shape: insert, update (a row without the key order), delete */
    "[{\"Operation\":0,\"Item\":{\"region\":\"eu\",\"id\":3,\"total\":\"9.99\",\"paid\":true,"
    "\"note\":\"three\",\"data\":null,\"placed\":null}},"
    "{\"Operation\":1,\"Item\":{\"total\":\"5.50\",\"id\":2,\"region\":\"eu\",\"paid\":false,"
    "\"note\":\"two again\",\"data\":null,\"placed\":null}},"
    "{\"Operation\":2,\"Item\":{\"region\":\"eu\",\"id\":3}}]",
};
#define NMESSAGES (sizeof(messages) / sizeof(messages[0]))

/* Hostile text (quotes, a backslash that must stay one: MariaDB runs with
 * NO_BACKSLASH_ESCAPES; a 4-byte character) and booleans as numbers, in the same shapes. */
static const char *const text_messages[] = {
    "{\"id\":\"a1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":\"eu\",\"id\":1},"
    "\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"19.90\",\"paid\":true,"
    "\"note\":\"it's \\\"quoted\\\" \\\\ ; DROP TABLE orders; --\",\"data\":{\"$base64\":\"AAEC/w==\"},"
    "\"placed\":\"2024-05-01T12:00:00.123Z\"},\"version\":1,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"id\":\"a2\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":\"us\",\"id\":1},"
    "\"row\":{\"region\":\"us\",\"id\":1,\"total\":\"1.00\",\"paid\":0,\"note\":null,"
    "\"data\":null,\"placed\":null},\"version\":2,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"id\":\"a3\",\"op\":\"update\",\"table\":\"orders\",\"key\":{\"region\":\"eu\",\"id\":1},"
    "\"row\":{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
    "\"note\":\"\\u017dlu\\u0165ou\\u010dk\\u00fd \\ud83d\\ude00\",\"data\":{\"$base64\":\"AAEC/w==\"},"
    "\"placed\":\"2024-05-01T12:00:00.123Z\"},\"version\":3,\"bridge\":\"default\",\"ts\":\"x\"}",
    "{\"changes\":[{\"id\":\"b1\",\"op\":\"insert\",\"table\":\"orders\",\"key\":{\"region\":"
    "\"eu\",\"id\":2},\"row\":{\"region\":\"eu\",\"id\":2,\"total\":\"3.50\",\"paid\":true,"
    "\"note\":\"two\",\"data\":null,\"placed\":null},\"version\":4,\"bridge\":\"default\","
    "\"ts\":\"x\"},{\"id\":\"b2\",\"op\":\"delete\",\"table\":\"orders\",\"key\":{\"region\":"
    "\"us\",\"id\":1},\"row\":null,\"version\":5,\"bridge\":\"default\",\"ts\":\"x\"}]}",
    "[{\"Operation\":0,\"Item\":{\"region\":\"eu\",\"id\":3,\"total\":\"9.99\",\"paid\":true,"
    "\"note\":\"three\",\"data\":null,\"placed\":null}},"
    "{\"Operation\":1,\"Item\":{\"total\":\"5.50\",\"id\":2,\"region\":\"eu\",\"paid\":0,"
    "\"note\":\"two again\",\"data\":null,\"placed\":null}},"
    "{\"Operation\":2,\"Item\":{\"region\":\"eu\",\"id\":3}}]",
};
#define NTEXT_MESSAGES (sizeof(text_messages) / sizeof(text_messages[0]))

/* A database the sink runs on, and what differs there. */
typedef struct sink_db {
    const char *name;
    const char *versions;       /* the rows case's version table (SQLite's runs without) */
    const char *orders_columns; /* region, id (NOT NULL), total, paid, note, data, placed */
    const char *select;         /* the same, data as hex and placed as text, by key */
    const char *key_text;       /* a text type a primary key may hold */
    const char *want;           /* the rows after `messages` */
    const char *want_text;      /* the rows after `text_messages` */
    const char *unique_b;       /* the name the database gives UNIQUE on column b of table two */
    const char *time_type;      /* a date-time column type */
    const char *time_select;    /* id, at as text, by id, from table ts */
    const char *time_want;      /* the rows after the times case */
} sink_db;

static const sink_db databases[] = {
    {.name = "sqlite",
     .orders_columns = "region TEXT NOT NULL, id INTEGER NOT NULL, total TEXT, paid INTEGER, "
                       "note TEXT, data BLOB, placed TEXT",
     .key_text = "TEXT",
     .select = "SELECT region, id, total, paid, note, CASE WHEN data IS NULL THEN NULL ELSE "
               "hex(data) END AS data, placed FROM orders ORDER BY region, id",
     .want = "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
             "\"note\":\"Žluťoučký kůň\",\"data\":\"000102FF\","
             "\"placed\":\"2024-05-01T12:00:00.123Z\"},"
             "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":0,"
             "\"note\":\"two again\",\"data\":null,\"placed\":null}]",
     .want_text = "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
                  "\"note\":\"Žluťoučký 😀\",\"data\":\"000102FF\","
                  "\"placed\":\"2024-05-01T12:00:00.123Z\"},"
                  "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":0,"
                  "\"note\":\"two again\",\"data\":null,\"placed\":null}]",
     .unique_b = "sqlite_autoindex_two_2",
     .time_type = "TEXT", /* text: kept as written */
     .time_select = "SELECT id, at FROM ts ORDER BY id",
     .time_want = "[{\"id\":1,\"at\":\"2024-03-01T01:30:00.5+02:00\"},"
                  "{\"id\":2,\"at\":\"2023-12-31T23:00:00-0130\"},"
                  "{\"id\":3,\"at\":\"2024-05-01 12:00:00.123456\"}]"},
    {.name = "postgres",
     .versions = "sqlq_sink_versions",
     .orders_columns = "region text NOT NULL, id integer NOT NULL, total numeric(10,2), "
                       "paid boolean, note text, data bytea, placed timestamptz",
     .key_text = "text",
     .select = "SELECT region, id, total, paid, note, encode(data, 'hex') AS data, "
               "to_char(placed AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS') AS placed FROM "
               "orders ORDER BY region, id",
     .want = "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":false,"
             "\"note\":\"Žluťoučký kůň\",\"data\":\"000102ff\","
             "\"placed\":\"2024-05-01 12:00:00.123\"},"
             "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":false,"
             "\"note\":\"two again\",\"data\":null,\"placed\":null}]",
     .want_text = "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":false,"
                  "\"note\":\"Žluťoučký 😀\",\"data\":\"000102ff\","
                  "\"placed\":\"2024-05-01 12:00:00.123\"},"
                  "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":false,"
                  "\"note\":\"two again\",\"data\":null,\"placed\":null}]",
     .unique_b = "two_b_key",
     /* timestamp without time zone: PostgreSQL's cast drops the offset, the wall time stays
      * as written (MariaDB's below is the UTC wall time) */
     .time_type = "timestamp(6)",
     .time_select = "SELECT id, to_char(at, 'YYYY-MM-DD HH24:MI:SS.US') AS at FROM ts ORDER BY id",
     .time_want = "[{\"id\":1,\"at\":\"2024-03-01 01:30:00.500000\"},"
                  "{\"id\":2,\"at\":\"2023-12-31 23:00:00.000000\"},"
                  "{\"id\":3,\"at\":\"2024-05-01 12:00:00.123456\"}]"},
    {.name = "mariadb",
     .versions = "sqlq_sink_versions",
     .orders_columns = "region varchar(8) NOT NULL, id int NOT NULL, total decimal(10,2), "
                       "paid tinyint(1), note text, data varbinary(16), placed datetime(3)",
     .key_text = "varchar(40)",
     .select = "SELECT region, id, CAST(total AS CHAR) AS total, paid, note, HEX(data) AS data, "
               "CAST(placed AS CHAR) AS placed FROM orders ORDER BY region, id",
     .want = "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
             "\"note\":\"Žluťoučký kůň\",\"data\":\"000102FF\","
             "\"placed\":\"2024-05-01 12:00:00.123\"},"
             "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":0,"
             "\"note\":\"two again\",\"data\":null,\"placed\":null}]",
     .want_text = "[{\"region\":\"eu\",\"id\":1,\"total\":\"25.00\",\"paid\":0,"
                  "\"note\":\"Žluťoučký 😀\",\"data\":\"000102FF\","
                  "\"placed\":\"2024-05-01 12:00:00.123\"},"
                  "{\"region\":\"eu\",\"id\":2,\"total\":\"5.50\",\"paid\":0,"
                  "\"note\":\"two again\",\"data\":null,\"placed\":null}]",
     .unique_b = "b",
     .time_type = "datetime(6)",
     .time_select = "SELECT id, CAST(at AS CHAR) AS at FROM ts ORDER BY id",
     .time_want = "[{\"id\":1,\"at\":\"2024-02-29 23:30:00.500000\"},"
                  "{\"id\":2,\"at\":\"2024-01-01 00:30:00.000000\"},"
                  "{\"id\":3,\"at\":\"2024-05-01 12:00:00.123456\"}]"},
};

static const sink_db *db_under_test;

static void exec_sql(const char *conn, const char *sql)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_exec(db, sql);
    sqlq_db_close(db);
}

static char *rows_text(const char *conn, const char *select)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    json_t *rows = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_db_query(db, select, NULL, 0, &rows, &err) != SQLQ_OK)
        fail_msg("%s: %s", select, err.message);
    sqlq_db_close(db);
    char *s = json_dumps(rows, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(rows);
    return s;
}

static void apply(sqlq_sql_sink *s, const char *msg)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_apply_once(s, msg, strlen(msg), &err) != SQLQ_OK)
        fail_msg("%s: %s (sqlstate %s)", msg, err.message, err.sqlstate);
}

static sqlq_sql_sink *sink(const char *conn, const char *table, const char *versions)
{
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_create(conn, table, versions, &s, &err) != SQLQ_OK)
        fail_msg("create %s: %s", table, err.message);
    return s;
}

/* Table orders (key: the PRIMARY KEY or UNIQUE clause) fed msgs: the rows `want`, the same
 * after every message again, and after two messages once more (a redelivery). */
static void run_rows(const char *conn, const char *key, const char *versions,
                     const char *const *msgs, size_t n, const char *want)
{
    const sink_db *d = db_under_test;
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_execf(db, "CREATE TABLE orders (%s, %s)", d->orders_columns, key);
    sqlq_db_close(db);
    sqlq_sql_sink *s = sink(conn, "orders", versions);
    for (size_t i = 0; i < n; i++)
        apply(s, msgs[i]);
    char *first = rows_text(conn, d->select);
    if (strcmp(first, want) != 0)
        fail_msg("%s: rows\n  got  %s\n  want %s", d->name, first, want);
    for (size_t i = 0; i < n; i++) /* idempotent: the same messages again, same rows */
        apply(s, msgs[i]);
    char *second = rows_text(conn, d->select);
    assert_string_equal(second, first);
    apply(s, msgs[0]);
    apply(s, msgs[2]);
    char *third = rows_text(conn, d->select);
    assert_string_equal(third, first);
    free(first);
    free(second);
    free(third);
    sqlq_sql_sink_destroy(s);
}

static void test_sql_sink_rows(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sink");
    run_rows(conn, "PRIMARY KEY (region, id)", db_under_test->versions, messages, NMESSAGES,
             db_under_test->want);
    free(conn);
}

static void test_sql_sink_text(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sinktext");
    run_rows(conn, "PRIMARY KEY (region, id)", "sqlq_sink_versions", text_messages,
             NTEXT_MESSAGES, db_under_test->want_text);
    /* the quoted note of the first message survived as text (no backslash escapes) */
    exec_sql(conn, "DELETE FROM sqlq_sink_versions");
    sqlq_sql_sink *s = sink(conn, "orders", "sqlq_sink_versions");
    apply(s, text_messages[0]);
    char *first = rows_text(conn, "SELECT note FROM orders WHERE region = 'eu' AND id = 1");
    assert_string_equal(first, "[{\"note\":\"it's \\\"quoted\\\" \\\\ ; DROP TABLE orders; --\"}]");
    free(first);
    sqlq_sql_sink_destroy(s);
    free(conn);
}

static void test_sql_sink_refuses_what_does_not_fit(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sinkref");
    sqlq_db *ddl = sqlq_test_db_open(conn);
    sqlq_test_db_execf(ddl, "CREATE TABLE items (sku %s, shop INTEGER, qty INTEGER NOT NULL, "
                            "PRIMARY KEY (shop, sku))", db_under_test->key_text);
    sqlq_db_close(ddl);
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_create(conn, "no_such_table", NULL, &s, &err), SQLQ_E_NOT_FOUND);
    assert_non_null(strstr(err.message, "does not exist"));
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_create(conn, "items", NULL, &s, &err), SQLQ_OK);

    const char *wrong_key = "{\"op\":\"insert\",\"key\":{\"sku\":\"a\"},\"row\":{\"sku\":\"a\"}}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_check(s, wrong_key, strlen(wrong_key), &err), SQLQ_E_INVALID);
    if (!strstr(err.message, "primary key of items is (shop, sku)"))
        fail_msg("%s", err.message);
    const char *extra_key = "{\"op\":\"delete\",\"key\":{\"sku\":\"a\",\"qty\":1,\"shop\":1}}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_check(s, extra_key, strlen(extra_key), &err), SQLQ_E_INVALID);
    assert_non_null(strstr(err.message, "qty is not in the primary key"));
    const char *unknown = "{\"op\":\"insert\",\"key\":{\"sku\":\"a\",\"shop\":1},"
                          "\"row\":{\"sku\":\"a\",\"shop\":1,\"color\":\"red\"}}";
    sqlq_error_clear(&err);
    /* A column the table lacks is not the message's fault: retried (SQLQ_E_INVALID), and the
     * reason names the column, the table and what to do. */
    assert_int_equal(sqlq_sql_sink_apply_once(s, unknown, strlen(unknown), &err), SQLQ_E_INVALID);
    if (!strstr(err.message, "column color of the message is not in table items: the table "
                             "lacks it (add it with ALTER TABLE and restart the consumer"))
        fail_msg("%s", err.message);
    const char *truncated = "{\"op\":\"update\",\"key\":{\"sku\":\"a\",\"shop\":1},"
                            "\"truncated\":true}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_apply_once(s, truncated, strlen(truncated), &err),
                     SQLQ_E_REJECTED);
    assert_non_null(strstr(err.message, "truncated"));
    /* The hint names what helps: 65,536 bytes is the queue service's own limit, so a bigger
     * message size or the batch format cannot carry the row; fewer columns or a read-back can. */
    if (strstr(err.message, "raise the bridge's message size") ||
        !strstr(err.message, "65,536") || !strstr(err.message, "read-back") ||
        !strstr(err.message, "--format batch does not help"))
        fail_msg("%s", err.message);
    /* A row that is not an object is not "truncated". */
    const char *array_row = "{\"op\":\"insert\",\"key\":{\"sku\":\"a\",\"shop\":1},\"row\":[1,2]}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_apply_once(s, array_row, strlen(array_row), &err), SQLQ_E_REJECTED);
    assert_non_null(strstr(err.message, "\"row\" is not a JSON object"));
    assert_null(strstr(err.message, "truncated"));
    /* Defects of the message itself, which no retry and no ALTER TABLE can cure, are
     * SQLQ_E_REJECTED (the consumer poisons them at once), with the reason kept: not JSON, a
     * \u0000 or bytes that are not UTF-8, no key, not one of the shapes. */
    static const char *const defects[][2] = {
        {"not json", "body is not JSON"},
        {"{\"op\":\"insert\",\"key\":{\"sku\":\"a\\u0000\",\"shop\":1},\"version\":1,"
         "\"row\":{\"sku\":\"a\",\"shop\":1,\"qty\":1}}",
         "body is not JSON"},
        {"{\"op\":\"insert\",\"key\":{\"sku\":\"\xff\",\"shop\":1},\"version\":1,"
         "\"row\":{\"sku\":\"\xff\",\"shop\":1,\"qty\":1}}",
         "body is not JSON"},
        {"{\"op\":\"insert\",\"version\":1,\"row\":{\"sku\":\"a\",\"shop\":1,\"qty\":1}}",
         "without a \"key\" object"},
        {"{\"hello\":\"world\"}", ""},
    };
    for (size_t i = 0; i < sizeof(defects) / sizeof(defects[0]); i++) {
        sqlq_error_clear(&err);
        sqlq_result dr = sqlq_sql_sink_apply_once(s, defects[i][0], strlen(defects[i][0]), &err);
        if (dr != SQLQ_E_REJECTED || err.code != SQLQ_E_REJECTED ||
            !strstr(err.message, defects[i][1]))
            fail_msg("%s: %s (%s)", defects[i][0], sqlq_strerror(dr), err.message);
    }
    /* A batch is one transaction: a bad second change leaves nothing of the first. */
    const char *half = "{\"changes\":[{\"op\":\"insert\",\"key\":{\"sku\":\"ok\",\"shop\":1},"
                       "\"row\":{\"sku\":\"ok\",\"shop\":1,\"qty\":\"x\"},\"version\":1},"
                       "{\"op\":\"insert\",\"key\":{\"sku\":\"b\",\"shop\":1},"
                       "\"row\":{\"sku\":\"b\",\"shop\":1,\"qty\":null},\"version\":2}]}";
    sqlq_error_clear(&err);
    sqlq_result r = sqlq_sql_sink_apply_once(s, half, strlen(half), &err);
    sqlq_db *db = NULL;
    int64_t n = -1;
    assert_int_equal(sqlq_db_connect(conn, &db, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_query_int(db, "SELECT count(*) FROM items", NULL, 0, &n, &err),
                     SQLQ_OK);
    sqlq_db_close(db);
    assert_int_equal(r, SQLQ_E_SQL); /* NOT NULL violated by the second change */
    assert_int_equal(n, 0);
    /* A key spelled another way than its column's type ("1" for an integer, 1 for text) would
     * get a version history of its own while the database writes the same row: refused. */
    static const char *const respelled[] = {
        "{\"op\":\"update\",\"key\":{\"sku\":\"a\",\"shop\":\"01\"},"
        "\"row\":{\"sku\":\"a\",\"shop\":\"01\",\"qty\":1},\"version\":3}",
        "{\"op\":\"update\",\"key\":{\"sku\":7,\"shop\":1},"
        "\"row\":{\"sku\":7,\"shop\":1,\"qty\":1},\"version\":3}",
        "{\"op\":\"delete\",\"key\":{\"sku\":\"a\",\"shop\":\"1 \"},\"row\":null,\"version\":3}",
    };
    for (size_t i = 0; i < sizeof(respelled) / sizeof(respelled[0]); i++) {
        sqlq_error_clear(&err);
        if (sqlq_sql_sink_check(s, respelled[i], strlen(respelled[i]), &err) != SQLQ_E_INVALID)
            fail_msg("accepted %s (%s)", respelled[i], err.message);
        if (!strstr(err.message, "another spelling of a key"))
            fail_msg("%s", err.message);
    }
    /* A row or batch change without a version cannot be ordered: refused, not applied. */
    const char *unversioned = "{\"op\":\"update\",\"key\":{\"sku\":\"a\",\"shop\":1},"
                              "\"row\":{\"sku\":\"a\",\"shop\":1,\"qty\":1}}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_check(s, unversioned, strlen(unversioned), &err),
                     SQLQ_E_REJECTED);
    assert_non_null(strstr(err.message, "without a \"version\""));
    /* A delete whose row names another key is refused like an update's. */
    const char *other = "{\"op\":\"delete\",\"key\":{\"sku\":\"a\",\"shop\":1},"
                        "\"row\":{\"sku\":\"z\",\"shop\":1},\"version\":4}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_check(s, other, strlen(other), &err), SQLQ_E_REJECTED);
    assert_non_null(strstr(err.message, "disagrees with the message key"));
    sqlq_sql_sink_destroy(s);
    free(conn);
}

/* Deliveries out of order: with the version check an older change arriving late is skipped, the
 * same version again is not newer, and a delete is not undone by a late insert; without it the
 * last delivery wins. */
static void check_order(const char *conn, const char *versions, const char *want_after_late_update,
                        const char *want_after_same, bool want_after_late_insert)
{
    exec_sql(conn, "CREATE TABLE IF NOT EXISTS t (id integer PRIMARY KEY, v text)");
    exec_sql(conn, "DELETE FROM t");
    sqlq_sql_sink *s = sink(conn, "t", versions);
    const char *steps[] = {
        "{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"new\"},\"version\":10}",
        /* the same key spelled as the bridge spells integers beyond 2^53: one version history */
        "{\"op\":\"update\",\"key\":{\"id\":\"1\"},\"row\":{\"id\":\"1\",\"v\":\"old\"},\"version\":5}",
        "{\"op\":\"update\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"same\"},\"version\":10}",
        "{\"op\":\"delete\",\"key\":{\"id\":1},\"row\":null,\"version\":11}",
        "{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":{\"id\":1,\"v\":\"late\"},\"version\":9}",
    };
    const char *want_v[] = {NULL, want_after_late_update, want_after_same, NULL, NULL};
    sqlq_db *db = sqlq_test_db_open(conn);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        apply(s, steps[i]);
        if (want_v[i]) {
            json_t *rows = NULL;
            SQLQ_TEST_OK(sqlq_db_query(db, "SELECT v FROM t WHERE id = 1", NULL, 0, &rows, err));
            assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "v")),
                                want_v[i]);
            json_decref(rows);
        }
    }
    assert_int_equal(sqlq_test_db_int(db, "SELECT count(*) FROM t"), want_after_late_insert ? 1 : 0);
    sqlq_db_close(db);
    sqlq_sql_sink_destroy(s);
}

static void test_sql_sink_version_check(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sinkver");
    check_order(conn, "sqlq_sink_versions", "new", "new", false);
    check_order(conn, NULL, "old", "same", true); /* no check: the last delivery wins */
    free(conn);
}

/* MariaDB: a connection string whose driver counts found rows (FOUND_ROWS, OPTION=3) would make
 * every claim "newer" and let a late, older change overwrite a newer one: the sink refuses it
 * when it starts, naming the option; the same database without it keeps the newer change. */
static void test_sql_sink_found_rows_refused(void **state)
{
    (void)state;
    if (strcmp(db_under_test->name, "mariadb") != 0)
        skip();
    char *conn = sqlq_test_create_db(db_under_test->name, "sinkfound");
    size_t n = strlen(conn);
    char found[2048];
    snprintf(found, sizeof found, "%s%sOPTION=3;", conn, n && conn[n - 1] == ';' ? "" : ";");
    exec_sql(conn, "CREATE TABLE t (id integer PRIMARY KEY, v text)");
    sqlq_sql_sink *s = NULL;
    sqlq_error e;
    sqlq_error_clear(&e);
    assert_int_equal(sqlq_sql_sink_create(found, "t", "sqlq_sink_versions", &s, &e), SQLQ_E_INVALID);
    assert_null(s);
    assert_non_null(strstr(e.message, "FOUND_ROWS"));
    assert_non_null(strstr(e.message, "sqlq_sink_versions"));
    check_order(conn, "sqlq_sink_versions", "new", "new", false);
    free(conn);
}

/* A target without a primary key upserts by its one unique key of NOT NULL columns; none, or more than one, is refused naming its unique indexes. */
static void test_sql_sink_unique_key(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sinkuq");
    run_rows(conn, "UNIQUE (id, region)", NULL, messages, NMESSAGES, db_under_test->want);
    exec_sql(conn, "CREATE TABLE two (a int NOT NULL UNIQUE, b int NOT NULL UNIQUE)");
    exec_sql(conn, "CREATE TABLE none (a int, b int UNIQUE)");
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_create(conn, "two", NULL, &s, &err), SQLQ_E_INVALID);
    if (!strstr(err.message, "more than one unique index") ||
        !strstr(err.message, db_under_test->unique_b))
        fail_msg("%s", err.message);
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_create(conn, "none", NULL, &s, &err), SQLQ_E_INVALID);
    if (!strstr(err.message, "no unique index") || !strstr(err.message, "may be NULL"))
        fail_msg("%s", err.message);
    free(conn);
}

/* ISO 8601 times with an offset, across a leap day and a year, and one without an offset, as
 * the database's date-time column holds them (MariaDB refuses offsets: their UTC wall time). */
static void test_sql_sink_time_offsets(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sinktime");
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_db_execf(db, "CREATE TABLE ts (id int PRIMARY KEY, at %s)", db_under_test->time_type);
    sqlq_db_close(db);
    sqlq_sql_sink *s = sink(conn, "ts", NULL);
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":1},\"row\":{\"id\":1,"
             "\"at\":\"2024-03-01T01:30:00.5+02:00\"},\"version\":1}");
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":2},\"row\":{\"id\":2,"
             "\"at\":\"2023-12-31T23:00:00-0130\"},\"version\":2}");
    apply(s, "{\"op\":\"insert\",\"key\":{\"id\":3},\"row\":{\"id\":3,"
             "\"at\":\"2024-05-01 12:00:00.123456\"},\"version\":3}");
    char *got = rows_text(conn, db_under_test->time_select);
    assert_string_equal(got, db_under_test->time_want);
    free(got);
    sqlq_sql_sink_destroy(s);
    free(conn);
}

static void apply_ok(sqlq_sql_sink *s, const char *body)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_sql_sink_apply_once(s, body, strlen(body), &err) != SQLQ_OK)
        fail_msg("%s: %s", body, err.message);
}

static char *ids_of(const char *conn)
{
    sqlq_db *db = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    json_t *rows = NULL;
    assert_int_equal(sqlq_db_connect(conn, &db, &err), SQLQ_OK);
    assert_int_equal(sqlq_db_query(db, "SELECT id FROM r ORDER BY id", NULL, 0, &rows, &err),
                     SQLQ_OK);
    sqlq_db_close(db);
    char ids[256] = "";
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        json_t *id = json_object_get(row, "id");
        size_t len = strlen(ids);
        snprintf(ids + len, sizeof(ids) - len, "%s%lld", i ? "," : "",
                 json_is_integer(id) ? (long long)json_integer_value(id)
                                     : strtoll(json_string_value(id), NULL, 10));
    }
    json_decref(rows);
    return strdup(ids);
}

#define MF "{\"op\":\"manifest\",\"table\":\"r\",\"bridge\":\"default\",\"run\":7,"
#define ROW(id, v)                                                                                 \
    "{\"op\":\"insert\",\"key\":{\"id\":" #id "},\"row\":{\"id\":" #id "},\"version\":" #v "}"

/* Repair manifests applied in any order: the sweep waits until every page's committed manifest
 * (and the end) is there; it deletes only rows below the first page's floor that no committed
 * page found (not those of a page's failed attempt), leaves a tombstone, and runs once. */
static void test_sql_sink_repair_manifests_out_of_order(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(db_under_test->name, "sinkrepair");
    exec_sql(conn, "CREATE TABLE r (id integer PRIMARY KEY)");
    sqlq_sql_sink *s = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_create(conn, "r", "sqlq_sink_versions", &s, &err), SQLQ_OK);
    const char *rows[] = {ROW(1, 10), ROW(2, 11), ROW(3, 12), ROW(4, 13), ROW(5, 14), ROW(6, 100)};
    for (size_t i = 0; i < 6; i++)
        apply_ok(s, rows[i]);
    /* page 1 (floor 50) found 1 and 2; page 2 found 3 and 4 in an attempt that failed (floor
     * 60), then 3 in the committed one (floor 61); row 6 is newer than the run */
    const char *end = "{\"op\":\"manifest_end\",\"table\":\"r\",\"bridge\":\"default\",\"run\":7,"
                      "\"pages\":2,\"last\":61,\"ts\":\"x\"}";
    const char *page2 = MF "\"page\":2,\"part\":1,\"parts\":1,\"version\":61,\"prev\":50,"
                           "\"keys\":[{\"id\":3}],\"ts\":\"x\"}";
    const char *page2_failed = MF "\"page\":2,\"part\":1,\"parts\":1,\"version\":60,\"prev\":50,"
                                  "\"keys\":[{\"id\":3},{\"id\":4}],\"ts\":\"x\"}";
    const char *page1a = MF "\"page\":1,\"part\":1,\"parts\":2,\"version\":50,"
                            "\"keys\":[{\"id\":1}],\"ts\":\"x\"}";
    const char *page1b = MF "\"page\":1,\"part\":2,\"parts\":2,\"version\":50,"
                            "\"keys\":[{\"id\":\"2\"}],\"ts\":\"x\"}";
    const char *order[] = {end, page2, page2_failed, page1b};
    for (size_t i = 0; i < 4; i++) {
        apply_ok(s, order[i]);
        char *ids = ids_of(conn);
        assert_string_equal(ids, "1,2,3,4,5,6"); /* no sweep before every page is there */
        free(ids);
    }
    apply_ok(s, page1a);
    char *ids = ids_of(conn);
    assert_string_equal(ids, "1,2,3,6");
    free(ids);
    /* a late older message of a swept key stays out (tombstone at 50); a newer one comes in */
    apply_ok(s, ROW(5, 40));
    ids = ids_of(conn);
    assert_string_equal(ids, "1,2,3,6");
    free(ids);
    apply_ok(s, ROW(5, 70));
    apply_ok(s, page1a); /* delivered again after the sweep: nothing happens again */
    apply_ok(s, end);
    ids = ids_of(conn);
    assert_string_equal(ids, "1,2,3,5,6");
    free(ids);
    /* a malformed manifest is refused for good */
    const char *bad = MF "\"page\":2,\"part\":1,\"parts\":1,\"version\":61,\"keys\":[]}";
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_sql_sink_apply_once(s, bad, strlen(bad), &err), SQLQ_E_REJECTED);
    if (!strstr(err.message, "without \"prev\""))
        fail_msg("%s", err.message);
    sqlq_sql_sink_destroy(s);
    free(conn);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sql_sink_rows),
        cmocka_unit_test(test_sql_sink_text),
        cmocka_unit_test(test_sql_sink_refuses_what_does_not_fit),
        cmocka_unit_test(test_sql_sink_version_check),
        cmocka_unit_test(test_sql_sink_found_rows_refused),
        cmocka_unit_test(test_sql_sink_unique_key),
        cmocka_unit_test(test_sql_sink_time_offsets),
        cmocka_unit_test(test_sql_sink_repair_manifests_out_of_order),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
