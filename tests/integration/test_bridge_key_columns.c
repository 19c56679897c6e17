/* Tables without a primary key, keyed by a unique index named with --key-columns, on every database ($SQLQ_TEST_DATABASE names it: sqlite, postgres, mariadb),
 * through the real sqlq binary and Azurite: setup refuses a table without a usable key (exit
 * 2, naming its unique indexes), inserts, updates, deletes and a key-changing update arrive
 * keyed by the unique key, a bridge started without the flag keeps the key setup chose, the
 * cursor source and backfill use it, and a unique index dropped under a running bridge stops
 * it loudly without losing the changes made meanwhile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_support.h"
#include "testdb.h"
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct database {
    const char *name;
    const char *drop_index; /* DROP INDEX statement of kc_u on kc */
    const char *nullable;   /* make kc.code nullable; NULL: the database cannot (SQLite) */
} database;

static const database databases[] = {
    {"sqlite", "DROP INDEX kc_u", NULL},
    {"postgres", "DROP INDEX kc_u", "ALTER TABLE kc ALTER COLUMN code DROP NOT NULL"},
    {"mariadb", "DROP INDEX kc_u ON kc", "ALTER TABLE kc MODIFY code VARCHAR(20) NULL"},
};

static const database *db_under_test;

typedef bt_case ctx;

static int setup(void **state)
{
    *state = bt_case_new(sqlq_test_create_db(db_under_test->name, "keycols"), db_under_test->name);
    return 0;
}

/* The table of every test: no primary key; (region, code) unique, NOT NULL. */
static const char KC_CREATE[] = "CREATE TABLE kc (code VARCHAR(20) NOT NULL, region VARCHAR(10) "
                                "NOT NULL, qty INTEGER, ver INTEGER NOT NULL)";
static const char KC_INDEX[] = "CREATE UNIQUE INDEX kc_u ON kc (region, code)";

static bool logical(void)
{
    return strcmp(sqlq_test_source(), "logical") == 0;
}

/* A case of the change log's key checks under a running bridge: the logical source reads the
 * key's values from the stream, and a unique index changed under it does not stop it
 * (docs/logical-source.md, Messages). */
#define SKIP_ON_LOGICAL(why)                                                                       \
    do {                                                                                           \
        if (logical()) {                                                                           \
            print_message("skipped: %s\n", why);                                                   \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* kc's unique index; under the logical source also kc's replica identity, which a table without
 * a primary key needs before the stream can carry its updates and deletes (setup refuses it
 * without one: docs/logical-source.md). */
static void kc_index(sqlq_db *db)
{
    bt_exec(db, KC_INDEX);
    if (logical())
        bt_exec(db, "ALTER TABLE kc REPLICA IDENTITY USING INDEX kc_u");
}

/* `sqlq <args>` (shell words) on the case's database: its exit code; stderr into the log. */
static int sqlq_cmd(ctx *c, const char *args)
{
    return sqlq_test_sh("SQLQ_QUEUE_CONNECTION='%s' SQLQ_DB_CONNECTION='%s' '%s' %s >>'%s' 2>&1",
                        c->q.conn, c->conn, sqlq_test_bin(), args, c->log);
}

static bool log_has(const ctx *c, const char *text)
{
    return bt_log_has(c->log, text);
}

/* Fail the test with msg after printing the case's log. */
#define fail_log(c, msg)                                                                           \
    do {                                                                                           \
        bt_print_log((c)->log);                                                                    \
        fail_msg(msg);                                                                             \
    } while (0)

static json_t *change_of(json_t *by_key, const char *canon, size_t i)
{
    json_t *l = json_object_get(by_key, canon);
    if (!l) {
        char *keys = json_dumps(by_key, JSON_COMPACT);
        fail_msg("no message for key %s (got %s)", canon, keys ? keys : "?");
    }
    return json_array_get(l, i);
}

/* Messages from a running bridge: wait for `want` (a bridge starting may take a while), then
 * expect no more. */
static json_t *receive(ctx *c, size_t want)
{
    return bt_receive(&c->q, c->queue, c->log, want);
}

static const char *op_of(json_t *m)
{
    return json_string_value(json_object_get(m, "op"));
}

static long long qty_of(json_t *m)
{
    return (long long)json_integer_value(json_object_get(json_object_get(m, "row"), "qty"));
}

/* Setup without a key refuses (exit 2, saying --key-columns and naming kc_u), then installs
 * with --key-columns in another order than the index's. */
static sqlq_db *kc_setup(ctx *c)
{
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, KC_CREATE);
    kc_index(db);
    assert_int_equal(sqlq_cmd(c, "setup --table kc"), 2);
    if (!log_has(c, "has no primary key") || !log_has(c, "--key-columns") ||
        !log_has(c, "kc_u (region, code)"))
        fail_log(c, "setup without a key: no error naming --key-columns and kc_u");
    assert_int_equal(sqlq_cmd(c, "setup --table kc --key-columns 'code, region'"), 0);
    return db;
}

static void test_key_columns_inserts_updates_deletes(void **state)
{
    ctx *c = *state;
    sqlq_db *db = kc_setup(c);
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1), ('b', 'eu', 2, 2), ('c', 'us', 3, 3)");
    const char *keyed[] = {"--key-columns", "code,region", NULL};
    bt_case_run_once(c, "kc", keyed);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *by = bt_by_key(msgs);
    json_t *m = change_of(by, "{\"code\":\"b\",\"region\":\"eu\"}", 0);
    assert_string_equal(op_of(m), "insert");
    assert_int_equal(qty_of(m), 2);
    json_decref(by);
    json_decref(msgs);

    /* An update, a delete and a key-changing update; the bridge now runs without the flag:
     * the change log's key (what setup chose) is the key. */
    bt_exec(db, "UPDATE kc SET qty = 10 WHERE code = 'a'");
    bt_exec(db, "DELETE FROM kc WHERE code = 'c'");
    bt_exec(db, "UPDATE kc SET code = 'B', qty = 20 WHERE code = 'b'");
    bt_case_run_once(c, "kc", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 4);
    by = bt_by_key(msgs);
    m = change_of(by, "{\"code\":\"a\",\"region\":\"eu\"}", 0);
    assert_string_equal(op_of(m), "update");
    assert_int_equal(qty_of(m), 10);
    assert_string_equal(op_of(change_of(by, "{\"code\":\"c\",\"region\":\"us\"}", 0)), "delete");
    assert_string_equal(op_of(change_of(by, "{\"code\":\"b\",\"region\":\"eu\"}", 0)), "delete");
    m = change_of(by, "{\"code\":\"B\",\"region\":\"eu\"}", 0);
    assert_string_equal(op_of(m), "insert");
    assert_int_equal(qty_of(m), 20);
    json_decref(by);
    json_decref(msgs);

    assert_int_equal(sqlq_cmd(c, "status --table kc"), 0);
    /* backfill pages by the same key without the flag: the rows now, op read */
    char args[256];
    snprintf(args, sizeof(args), "backfill --table kc --queue %s", c->queue);
    assert_int_equal(sqlq_cmd(c, args), 0);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    by = bt_by_key(msgs);
    assert_string_equal(op_of(change_of(by, "{\"code\":\"B\",\"region\":\"eu\"}", 0)), "read");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* What is refused, each with a message naming what to do: no unique index (exit 2), a unique
 * index on a nullable column, columns no unique index has exactly, a flag that differs from
 * the change log's key (the bridge, exit 2 as setup's refusals: a configuration error). */
static void test_key_columns_refused(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE TABLE bare (x INTEGER, y INTEGER)");
    assert_int_equal(sqlq_cmd(c, "setup --table bare"), 2);
    if (!log_has(c, "bare has no primary key") || !log_has(c, "--key-columns") ||
        !log_has(c, "unique indexes: none"))
        fail_log(c, "no clear error for a table without any key");
    bt_exec(db, "CREATE TABLE nul (x INTEGER NOT NULL, y INTEGER)");
    bt_exec(db, "CREATE UNIQUE INDEX nul_y ON nul (y)");
    assert_int_equal(sqlq_cmd(c, "setup --table nul --key-columns y"), 2);
    if (!log_has(c, "column y of unique index nul_y may be NULL"))
        fail_log(c, "a nullable unique key was not refused clearly");
    assert_int_equal(sqlq_cmd(c, "setup --table nul --key-columns x"), 2);
    if (!log_has(c, "no unique index or constraint is on exactly these columns"))
        fail_log(c, "columns without a unique index were not refused clearly");

    sqlq_db_close(db);
    db = kc_setup(c);
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1)");
    remove(c->log);
    const char *other[] = {"--db",   c->conn,  "--table",       "kc",   "--queue",
                           c->queue, "--once", "--key-columns", "code", NULL};
    assert_int_equal(bt_bridge_run(c->q.conn, c->log, other, 60000, 1), 2);
    if (!log_has(c, "key key_columns: 'code'"))
        fail_log(c, "the bridge's refusal of a key other than setup's does not name key_columns");
    json_t *msgs = bt_drain(&c->q, c->queue, 300, 5000);
    assert_int_equal(json_array_size(msgs), 0);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* A table with a primary key may be keyed by other unique columns: messages carry those, a
 * delete's too. The logical source refuses such a key until the replica identity holds it
 * (the stream sends a deleted row's identity columns only). */
static void test_key_columns_instead_of_primary_key(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE TABLE pk (id INTEGER PRIMARY KEY, sku VARCHAR(20) NOT NULL, qty INTEGER)");
    bt_exec(db, "CREATE UNIQUE INDEX pk_sku ON pk (sku)");
    if (logical()) {
        assert_int_equal(sqlq_cmd(c, "setup --table pk --key-columns sku"), 2);
        if (!log_has(c, "keyed by sku, which its replica identity") ||
            !log_has(c, "REPLICA IDENTITY USING INDEX pk_sku (or FULL)"))
            fail_log(c, "a key the replica identity does not hold was not refused clearly");
        bt_exec(db, "ALTER TABLE pk REPLICA IDENTITY USING INDEX pk_sku");
    }
    assert_int_equal(sqlq_cmd(c, "setup --table pk --key-columns sku"), 0);
    bt_exec(db, "INSERT INTO pk VALUES (1, 's1', 5)");
    bt_exec(db, "UPDATE pk SET qty = 6 WHERE id = 1");
    bt_case_run_once(c, "pk", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    /* the logical source sends each transaction's state of a key; the log, the latest */
    assert_int_equal(json_array_size(msgs), logical() ? 2 : 1);
    json_t *by = bt_by_key(msgs);
    json_t *m = change_of(by, "{\"sku\":\"s1\"}", json_array_size(msgs) - 1);
    assert_int_equal(qty_of(m), 6);
    json_decref(by);
    json_decref(msgs);

    bt_exec(db, "DELETE FROM pk WHERE id = 1");
    bt_case_run_once(c, "pk", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 1);
    by = bt_by_key(msgs);
    assert_string_equal(op_of(change_of(by, "{\"sku\":\"s1\"}", 0)), "delete");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* The key from the environment (setup) and from a config file's route (bridge, cursor source
 * of a second table), with other routes keyed by their primary key. */
static void test_key_columns_env_and_routes(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, KC_CREATE);
    kc_index(db);
    bt_exec(db, "CREATE TABLE pk (id INTEGER PRIMARY KEY, qty INTEGER)");
    assert_int_equal(sqlq_cmd(c, "setup --table kc --table pk"), 2); /* kc has no key */
    assert_int_equal(sqlq_cmd(c, "setup --table kc --table pk --key-columns code,region"), 2);
    assert_int_equal(sqlq_test_sh("SQLQ_DB_CONNECTION='%s' SQLQ_KEY_COLUMNS=region,code '%s' setup "
                                  "--table kc >>'%s' 2>&1",
                                  c->conn, sqlq_test_bin(), c->log),
                     0);
    char file[600];
    snprintf(file, sizeof(file), "%s.json", c->log);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"polling_interval_ms\": 20, \"routes\": [{\"table\": \"kc\", \"queue\": \"%s\", "
            "\"key_columns\": \"code, region\"}, {\"table\": \"pk\", \"queue\": \"%s\"}]}",
            c->queue, c->queue);
    fclose(f);
    char args[800];
    snprintf(args, sizeof(args), "setup --config '%s'", file);
    assert_int_equal(sqlq_cmd(c, args), 0); /* kc again (its route's key), and pk */
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1)");
    bt_exec(db, "INSERT INTO pk VALUES (7, 1)");
    snprintf(args, sizeof(args), "bridge --config '%s' --once", file);
    assert_int_equal(sqlq_cmd(c, args), 0);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    json_t *by = bt_by_key(msgs);
    assert_int_equal(json_array_size(msgs), 2);
    assert_string_equal(op_of(change_of(by, "{\"code\":\"a\",\"region\":\"eu\"}", 0)), "insert");
    assert_string_equal(op_of(change_of(by, "{\"id\":7}", 0)), "insert");
    json_decref(by);
    json_decref(msgs);
    remove(file);
    sqlq_db_close(db);
}

/* The cursor source (nothing installed) keyed by the unique index. */
static void test_key_columns_cursor_source(void **state)
{
    SKIP_ON_LOGICAL("the cursor source's case, run under the change log");
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, KC_CREATE);
    kc_index(db);
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1), ('b', 'eu', 2, 2)");
    const char *cursor[] = {"--source",      "cursor",          "--cursor-column",
                            "ver",           "--safety-lag-ms", "0",
                            "--key-columns", "region,code",     NULL};
    bt_case_run_once(c, "kc", cursor);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    json_t *by = bt_by_key(msgs);
    assert_int_equal(qty_of(change_of(by, "{\"code\":\"a\",\"region\":\"eu\"}", 0)), 1);
    json_decref(by);
    json_decref(msgs);
    /* backfill of a table without a change log: --key-columns pages by the unique key */
    char args[300];
    snprintf(args, sizeof(args),
             "backfill --table kc --queue %s --cursor-column ver --key-columns region,code",
             c->queue);
    assert_int_equal(sqlq_cmd(c, args), 0);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_int_equal(json_array_size(msgs), 2);
    by = bt_by_key(msgs);
    assert_string_equal(op_of(change_of(by, "{\"code\":\"b\",\"region\":\"eu\"}", 0)), "read");
    json_decref(by);
    json_decref(msgs);
    snprintf(args, sizeof(args), "backfill --table kc --queue %s --restart", c->queue);
    assert_int_equal(sqlq_cmd(c, args), 2); /* no primary key, no change log, no flag */
    sqlq_db_close(db);
}

/* The unique index dropped under a running bridge (started without the flag) stops it with
 * an error naming the key; the change made meanwhile stays in the log and is delivered once
 * the index is back. */
static void test_key_columns_index_dropped(void **state)
{
    SKIP_ON_LOGICAL("the logical source takes the key's values from the stream");
    ctx *c = *state;
    sqlq_db *db = kc_setup(c);
    pid_t pid = bt_case_start(c, "kc");
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1)");
    json_t *msgs = receive(c, 1);
    json_decref(msgs);

    bt_exec(db, db_under_test->drop_index);
    sqlq_db *later = bt_db(c->conn); /* a new session: no cached plan of the old table */
    bt_exec(later, "INSERT INTO kc VALUES ('b', 'eu', 2, 2)");
    sqlq_db_close(later);
    for (int i = 0; i < 200 && !log_has(c, "table_key_changed"); i++)
        bt_sleep_ms(50);
    msgs = bt_drain(&c->q, c->queue, 1000, 3000);
    assert_int_equal(json_array_size(msgs), 0);
    json_decref(msgs);
    if (!log_has(c, "table_key_changed"))
        fail_log(c, "no error naming the dropped key");
    kill(pid, SIGTERM);
    bt_wait(pid, 30000);

    remove(c->log);
    char args[256];
    snprintf(args, sizeof(args), "bridge --table kc --queue %s --once", c->queue);
    assert_int_equal(sqlq_cmd(c, args), 1);
    if (!log_has(c, "no unique index") || !log_has(c, "keyed by (region,code)"))
        fail_log(c, "--once: no error naming the missing unique index");

    kc_index(db);
    bt_case_run_once(c, "kc", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    json_t *by = bt_by_key(msgs);
    assert_string_equal(op_of(change_of(by, "{\"code\":\"b\",\"region\":\"eu\"}", 0)), "insert");
    json_decref(by);
    json_decref(msgs);
    sqlq_db_close(db);
}

/* The unique index made again over the same columns in another order (and under another
 * name) under a running bridge: the key is the same set of columns, so the bridge goes on with
 * the change log's key (no table_key_changed); so do setup run again and a new bridge. */
static void test_key_columns_index_reordered(void **state)
{
    SKIP_ON_LOGICAL("the logical source takes the key's values from the stream");
    ctx *c = *state;
    sqlq_db *db = kc_setup(c);
    pid_t pid = bt_case_start(c, "kc");
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1)");
    json_decref(receive(c, 1));

    bt_exec(db, db_under_test->drop_index);
    bt_exec(db, "CREATE UNIQUE INDEX kc_u ON kc (code, region)");
    sqlq_db *later = bt_db(c->conn);
    bt_exec(later, "INSERT INTO kc VALUES ('b', 'eu', 2, 2)");
    sqlq_db_close(later);
    json_t *msgs = receive(c, 1);
    assert_string_equal(op_of(json_array_get(msgs, 0)), "insert");
    json_t *key = json_object_get(json_array_get(msgs, 0), "key");
    char *k = json_dumps(key, JSON_COMPACT);
    assert_string_equal(k, "{\"region\":\"eu\",\"code\":\"b\"}"); /* the log's order */
    free(k);
    json_decref(msgs);
    if (log_has(c, "table_key_changed"))
        fail_log(c, "the same key columns in another order stopped the bridge");

    bt_exec(db, db_under_test->drop_index);
    bt_exec(db, "CREATE UNIQUE INDEX kc_u2 ON kc (code, region)");
    later = bt_db(c->conn);
    bt_exec(later, "UPDATE kc SET qty = 3 WHERE code = 'b'");
    sqlq_db_close(later);
    msgs = receive(c, 1);
    assert_string_equal(op_of(json_array_get(msgs, 0)), "update");
    assert_int_equal(qty_of(json_array_get(msgs, 0)), 3);
    json_decref(msgs);
    if (log_has(c, "table_key_changed"))
        fail_log(c, "an index of the same key columns under another name stopped the bridge");
    kill(pid, SIGTERM);
    bt_wait(pid, 30000);

    assert_int_equal(sqlq_cmd(c, "setup --table kc --key-columns 'code, region'"), 0);
    bt_exec(db, "INSERT INTO kc VALUES ('c', 'eu', 4, 4)");
    bt_case_run_once(c, "kc", NULL);
    msgs = bt_drain(&c->q, c->queue, 500, 20000);
    json_t *by = bt_by_key(msgs);
    assert_string_equal(op_of(change_of(by, "{\"code\":\"c\",\"region\":\"eu\"}", 0)), "insert");
    json_decref(by);
    json_decref(msgs);
    if (log_has(c, "table_key_changed"))
        fail_log(c, "a new bridge refused the index in another order");
    sqlq_db_close(db);
}

/* A key column made nullable under a running bridge stops it too (the key check reads the
 * columns' nullability): nothing is published after it. */
static void test_key_columns_made_nullable(void **state)
{
    SKIP_ON_LOGICAL("the logical source takes the key's values from the stream");
    ctx *c = *state;
    if (!db_under_test->nullable) {
        skip(); /* SQLite has no ALTER COLUMN */
        return;
    }
    sqlq_db *db = kc_setup(c);
    pid_t pid = bt_case_start(c, "kc");
    bt_exec(db, "INSERT INTO kc VALUES ('a', 'eu', 1, 1)");
    json_decref(receive(c, 1));
    bt_exec(db, db_under_test->nullable);
    sqlq_db *later = bt_db(c->conn);
    bt_exec(later, "UPDATE kc SET qty = 2 WHERE code = 'a'");
    sqlq_db_close(later);
    for (int i = 0; i < 200 && !log_has(c, "table_key_changed"); i++)
        bt_sleep_ms(50);
    json_t *msgs = bt_drain(&c->q, c->queue, 1000, 3000);
    assert_int_equal(json_array_size(msgs), 0);
    json_decref(msgs);
    if (!log_has(c, "table_key_changed") || !log_has(c, "may be NULL"))
        fail_log(c, "no error naming the nullable key column");
    kill(pid, SIGTERM);
    bt_wait(pid, 30000);
    sqlq_db_close(db);
}

/* SQLite: a key column declared COLLATE NOCASE whose value changes only in case ('Ab' to
 * 'AB'): every message with a row carries the row's key values, so the key agrees with the row
 * (sqlq consume --sql refuses a message whose row disagrees with its key). */
static void test_key_nocase_collation(void **state)
{
    ctx *c = *state;
    if (strcmp(db_under_test->name, "sqlite") != 0) {
        skip();
        return;
    }
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE TABLE kn (a TEXT COLLATE NOCASE NOT NULL PRIMARY KEY, v INTEGER)");
    assert_int_equal(sqlq_cmd(c, "setup --table kn"), 0);
    bt_exec(db, "INSERT INTO kn VALUES ('Ab', 1)");
    bt_exec(db, "UPDATE kn SET a = 'AB', v = 2 WHERE a = 'Ab'");
    bt_case_run_once(c, "kn", NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    assert_true(json_array_size(msgs) >= 1);
    bool saw_row = false;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        json_t *row = json_object_get(m, "row");
        const char *key = json_string_value(json_object_get(json_object_get(m, "key"), "a"));
        if (!json_is_object(row))
            continue;
        saw_row = true;
        const char *in_row = json_string_value(json_object_get(row, "a"));
        if (!key || !in_row || strcmp(key, in_row) != 0) {
            char *text = json_dumps(m, JSON_COMPACT);
            fail_msg("key disagrees with row: %s", text ? text : "?");
        }
    }
    assert_true(saw_row);
    json_decref(msgs);
    sqlq_db_close(db);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_key_columns_inserts_updates_deletes, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_refused, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_instead_of_primary_key, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_cursor_source, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_env_and_routes, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_index_dropped, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_made_nullable, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_columns_index_reordered, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_key_nocase_collation, setup, bt_case_teardown),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
