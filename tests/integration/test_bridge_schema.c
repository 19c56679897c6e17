/* `sqlq bridge` while the watched table's schema changes under it, on the database
 * $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb):
 * every change made after ADD, DROP, RENAME COLUMN and a type change arrives once, with the
 * columns the table has when it is read, and no poll fails; a change of the primary key (or of
 * a key column's name or type) stops the capture loudly (error naming the table and `sqlq
 * setup`, /readyz 503, exit 1 with --once) and publishes nothing it cannot attribute; a table
 * built again (its triggers gone with the old one) is said to need setup. How each database
 * changes a type and a key is in `databases` below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bridge_support.h"
#include "testdb.h"
#include "testenv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A change of the table's key: the statements, a write after them (on a new session), a write
 * after setup again, and the key's new column. */
typedef struct key_change {
    const char *ddl[6];
    const char *insert_after;
    const char *insert_later;
    const char *new_key;
} key_change;

/* What differs per database: how a column's type changes (NULL: the table is built again, see
 * rebuild), how the key changes, and how the table is built again under its name. */
typedef struct database {
    const char *name;
    const char *retype_quantity;
    key_change key_changes[3];
    const char *rebuild[7]; /* items (id, qty) built again as items (id, qty text) */
    bool rebuild_atomic;    /* in one transaction: no moment without the table */
} database;

static const char LATER[] = "INSERT INTO items (id, code, qty) VALUES (50, 'c50', 1)";

static const database databases[] = {
    {"sqlite",
     NULL,
     /* SQLite changes a key by building the table again (its triggers go with the old table) */
     {{{"BEGIN",
        "CREATE TABLE items_new (id integer NOT NULL, code text PRIMARY KEY, qty integer)",
        "INSERT INTO items_new SELECT id, code, qty FROM items", "DROP TABLE items",
        "ALTER TABLE items_new RENAME TO items", "COMMIT"},
       "INSERT INTO items VALUES (4, 'c4', 1)", LATER, "code"}},
     {"BEGIN", "CREATE TABLE items_new (id integer PRIMARY KEY, qty text)",
      "INSERT INTO items_new SELECT * FROM items", "DROP TABLE items",
      "ALTER TABLE items_new RENAME TO items", "COMMIT"},
     true},
    {"postgres",
     "ALTER TABLE items ALTER COLUMN quantity TYPE text USING quantity::text",
     {{{"ALTER TABLE items DROP CONSTRAINT items_pkey, ADD PRIMARY KEY (code)"},
       "INSERT INTO items VALUES (4, 'c4', 1)", LATER, "code"},
      {{"ALTER TABLE items ALTER COLUMN id TYPE bigint"}, "INSERT INTO items VALUES (4, 'c4', 1)",
       LATER, "id"},
      /* The update commits with the rename: the change log holds a change under the old name
       * (the poll's join on it fails), and the trigger, naming the old column, takes no more. */
      {{"BEGIN", "UPDATE items SET qty = 2 WHERE id = 1",
        "ALTER TABLE items RENAME COLUMN id TO ident", "COMMIT"},
       "SELECT 1", "INSERT INTO items (ident, code, qty) VALUES (50, 'c50', 1)", "ident"}},
     /* public.items_new: the test's role is named sqlq, so "$user" in its search path is
      * sqlq's own schema and an unqualified CREATE TABLE would build sqlq.items_new */
     {"BEGIN", "CREATE TABLE public.items_new (id integer PRIMARY KEY, qty text)",
      "INSERT INTO public.items_new SELECT * FROM items", "DROP TABLE items",
      "ALTER TABLE public.items_new RENAME TO items", "COMMIT"},
     true},
    /* MariaDB commits before each DDL statement: a key rename cannot share a transaction */
    {"mariadb",
     "ALTER TABLE items MODIFY quantity text",
     {{{"ALTER TABLE items DROP PRIMARY KEY, ADD PRIMARY KEY (code)"},
       "INSERT INTO items VALUES (4, 'c4', 1)", LATER, "code"},
      {{"ALTER TABLE items MODIFY id bigint"}, "INSERT INTO items VALUES (4, 'c4', 1)", LATER,
       "id"},
      {{"ALTER TABLE items RENAME COLUMN id TO ident"}, "SELECT 1",
       "INSERT INTO items (ident, code, qty) VALUES (50, 'c50', 1)", "ident"}},
     {"CREATE TABLE items_new (id integer PRIMARY KEY, qty text)",
      "INSERT INTO items_new SELECT * FROM items", "DROP TABLE items",
      "ALTER TABLE items_new RENAME TO items"},
     false},
};

static const database *db_under_test;

typedef struct ctx {
    bt_queue q;
    const key_change *kc; /* the key-change case's (its prestate) */
    char *conn;
    char queue[64];
    char log[512];
    int port; /* /readyz of a running bridge */
} ctx;

static int setup(void **state)
{
    ctx *c = calloc(1, sizeof(*c));
    c->kc = *state;
    bt_queue_open(&c->q, NULL);
    c->conn = sqlq_test_create_db(db_under_test->name, "schema");
    char name[64];
    snprintf(name, sizeof(name), "schema-%s", db_under_test->name);
    sqlq_test_unique_name(name, c->queue, sizeof(c->queue));
    snprintf(name, sizeof(name), "bridge-schema-%s", db_under_test->name);
    bt_log_path(name, c->log, sizeof(c->log));
    remove(c->log); /* each test reads its own log */
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    ctx *c = *state;
    bt_drop_slots(c->conn);
    bt_queue_drop(&c->q, c->queue);
    bt_queue_close(&c->q);
    free(c->conn);
    free(c);
    return 0;
}

static bool log_has(const ctx *c, const char *needle)
{
    return bt_log_has(c->log, needle);
}

static int free_port(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "%s/tests/support/free_port.sh", sqlq_test_source_dir());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int port = 0;
    if (fscanf(p, "%d", &port) != 1)
        port = 0;
    pclose(p);
    assert_true(port > 0);
    return port;
}

static pid_t start_bridge(ctx *c)
{
    static char listen[64];
    c->port = free_port();
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", c->port);
    const char *args[] = {"--db", c->conn, "--table", "items", "--queue", c->queue,
                          "--polling-interval-ms", "50", "--lease-s", "10", "--listen", listen,
                          NULL};
    return bt_bridge_start(c->q.conn, c->log, args);
}

static bool ready_is(const ctx *c, int status)
{
    return sqlq_test_sh("test \"$(curl -s -o /dev/null -w '%%{http_code}' "
                        "http://127.0.0.1:%d/readyz)\" = %d",
                        c->port, status) == 0;
}

/* Whether /readyz answers status within 30 s. */
static bool ready_within(const ctx *c, int status)
{
    for (int i = 0; i < 150; i++) {
        if (ready_is(c, status))
            return true;
        bt_sleep_ms(200);
    }
    return false;
}

static void wait_ready(const ctx *c, int status, const char *why)
{
    if (ready_within(c, status))
        return;
    bt_print_log(c->log);
    fail_msg("/readyz never answered %d: %s", status, why);
}

static void stop_bridge(ctx *c, pid_t pid)
{
    kill(pid, SIGTERM);
    int code = bt_wait(pid, 30000);
    if (code != 0)
        bt_print_log(c->log);
    assert_int_equal(code, 0);
}

/* Run statements (up to n, or the first NULL); "BEGIN" and "COMMIT" open and end a transaction
 * (SQLite: BEGIN IMMEDIATE). */
static void exec_each(sqlq_db *db, const char *const *sql, size_t n)
{
    sqlq_error err;
    sqlq_error_clear(&err);
    for (size_t i = 0; i < n && sql[i]; i++) {
        if (strcmp(sql[i], "BEGIN") == 0)
            assert_int_equal(sqlq_db_begin(db, &err), SQLQ_OK);
        else if (strcmp(sql[i], "COMMIT") == 0)
            assert_int_equal(sqlq_db_commit(db, &err), SQLQ_OK);
        else
            bt_exec(db, sql[i]);
    }
}

/* The values of one insert: the id, then per shape of the table. */
typedef enum { V_NOTE_QTY, V_NOTE_QTY_EXTRA, V_QTY_EXTRA, V_TEXT_EXTRA, V_CODE, V_ID } values_kind;

static void values_of(values_kind k, int id, char *out, size_t size)
{
    switch (k) {
    case V_NOTE_QTY: snprintf(out, size, "%d, 'note', %d", id, id); break;
    case V_NOTE_QTY_EXTRA: snprintf(out, size, "%d, 'note', %d, 'extra'", id, id); break;
    case V_QTY_EXTRA: snprintf(out, size, "%d, %d, 'extra'", id, id); break;
    case V_TEXT_EXTRA: snprintf(out, size, "%d, 'q%d', 'extra'", id, id); break;
    case V_CODE: snprintf(out, size, "%d, 'c%d', 1", id, id); break;
    case V_ID: snprintf(out, size, "%d, %d", id, id); break;
    }
}

/* Insert ids from..to into the columns `cols`. */
static void insert_range(sqlq_db *db, int from, int to, const char *cols, values_kind k)
{
    for (int id = from; id <= to; id++) {
        char v[200], sql[400];
        values_of(k, id, v, sizeof(v));
        snprintf(sql, sizeof(sql), "INSERT INTO items (%s) VALUES (%s)", cols, v);
        bt_exec(db, sql);
    }
}

/* Messages until `want` have come (or 30 s): every change is expected exactly once. */
static json_t *receive(ctx *c, size_t want)
{
    return bt_receive(&c->q, c->queue, c->log, want);
}

/* Every message's row has exactly the columns `expect` (comma-separated, sorted). */
static void check_columns(json_t *msgs, const char *expect)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        json_t *row = json_object_get(m, "row");
        assert_true(json_is_object(row));
        char got[300] = "";
        const char *names[16];
        size_t n = 0;
        const char *k;
        json_t *v;
        json_object_foreach(row, k, v) {
            if (n < 16)
                names[n++] = k;
        }
        for (size_t a = 0; a < n; a++) /* sort: objects keep no order */
            for (size_t b = a + 1; b < n; b++)
                if (strcmp(names[b], names[a]) < 0) {
                    const char *t = names[a];
                    names[a] = names[b];
                    names[b] = t;
                }
        for (size_t a = 0; a < n; a++) {
            strncat(got, a ? "," : "", sizeof(got) - strlen(got) - 1);
            strncat(got, names[a], sizeof(got) - strlen(got) - 1);
        }
        if (strcmp(got, expect) != 0)
            fail_msg("message %s: columns %s, expected %s", json_dumps(m, JSON_COMPACT), got,
                     expect);
    }
}

/* Distinct "id" values of the messages: from..to, each once. */
static void check_ids(json_t *msgs, int from, int to)
{
    assert_int_equal(json_array_size(msgs), (size_t)(to - from + 1));
    assert_int_equal(bt_distinct_ids(msgs), (size_t)(to - from + 1));
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        json_int_t id = json_integer_value(json_object_get(json_object_get(m, "key"), "id"));
        assert_true(id >= from && id <= to);
    }
}

static json_t *row_of(json_t *msgs, json_int_t id)
{
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
        if (json_integer_value(json_object_get(json_object_get(m, "key"), "id")) == id)
            return json_object_get(m, "row");
    fail_msg("no message for id %lld", (long long)id);
    return NULL;
}

/* SQLite changes a column's type by building the table again, which drops its triggers:
 * `sqlq setup` installs them again (the change log, keyed the same, stays). */
static void sqlite_retype_quantity(ctx *c, sqlq_db *db)
{
    static const char *const rebuild[] = {
        "BEGIN",
        "CREATE TABLE items_new (id integer PRIMARY KEY, quantity text, extra text)",
        "INSERT INTO items_new SELECT id, CAST(quantity AS text), extra FROM items",
        "DROP TABLE items",
        "ALTER TABLE items_new RENAME TO items",
        "COMMIT",
        NULL};
    exec_each(db, rebuild, sizeof(rebuild) / sizeof(rebuild[0]));
    bt_setup(c->conn, "items");
}

static void test_bridge_schema_columns(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE TABLE items (id integer PRIMARY KEY, note text, qty integer)");
    bt_setup(c->conn, "items");
    pid_t pid = start_bridge(c);

    insert_range(db, 1, 5, "id, note, qty", V_NOTE_QTY);
    json_t *m = receive(c, 5);
    check_ids(m, 1, 5);
    check_columns(m, "id,note,qty");
    json_decref(m);

    bt_exec(db, "ALTER TABLE items ADD COLUMN extra text");
    insert_range(db, 6, 10, "id, note, qty, extra", V_NOTE_QTY_EXTRA);
    bt_exec(db, "UPDATE items SET qty = 100 WHERE id = 1");
    m = receive(c, 6);
    check_columns(m, "extra,id,note,qty");
    assert_string_equal(json_string_value(json_object_get(row_of(m, 7), "extra")), "extra");
    assert_true(json_is_null(json_object_get(row_of(m, 1), "extra")));
    assert_int_equal(json_integer_value(json_object_get(row_of(m, 1), "qty")), 100);
    json_decref(m);

    bt_exec(db, "ALTER TABLE items DROP COLUMN note");
    insert_range(db, 11, 15, "id, qty, extra", V_QTY_EXTRA);
    m = receive(c, 5);
    check_ids(m, 11, 15);
    check_columns(m, "extra,id,qty");
    json_decref(m);

    bt_exec(db, "ALTER TABLE items RENAME COLUMN qty TO quantity");
    insert_range(db, 16, 20, "id, quantity, extra", V_QTY_EXTRA);
    m = receive(c, 5);
    check_ids(m, 16, 20);
    check_columns(m, "extra,id,quantity");
    assert_int_equal(json_integer_value(json_object_get(row_of(m, 16), "quantity")), 16);
    json_decref(m);

    if (log_has(c, "poll_failed")) {
        bt_print_log(c->log);
        fail_msg("a poll failed");
    }
    /* SQLite: between the rebuild and setup the bridge may find the triggers gone and say so
     * (test_bridge_schema_sqlite_triggers_gone), a failed poll it recovers from. */
    bool failures_allowed = !db_under_test->retype_quantity;
    if (db_under_test->retype_quantity)
        bt_exec(db, db_under_test->retype_quantity);
    else
        sqlite_retype_quantity(c, db);
    insert_range(db, 21, 25, "id, quantity, extra", V_TEXT_EXTRA);
    m = receive(c, 5);
    check_ids(m, 21, 25);
    check_columns(m, "extra,id,quantity");
    assert_string_equal(json_string_value(json_object_get(row_of(m, 21), "quantity")), "q21");
    json_decref(m);

    stop_bridge(c, pid);
    /* The change log's poll logs each new shape; the logical source takes it from the stream's
     * Relation messages, unlogged. */
    bool shape_logged = strcmp(sqlq_test_source(), "logical") != 0;
    if ((log_has(c, "poll_failed") && !failures_allowed) ||
        (shape_logged && !log_has(c, "table_shape_changed"))) {
        bt_print_log(c->log);
        fail_msg("expected no failed poll and the shape changes logged");
    }
    sqlq_db_close(db);
}

/* The key change `ddl` (NULL-terminated) stops a running bridge without publishing the change
 * made after it, then `sqlq bridge --once` exits 1 saying to run setup again; after `sqlq
 * setup --drop` and `sqlq setup` changes flow again (`insert_later`), keyed by the new key. */
static void test_bridge_schema_key_change(void **state)
{
    if (strcmp(sqlq_test_source(), "logical") == 0) {
        /* docs/logical-source.md, Messages: only a key column dropped or renamed stops it */
        print_message("skipped: the logical source keeps its route's key when the primary key moves\n");
        skip();
    }
    ctx *c = *state;
    const char *const *ddl = c->kc->ddl;
    const char *insert_after = c->kc->insert_after, *insert_later = c->kc->insert_later;
    const char *new_key = c->kc->new_key;
    sqlq_db *db = bt_db(c->conn);
    sqlq_test_db_execf(db, "CREATE TABLE items (id integer PRIMARY KEY, code %s NOT NULL UNIQUE, "
                           "qty integer)",
                       sqlq_test_sql_under_test()->key_text);
    bt_setup(c->conn, "items");
    pid_t pid = start_bridge(c);
    insert_range(db, 1, 3, "id, code, qty", V_CODE);
    json_t *m = receive(c, 3);
    json_decref(m);
    wait_ready(c, 200, "before the key change");

    exec_each(db, ddl, 6);
    /* A new session: one that ran the trigger before keeps its plan for the old key type */
    sqlq_db *later = bt_db(c->conn);
    bt_exec(later, insert_after);
    sqlq_db_close(later);
    wait_ready(c, 503, "after the key change");
    m = bt_drain(&c->q, c->queue, 1500, 3000);
    assert_int_equal(json_array_size(m), 0); /* nothing published under a key that changed */
    json_decref(m);
    if (!log_has(c, "table_key_changed") || !log_has(c, "sqlq setup --table"))
        fail_msg("no error naming the key change and sqlq setup in the log");
    stop_bridge(c, pid);

    const char *once[] = {"--db", c->conn, "--table", "items", "--queue", c->queue, "--once", NULL};
    remove(c->log);
    assert_int_equal(bt_bridge_run(c->q.conn, c->log, once, 60000, 1), 1);
    if (!log_has(c, "sqlq setup --table"))
        fail_msg("--once: no error saying to run sqlq setup again");

    /* the change logged under the old key cannot be delivered: --force discards it */
    assert_int_equal(sqlq_test_sh("'%s' setup --db '%s' --table items --drop --force >/dev/null && "
                                  "'%s' setup --db '%s' --table items >/dev/null",
                                  sqlq_test_bin(), c->conn, sqlq_test_bin(), c->conn),
                     0);
    bt_exec(db, insert_later);
    assert_int_equal(bt_bridge_run(c->q.conn, c->log, once, 60000, 0), 0);
    m = receive(c, 1);
    json_t *key = json_object_get(json_array_get(m, 0), "key");
    assert_non_null(json_object_get(key, new_key));
    json_decref(m);
    sqlq_db_close(db);
}

/* Columns named like the poll's own (k0, m_v, m_op, m_att, m_tok, m_row, m_key, m_cols): read
 * by position, each keeps its value and the change its key, op and version. */
static void test_bridge_schema_own_names(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    bt_exec(db, "CREATE TABLE items (id integer PRIMARY KEY, k0 text, m_v text, m_op text, "
                "m_att text, m_tok text, m_row text, m_key text, m_cols text)");
    bt_setup(c->conn, "items");
    bt_exec(db, "INSERT INTO items VALUES (7, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')");
    const char *once[] = {"--db", c->conn, "--table", "items", "--queue", c->queue, "--once", NULL};
    assert_int_equal(bt_bridge_run(c->q.conn, c->log, once, 60000, 0), 0);
    json_t *m = receive(c, 1);
    json_t *msg = json_array_get(m, 0);
    assert_string_equal(json_string_value(json_object_get(msg, "op")), "insert");
    assert_true(json_integer_value(json_object_get(msg, "version")) > 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(msg, "key"), "id")), 7);
    json_t *row = json_object_get(msg, "row");
    static const char *const names[] = {"k0", "m_v", "m_op", "m_att", "m_tok", "m_row", "m_key",
                                        "m_cols"};
    for (size_t i = 0; i < 8; i++) {
        char want[2] = {(char)('a' + i), '\0'};
        const char *got = json_string_value(json_object_get(row, names[i]));
        if (!got || strcmp(got, want) != 0)
            fail_msg("column %s: %s", names[i], json_dumps(row, JSON_COMPACT));
    }
    assert_int_equal(json_integer_value(json_object_get(row, "id")), 7);
    assert_int_equal(json_object_size(row), 9);
    json_decref(m);
    sqlq_db_close(db);
}

/* items (id, qty) set up, a bridge running and its first three rows delivered: the bridge's pid,
 * the database in *db. */
static pid_t items_streaming(ctx *c, sqlq_db **db)
{
    *db = bt_db(c->conn);
    bt_exec(*db, "CREATE TABLE items (id integer PRIMARY KEY, qty integer)");
    bt_setup(c->conn, "items");
    pid_t pid = start_bridge(c);
    insert_range(*db, 1, 3, "id, qty", V_ID);
    json_decref(receive(c, 3));
    return pid;
}

/* Building the table again (as SQLite must to change a type) drops sqlq's triggers with the old
 * table (the logical source: leaves the publication, which held the old table). A running
 * bridge says so (the writes made meanwhile are not captured), /readyz 503, and goes on after
 * setup. */
static void test_bridge_schema_triggers_gone(void **state)
{
    ctx *c = *state;
    sqlq_db *db = NULL;
    pid_t pid = items_streaming(c, &db);
    wait_ready(c, 200, "before the rebuild");
    exec_each(db, db_under_test->rebuild, 7);
    if (!ready_within(c, 503))
        fail_msg("/readyz never answered 503 after the rebuild");
    for (int i = 0; i < 100 && !log_has(c, "sqlq setup --table items"); i++)
        bt_sleep_ms(100); /* servers: the poll that failed is followed by the open that says so */
    if (!log_has(c, "sqlq setup --table items"))
        fail_msg("no error saying to run sqlq setup");
    /* MariaDB commits each DDL statement: a poll between DROP and RENAME finds no table, and
     * the capture, opened again, finds no change log: either way it is said */
    if (!log_has(c, "capture_source_gone") &&
        (db_under_test->rebuild_atomic || !log_has(c, "is not installed")))
        fail_msg("a table built again is not told as capture_source_gone");
    if (log_has(c, "change log of table sqlq.items"))
        fail_msg("the rebuilt public.items named in sqlq's schema");
    bt_setup(c->conn, "items");
    wait_ready(c, 200, "after setup");
    insert_range(db, 4, 6, "id, qty", V_ID);
    json_t *m = receive(c, 3);
    check_ids(m, 4, 6);
    json_decref(m);
    stop_bridge(c, pid);
    sqlq_db_close(db);
}

/* The table built again and set up again at once, before a running bridge looked: the changes
 * written after the setup arrive (the logical source streams the new table, not the old one's
 * relation, whose stream knew nothing of the new). */
static void test_bridge_schema_rebuilt_and_set_up(void **state)
{
    ctx *c = *state;
    sqlq_db *db = NULL;
    pid_t pid = items_streaming(c, &db);
    exec_each(db, db_under_test->rebuild, 7);
    bt_setup(c->conn, "items");
    insert_range(db, 4, 6, "id, qty", V_ID);
    json_t *m = receive(c, 3);
    check_ids(m, 4, 6);
    assert_string_equal(json_string_value(json_object_get(row_of(m, 4), "qty")), "4");
    json_decref(m);
    wait_ready(c, 200, "after the rebuild and setup");
    /* the logical source says so (writes between the rebuild and the setup were not streamed),
     * whether it looked before the setup or after: it looks once a second, so the changes may
     * arrive before it did */
    bool logical = strcmp(sqlq_test_source(), "logical") == 0;
    for (int i = 0; i < 50 && logical && !log_has(c, "logical_table_rebuilt") &&
                    !log_has(c, "capture_source_gone");
         i++)
        bt_sleep_ms(100);
    if (logical && !log_has(c, "logical_table_rebuilt") && !log_has(c, "capture_source_gone")) {
        bt_print_log(c->log);
        fail_msg("the table built again was not told");
    }
    stop_bridge(c, pid);
    sqlq_db_close(db);
}

/* Built again, stopped, set up, streaming again: three times over, each stop long enough for
 * the route to reconnect while it waits for setup. Each time the changes written after the
 * setup arrive: the route's wake-up follows the capture it reopens (the logical source's is the
 * capture's own stream, closed with it). */
static void test_bridge_schema_gone_and_back_again(void **state)
{
    ctx *c = *state;
    sqlq_db *db = NULL;
    pid_t pid = items_streaming(c, &db);
    for (int round = 1; round <= 3; round++) {
        wait_ready(c, 200, "before the rebuild");
        exec_each(db, db_under_test->rebuild, 7);
        if (!ready_within(c, 503))
            fail_msg("round %d: /readyz never answered 503 after the rebuild", round);
        bt_sleep_ms(3000); /* failed reopens meanwhile, a reconnect among them */
        bt_setup(c->conn, "items");
        wait_ready(c, 200, "after setup");
        int from = round * 10;
        insert_range(db, from, from + 2, "id, qty", V_ID);
        json_t *m = receive(c, 3);
        check_ids(m, from, from + 2);
        json_decref(m);
    }
    stop_bridge(c, pid);
    sqlq_db_close(db);
}

int main(void)
{
    db_under_test = SQLQ_TEST_DATABASE_ENTRY(databases);
    const key_change *k = db_under_test->key_changes;
    struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bridge_schema_columns, setup, teardown),
        cmocka_unit_test_prestate_setup_teardown(test_bridge_schema_key_change, setup, teardown,
                                                 (void *)(uintptr_t)&k[0]),
        cmocka_unit_test_prestate_setup_teardown(test_bridge_schema_key_change, setup, teardown,
                                                 (void *)(uintptr_t)&k[1]),
        cmocka_unit_test_prestate_setup_teardown(test_bridge_schema_key_change, setup, teardown,
                                                 (void *)(uintptr_t)&k[2]),
        cmocka_unit_test_setup_teardown(test_bridge_schema_triggers_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bridge_schema_rebuilt_and_set_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bridge_schema_gone_and_back_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bridge_schema_own_names, setup, teardown),
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) /* the key changes it has */
        if (tests[i].test_func != test_bridge_schema_key_change ||
            ((const key_change *)tests[i].initial_state)->ddl[0])
            tests[n++] = tests[i];
    return _cmocka_run_group_tests(db_under_test->name, tests, n, NULL, NULL);
}
