/* bridge_support: what the bridge integration tests share: run the real sqlq binary, set up
 * tables through the change log, and read every message back from Azurite. */
#ifndef SQLQ_BRIDGE_SUPPORT_H
#define SQLQ_BRIDGE_SUPPORT_H

#include "db.h"
#include "queue_client.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* The shared Azurite of the fixture: its connection string, a client. */
typedef struct bt_queue {
    char *conn;
    sqlq_account *account;
    sqlq_queue_client *client;
} bt_queue;

void bt_queue_open(bt_queue *q, const char *conn); /* conn NULL: the fixture's Azurite */
void bt_queue_close(bt_queue *q);
/* Delete a queue and its -poison queue (best effort: a test's own clean-up). */
void bt_queue_drop(bt_queue *q, const char *queue);

/* Start `sqlq bridge ARGS...` (NULL-terminated) with SQLQ_QUEUE_CONNECTION=queue_conn, output
 * appended to log_path. */
pid_t bt_bridge_start(const char *queue_conn, const char *log_path, const char *const *args);
/* Wait up to timeout_ms: the exit code, 128 + signal when killed, or -1 on timeout (then the
 * process is killed with SIGKILL). */
int bt_wait(pid_t pid, int timeout_ms);
/* Start and wait; prints the log when the exit code is not `expect`. */
int bt_bridge_run(const char *queue_conn, const char *log_path, const char *const *args, int timeout_ms,
                  int expect);
void bt_print_log(const char *log_path);
/* Whether the log file holds text. */
bool bt_log_has(const char *log_path, const char *text);
/* A log path under the test environment for this test and name. */
void bt_log_path(const char *name, char *out, size_t size);

/* One bridge test case: the fixture's Azurite, a database, a queue and a log of its own. */
typedef struct bt_case {
    bt_queue q;
    char *conn; /* the database's ODBC connection string (owned) */
    char queue[64];
    char log[512];
} bt_case;

/* A case on the database conn (taken over: freed with the case); queue and log named after
 * name. bt_case_free deletes the queue and its -poison queue. */
bt_case *bt_case_new(char *conn, const char *name);
void bt_case_free(bt_case *c);
/* cmocka teardown of a test whose state is a bt_case. */
int bt_case_teardown(void **state);
/* Run `sqlq bridge --once` over table into the case's queue, polling every 20 ms with a 10 s
 * lease, plus extra flags (NULL-terminated, may be NULL); expect exit 0. */
void bt_case_run_once(bt_case *c, const char *table, const char *const *extra);
/* Connect to the case's database (or fail), execute create, install table's change log. */
sqlq_db *bt_case_table(bt_case *c, const char *create, const char *table);
/* Run the bridge once more over table: nothing may arrive (within 300 ms of quiet). */
void bt_case_expect_none(bt_case *c, const char *table, const char *const *extra);
/* Start the bridge daemon over table into the case's queue (polling every 50 ms, lease 10 s). */
pid_t bt_case_start(bt_case *c, const char *table);
/* SIGTERM, wait up to 30 s, expect exit 0 (the log printed when not). */
void bt_bridge_stop(pid_t pid, const char *log_path);

/* Connect or fail the test; execute SQL or fail the test (short names for sqlq_test_db_open
 * and sqlq_test_db_exec of tests/support/testdb.h). */
sqlq_db *bt_db(const char *conn);
void bt_exec(sqlq_db *db, const char *sql);
/* What `sqlq setup` installs for one table under the test's source (sqlq_test_source()): the change
 * log, or for logical the publication and the slot of bridge name "default". */
void bt_setup(const char *conn, const char *table);
/* Under the logical source: drop the database's slots no bridge streams from (each keeps the
 * shared server's WAL until dropped). Nothing under another source. */
void bt_drop_slots(const char *conn);

/* Receive and delete every message of a queue until none has come for quiet_ms (at most
 * max_ms in all). Returns an array of the decoded JSON bodies. */
json_t *bt_drain(bt_queue *q, const char *queue, int quiet_ms, int max_ms);
/* Messages from a running bridge: drain until `want` have come (within 30 s: a bridge starting
 * may take a while), then 500 ms of quiet; fewer or more fail the test (the log printed). */
json_t *bt_receive(bt_queue *q, const char *queue, const char *log_path, size_t want);
/* Row-format changes of messages in any format: batch elements and row objects as they are. */
json_t *bt_flatten(json_t *messages);
/* Index changes by canonical key: object key → array of change objects. */
json_t *bt_by_key(json_t *changes);
/* The change with the highest version in an array. */
json_t *bt_latest(json_t *changes);
/* Number of distinct "id" values. */
size_t bt_distinct_ids(json_t *changes);

void bt_sleep_ms(int ms);

/* Writer threads: each with its own connection, random upserts, updates and deletes on
 * table (id integer primary key, v integer) over ids 0..nkeys-1, each write a new v. */
typedef struct bt_writers bt_writers;
bt_writers *bt_writers_start(const char *conn, const char *table, int threads, int nkeys, int ops_per_thread,
                             int pause_ms);
/* Wait until every writer finished; returns the number of writes committed. */
long bt_writers_join(bt_writers *w);
bool bt_writers_done(bt_writers *w);
/* Whether a write to id committed (then a message for it must arrive). */
bool bt_writers_touched(const bt_writers *w, int id);
void bt_writers_free(bt_writers *w);

/* Check, for every id the writers touched, that the newest message (highest version) matches
 * the row now in the table (or says delete when it is gone). changes: row-format objects. */
void bt_verify_final_state(const char *conn, const char *table, const bt_writers *w, json_t *changes);
bool bt_final_state_reached(const char *conn, const char *table, const bt_writers *w, json_t *changes,
                            char *why, size_t why_size);
/* Drain until every written key's newest message matches the table (or max_ms): a bridge that
 * is backing off after a slow moment of the queue service is waited for, not cut off. */
json_t *bt_drain_until_final(bt_queue *q, const char *queue, const char *conn, const char *table,
                             const bt_writers *w, int max_ms);

#endif
