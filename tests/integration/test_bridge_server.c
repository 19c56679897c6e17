/* `sqlq bridge` on a database server ($SQLQ_TEST_DATABASE: postgres, mariadb), publishing to
 * Azurite: a schema-qualified table with a composite key (a MariaDB schema is a database of
 * the server), writers committing out of order (a long transaction writes first while later
 * ones commit: held back until it commits where an open writer holds the log's later versions
 * back, delivered at once where the log is stamped at commit; nothing skipped either way), and
 * connections the server drops. The scenarios every database runs: test_bridge_scenarios.c;
 * each database's own column types: test_bridge_types.c. */
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

typedef bt_case ctx;

/* Drop every other client connection to this database (the bridge's), as a failover or a
 * restart would: how many were dropped. */
static int kill_postgres(sqlq_db *db)
{
    json_t *rows = NULL;
    SQLQ_TEST_OK(sqlq_db_query(db, "SELECT CASE WHEN pg_terminate_backend(pid) THEN 1 ELSE 0 END AS killed "
                                   "FROM pg_stat_activity "
                                   "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                                   "AND backend_type IN ('client backend', 'walsender')",
                               NULL, 0, &rows, err));
    int killed = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        killed += (int)json_integer_value(json_object_get(r, "killed"));
    }
    json_decref(rows);
    return killed;
}

static int kill_mariadb(sqlq_db *db)
{
    json_t *rows = NULL;
    SQLQ_TEST_OK(sqlq_db_query(db, "SELECT id FROM information_schema.processlist WHERE db = "
                                   "DATABASE() AND id <> CONNECTION_ID()",
                               NULL, 0, &rows, err));
    int killed = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        char sql[64];
        snprintf(sql, sizeof(sql), "KILL CONNECTION %lld",
                 (long long)json_integer_value(json_object_get(r, "id")));
        sqlq_error err;
        sqlq_error_clear(&err);
        if (sqlq_db_exec(db, sql, NULL, 0, NULL, &err) == SQLQ_OK)
            killed++;
        else /* it may have ended */
            fprintf(stderr, "%s: %s\n", sql, err.message);
    }
    json_decref(rows);
    return killed;
}

/* A database server the suite runs on, and what differs there. */
typedef struct database {
    const char *name;
    bool open_writer_holds_back; /* later commits wait for an open writer of the log */
    int (*kill_others)(sqlq_db *db);
    /* A key's changes of two transactions published before one poll become one message (the
     * change log's collapse between polls); false: one message a transaction (logical). */
    bool collapses_transactions;
    /* The bridge reconnected after each of KILLS drops: its log has this event at least
     * reconnected_base + KILLS times. */
    const char *reconnected;
    int reconnected_base;
} database;

#define KILLS 3

static const database databases[] = {
    {"postgres", true, kill_postgres, true, "event=db_reconnected", 0},
    {"mariadb", false, kill_mariadb, true, "event=db_reconnected", 0},
};

static database db_entry;
static const database *db_under_test = &db_entry;

static int setup(void **state)
{
    *state = bt_case_new(sqlq_test_create_db(db_under_test->name, "bridge"), "server");
    return 0;
}

/* sql written with standard quoted identifiers, in the quoting of the database under test, and
 * "Sales Dept" made the schema's unique name (a MariaDB schema is a database of the server). */
static char *quoted(const char *sql, const char *schema)
{
    char buf[1024];
    const char *at = strstr(sql, "Sales Dept");
    if (at)
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - sql), sql, schema, at + strlen("Sales Dept"));
    else
        snprintf(buf, sizeof(buf), "%s", sql);
    if (sqlq_test_sql_under_test()->backticks)
        return sqlq_test_backticks(buf);
    char *out = strdup(buf);
    assert_non_null(out);
    return out;
}

static void test_bridge_schema_composite_key(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_db(c->conn);
    char schema[64];
    snprintf(schema, sizeof(schema), "Sales Dept %d", (int)getpid());
    const char *ansi[] = {
        "CREATE SCHEMA \"Sales Dept\"",
        "CREATE TABLE \"Sales Dept\".\"Order Lines\" (\"order\" int, line int, \"Qty\" int, "
        "PRIMARY KEY (\"order\", line))",
        "\"Sales Dept\".\"Order Lines\"",
        "INSERT INTO \"Sales Dept\".\"Order Lines\" VALUES (1, 1, 5), (1, 2, 6), (2, 1, 7)",
        "DELETE FROM \"Sales Dept\".\"Order Lines\" WHERE \"order\" = 1 AND line = 2",
    };
    char *sql[5];
    for (size_t i = 0; i < 5; i++)
        sql[i] = quoted(ansi[i], schema);
    const char *table = sql[2];
    bt_exec(db, sql[0]);
    bt_exec(db, sql[1]);
    bt_setup(c->conn, table);
    bt_exec(db, sql[3]);
    bt_exec(db, sql[4]);
    bt_case_run_once(c, table, NULL);
    json_t *msgs = bt_drain(&c->q, c->queue, 500, 20000);
    /* three rows; (1, 2) inserted then deleted by a later transaction */
    assert_int_equal(json_array_size(msgs), db_under_test->collapses_transactions ? 3 : 4);
    json_t *by = bt_by_key(msgs);
    json_t *m = json_array_get(json_object_get(by, "{\"line\":1,\"order\":2}"), 0);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "table")), table);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "row"), "Qty")), 7);
    json_t *d = bt_latest(json_object_get(by, "{\"line\":2,\"order\":1}"));
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "op")), "delete");
    json_decref(by);
    json_decref(msgs);
    for (size_t i = 0; i < 5; i++)
        free(sql[i]);
    sqlq_db_close(db);
}

/* Collect messages until `want` distinct keys have arrived or max_ms passes. */
static json_t *collect_keys(ctx *c, size_t want, int max_ms, json_t *into)
{
    for (int waited = 0; waited < max_ms; waited += 300) {
        json_t *more = bt_drain(&c->q, c->queue, 300, 2000);
        json_array_extend(into, more);
        json_decref(more);
        json_t *by = bt_by_key(into);
        size_t n = json_object_size(by);
        json_decref(by);
        if (n >= want)
            break;
    }
    return into;
}

static void test_bridge_out_of_order_commits_not_lost(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE ooo (id int PRIMARY KEY, v text)", "ooo");
    pid_t pid = bt_case_start(c, "ooo");

    /* The long transaction takes its transaction id first (the insert), then others commit. */
    sqlq_db *slow = bt_db(c->conn);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_db_begin(slow, &err), SQLQ_OK);
    bt_exec(slow, "INSERT INTO ooo VALUES (1, 'early xid, late commit')");
    for (int i = 2; i <= 40; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "INSERT INTO ooo VALUES (%d, 'quick')", i);
        bt_exec(db, sql);
    }
    bt_exec(db, "UPDATE ooo SET v = 'quick, updated' WHERE id = 2");
    /* The bridge must not get ahead of the open transaction in a way that skips it later. Where
     * an open writer holds later versions back, nothing arrives meanwhile; where the log is
     * stamped at commit the 39 quick ones arrive without it. */
    json_t *msgs = json_array();
    if (db_under_test->open_writer_holds_back) {
        json_t *early = bt_drain(&c->q, c->queue, 1500, 1500);
        assert_int_equal(json_array_size(early), 0);
        json_decref(early);
    } else {
        collect_keys(c, 39, 10000, msgs);
        json_t *by = bt_by_key(msgs);
        assert_int_equal(json_object_size(by), 39);
        assert_null(json_object_get(by, "{\"id\":1}"));
        json_decref(by);
    }
    assert_int_equal(sqlq_db_commit(slow, &err), SQLQ_OK);
    for (int i = 41; i <= 60; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "INSERT INTO ooo VALUES (%d, 'after')", i);
        bt_exec(db, sql);
    }
    collect_keys(c, 60, 30000, msgs);
    json_t *by = bt_by_key(msgs);
    assert_int_equal(json_object_size(by), 60);
    json_t *late = bt_latest(json_object_get(by, "{\"id\":1}"));
    assert_non_null(late);
    assert_string_equal(json_string_value(json_object_get(json_object_get(late, "row"), "v")), "early xid, late commit");
    json_t *two = bt_latest(json_object_get(by, "{\"id\":2}"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(two, "row"), "v")), "quick, updated");
    json_decref(by);
    json_decref(msgs);
    bt_bridge_stop(pid, c->log);
    sqlq_db_close(slow);
    sqlq_db_close(db);
}

/* Insert 20 rows of a round, then collect until every key so far has arrived. */
static void round_delivered(ctx *c, sqlq_db *db, int round, json_t *msgs)
{
    char sql[256];
    for (int i = 0; i < 20; i++) {
        snprintf(sql, sizeof(sql), "INSERT INTO rc VALUES (%d, 'round %d')", round * 100 + i, round);
        bt_exec(db, sql);
    }
    size_t want = (size_t)(round + 1) * 20;
    collect_keys(c, want, 30000, msgs);
    json_t *by = bt_by_key(msgs);
    size_t keys = json_object_size(by);
    json_decref(by);
    if (keys != want) {
        fprintf(stderr, "round %d: %zu of %zu keys\n", round, keys, want);
        bt_print_log(c->log);
    }
    assert_int_equal(keys, want);
}

/* The database drops the bridge's connections (as a failover or a restart would): the bridge
 * reconnects with back-off, says so, and resumes; nothing is lost. Each drop comes while the
 * bridge works on live connections (its previous round delivered), so each one must be
 * followed by a reconnect before the next round can arrive. */
static void test_bridge_connection_killed_reconnects(void **state)
{
    ctx *c = *state;
    sqlq_db *db = bt_case_table(c, "CREATE TABLE rc (id int PRIMARY KEY, v text)", "rc");
    pid_t pid = bt_case_start(c, "rc");
    json_t *msgs = json_array();
    round_delivered(c, db, 0, msgs);
    for (int round = 1; round <= KILLS; round++) {
        int killed = db_under_test->kill_others(db);
        if (killed < 1)
            bt_print_log(c->log);
        assert_true(killed >= 1);
        round_delivered(c, db, round, msgs);
    }
    json_decref(msgs);
    int want = db_under_test->reconnected_base + KILLS;
    if (sqlq_test_sh("[ \"$(grep -c '%s' '%s')\" -ge %d ]", db_under_test->reconnected, c->log, want) != 0) {
        fprintf(stderr, "fewer than %d lines of %s\n", want, db_under_test->reconnected);
        bt_print_log(c->log);
        fail();
    }
    bt_bridge_stop(pid, c->log);
    sqlq_db_close(db);
}

int main(void)
{
    db_entry = *(const database *)SQLQ_TEST_DATABASE_ENTRY(databases);
    if (strcmp(sqlq_test_source(), "logical") == 0) {
        /* The stream sends a transaction at its commit, each as its own message of a key. */
        db_entry.open_writer_holds_back = false;
        db_entry.collapses_transactions = false;
        /* its replication stream, ended by the server, started again */
        db_entry.reconnected = "event=logical_stream_started";
        db_entry.reconnected_base = 1; /* the first start */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bridge_schema_composite_key, setup, bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_out_of_order_commits_not_lost, setup,
                                        bt_case_teardown),
        cmocka_unit_test_setup_teardown(test_bridge_connection_killed_reconnects, setup,
                                        bt_case_teardown),
    };
    return cmocka_run_group_tests_name(db_under_test->name, tests, NULL, NULL);
}
