/* PostgreSQL change capture with concurrent writers, on a real server through psqlODBC: only
 * open transactions that wrote a table's change log hold its delivery back, and
 * exactly as long as they must (early xid, savepoints, PREPARE TRANSACTION, a killed session, a
 * restarted reader); a key's later state has the larger version; status names the writer; an
 * xid-versioned log of an earlier sqlq is upgraded without loss. More: test_capture.c. */
#include "capture.h"
#include "catalog.h"
#include "change_log.h"
#include "db.h"
#include "testdb.h"
#include "testenv.h"

// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
// clang-format on
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct env {
    char *conn;
    sqlq_db *db;
} env;

static sqlq_db *connect_db(const char *conn)
{
    sqlq_db *db = NULL;
    SQLQ_TEST_OK(sqlq_db_connect(conn, &db, err));
    return db;
}

/* The test server's connection string with another role's UID in place of sqlq's. */
static char *conn_as(const char *conn, const char *role)
{
    const char *uid = strstr(conn, "UID=sqlq;");
    assert_non_null(uid);
    size_t n = strlen(conn) + strlen(role) + 8;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*sUID=%s;%s", (int)(uid - conn), conn, role, uid + strlen("UID=sqlq;"));
    return out;
}

static void env_open(env *e)
{
    e->conn = sqlq_test_pg_create_db("capture_pg");
    e->db = connect_db(e->conn);
}

static void env_close(env *e)
{
    sqlq_db_close(e->db);
    free(e->conn);
}

static sqlq_capture *open_cap(sqlq_db *db, const char *table)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = table;
    cfg.instance_id = "a";
    sqlq_capture *cap = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(db, &cfg, &cap, err));
    return cap;
}

static void poll_now(sqlq_capture *cap, sqlq_change_batch *b)
{
    SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
}

static size_t release(sqlq_capture *cap, const sqlq_change_batch *b)
{
    size_t lost = 99;
    SQLQ_TEST_OK(sqlq_capture_release(cap, b->items, b->count, &lost, err));
    return lost;
}

static void advance(sqlq_capture *cap)
{
    int64_t v = -1;
    SQLQ_TEST_OK(sqlq_capture_advance(cap, &v, err));
}

static long long pending(sqlq_capture *cap)
{
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    long long p = st.pending;
    sqlq_capture_status_free(&st);
    return p;
}

static long long key_int(const sqlq_change *c, const char *col)
{
    json_t *v = json_object_get(c->key, col);
    assert_true(json_is_integer(v));
    return (long long)json_integer_value(v);
}

static const char *row_str(const sqlq_change *c, const char *col)
{
    assert_non_null(c->row);
    return json_string_value(json_object_get(c->row, col));
}

/* Keys of a batch as a bit set (ids 0..63), for compact checks. */
static unsigned long long ids_of(const sqlq_change_batch *b)
{
    unsigned long long set = 0;
    for (size_t i = 0; i < b->count; i++) {
        long long id = key_int(&b->items[i], "id");
        assert_true(id >= 0 && id < 64);
        set |= 1ull << id;
    }
    return set;
}

/* One poll (no waiting: whatever is readable now), released and advanced: the ids it gave. */
static unsigned long long deliver_now(sqlq_capture *cap)
{
    sqlq_change_batch b;
    poll_now(cap, &b);
    unsigned long long set = ids_of(&b);
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    advance(cap);
    return set;
}

#define BIT(n) (1ull << (n))

/* Open transactions elsewhere (another database, another table of this one, a read-only
 * report) delay nothing: the very next poll reads what committed. */
static void test_capture_pg_unrelated_transactions(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    char *other_conn = sqlq_test_pg_create_db("capture_other");
    sqlq_db *other = connect_db(other_conn);
    sqlq_test_db_exec(other, "CREATE TABLE jobs (id integer PRIMARY KEY)");
    sqlq_test_db_exec(e.db, "CREATE TABLE w (id integer PRIMARY KEY, v text)");
    sqlq_test_db_exec(e.db, "CREATE TABLE side (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "w");
    sqlq_capture *cap = open_cap(e.db, "w");
    sqlq_db *same = connect_db(e.conn), *report = connect_db(e.conn);
    SQLQ_TEST_OK(sqlq_db_begin(other, err));
    sqlq_test_db_exec(other, "INSERT INTO jobs VALUES (1)"); /* has an xid, in another database */
    SQLQ_TEST_OK(sqlq_db_begin(same, err));
    sqlq_test_db_exec(same,
                      "INSERT INTO side VALUES (1)"); /* has an xid, same database, another table */
    SQLQ_TEST_OK(sqlq_db_begin(report, err));
    assert_int_equal(sqlq_test_db_int(report, "SELECT count(*) FROM w"),
                     0); /* read-only, on w itself */
    for (int i = 1; i <= 20; i++) {
        char sql[64];
        snprintf(sql, sizeof(sql), "INSERT INTO w VALUES (%d, 'x')", i);
        sqlq_test_db_exec(e.db, sql);
    }
    sqlq_change_batch b;
    poll_now(cap, &b);
    assert_int_equal(b.count, 20);
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    assert_int_equal(json_array_size(st.writers), 0); /* nobody holds the log */
    assert_int_equal(st.held_back, 0);
    sqlq_capture_status_free(&st);
    SQLQ_TEST_OK(sqlq_db_commit(other, err));
    SQLQ_TEST_OK(sqlq_db_commit(same, err));
    SQLQ_TEST_OK(sqlq_db_commit(report, err));
    sqlq_db_close(report);
    sqlq_db_close(same);
    sqlq_db_close(other);
    free(other_conn);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* A transaction that takes its xid early (writes another table first) and writes the watched
 * table later: what committed before it wrote the log is delivered at once; what commits after
 * waits for it (a smaller version may still come), `status` names it; when it commits every
 * change arrives exactly once, and a key's later state has the larger version. */
static void test_capture_pg_xid_early(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE x (id integer PRIMARY KEY, v text)");
    sqlq_test_db_exec(e.db, "CREATE TABLE side (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "x");
    sqlq_test_db_exec(e.db, "INSERT INTO x VALUES (1, 'initial')");
    sqlq_capture *cap = open_cap(e.db, "x");
    assert_int_equal(deliver_now(cap), BIT(1));
    sqlq_db *a = connect_db(e.conn), *b = connect_db(e.conn);
    sqlq_test_db_exec(a, "SET application_name = 'sqlq-test-writer-a'");
    int64_t a_pid = sqlq_test_db_int(a, "SELECT pg_backend_pid()");
    SQLQ_TEST_OK(sqlq_db_begin(a, err));
    sqlq_test_db_exec(a, "INSERT INTO side VALUES (1)");       /* A's xid, early */
    sqlq_test_db_exec(b, "UPDATE x SET v = 'B' WHERE id = 1"); /* B: key 1, commits */
    sqlq_test_db_exec(b, "INSERT INTO x VALUES (2, 'B')");
    sqlq_change_batch bt;
    poll_now(cap, &bt); /* A has not written the log: nothing waits for it */
    assert_int_equal(ids_of(&bt), BIT(1) | BIT(2));
    int64_t v_b = bt.items[0].version;
    assert_int_equal(bt.items[0].op, SQLQ_OP_UPDATE);
    assert_int_equal(release(cap, &bt), 0);
    sqlq_change_batch_free(&bt);
    advance(cap);
    sqlq_test_db_exec(a, "UPDATE x SET v = 'A' WHERE id = 1"); /* A: key 1 after B, still open */
    sqlq_test_db_exec(b, "INSERT INTO x VALUES (3, 'after A wrote')");
    assert_int_equal(deliver_now(cap), 0); /* 3 may be preceded by A's version: it waits */
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    assert_int_equal(json_array_size(st.writers), 1);
    json_t *w = json_array_get(st.writers, 0);
    assert_int_equal(json_integer_value(json_object_get(w, "pid")), a_pid);
    assert_string_equal(json_string_value(json_object_get(w, "application_name")),
                        "sqlq-test-writer-a");
    assert_non_null(json_string_value(json_object_get(w, "database")));
    assert_string_equal(json_string_value(json_object_get(w, "state")), "idle in transaction");
    assert_int_equal(st.held_back, 1); /* key 3; A's own change is not committed */
    sqlq_capture_status_free(&st);
    SQLQ_TEST_OK(sqlq_db_commit(a, err));
    poll_now(cap, &bt);
    assert_int_equal(ids_of(&bt), BIT(1) | BIT(3));
    for (size_t i = 0; i < bt.count; i++)
        if (key_int(&bt.items[i], "id") == 1) {
            assert_true(bt.items[i].version > v_b); /* A's newer state, larger version */
            assert_string_equal(row_str(&bt.items[i], "v"), "A");
            assert_int_equal(bt.items[i].op, SQLQ_OP_UPDATE);
        }
    assert_int_equal(release(cap, &bt), 0);
    sqlq_change_batch_free(&bt);
    advance(cap);
    assert_int_equal(pending(cap), 0);
    sqlq_db_close(a);
    sqlq_db_close(b);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* Savepoints: a log write rolled back with its savepoint is never delivered (and releases
 * nothing it should not); one kept is delivered when the transaction commits. */
static void test_capture_pg_savepoints(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE sp (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "sp");
    sqlq_capture *cap = open_cap(e.db, "sp");
    sqlq_db *a = connect_db(e.conn);
    SQLQ_TEST_OK(sqlq_db_begin(a, err));
    sqlq_test_db_exec(a, "SAVEPOINT s1");
    sqlq_test_db_exec(a, "INSERT INTO sp VALUES (10)");
    sqlq_test_db_exec(a, "ROLLBACK TO SAVEPOINT s1");
    sqlq_test_db_exec(e.db, "INSERT INTO sp VALUES (12)");
    assert_int_equal(deliver_now(cap), BIT(12)); /* A holds nothing of the log any more */
    sqlq_test_db_exec(a, "SAVEPOINT s2");
    sqlq_test_db_exec(a, "INSERT INTO sp VALUES (11)");
    sqlq_test_db_exec(a, "RELEASE SAVEPOINT s2");
    sqlq_test_db_exec(e.db, "INSERT INTO sp VALUES (13)");
    assert_int_equal(deliver_now(cap), 0); /* A (through its released savepoint) holds the log */
    SQLQ_TEST_OK(sqlq_db_commit(a, err));
    assert_int_equal(deliver_now(cap), BIT(11) | BIT(13));
    assert_int_equal(pending(cap), 0);
    sqlq_db_close(a);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* A prepared transaction (pid NULL in pg_locks, a new virtual transaction) keeps holding back
 * what it must, is named by status, and is delivered after COMMIT PREPARED. A writer whose
 * session dies while open (pg_terminate_backend, as a client killed with -9 would leave it)
 * holds nothing back afterwards. A capture reopened (a restarted bridge) while a writer is
 * open waits for it too. */
static void test_capture_pg_prepared_and_killed(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE tp (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "tp");
    sqlq_capture *cap = open_cap(e.db, "tp");
    sqlq_db *a = connect_db(e.conn);
    SQLQ_TEST_OK(sqlq_db_begin(a, err));
    sqlq_test_db_exec(a, "INSERT INTO tp VALUES (20)");
    assert_int_equal(deliver_now(cap), 0); /* A is known by its xid from here on */
    sqlq_test_db_exec(a, "PREPARE TRANSACTION 'sqlq-test-tp'");
    sqlq_test_db_exec(e.db, "INSERT INTO tp VALUES (21)");
    assert_int_equal(deliver_now(cap), 0);
    sqlq_capture_close(cap); /* restarted while the prepared transaction is open */
    cap = open_cap(e.db, "tp");
    assert_int_equal(deliver_now(cap), 0);
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    assert_int_equal(json_array_size(st.writers), 1);
    json_t *w = json_array_get(st.writers, 0);
    assert_string_equal(json_string_value(json_object_get(w, "gid")), "sqlq-test-tp");
    assert_int_equal(json_integer_value(json_object_get(w, "pid")), 0);
    sqlq_capture_status_free(&st);
    sqlq_test_db_exec(e.db, "COMMIT PREPARED 'sqlq-test-tp'");
    assert_int_equal(deliver_now(cap), BIT(20) | BIT(21));

    sqlq_db *k = connect_db(e.conn);
    int64_t k_pid = sqlq_test_db_int(k, "SELECT pg_backend_pid()");
    SQLQ_TEST_OK(sqlq_db_begin(k, err));
    sqlq_test_db_exec(k, "INSERT INTO tp VALUES (30)");
    sqlq_test_db_exec(e.db, "INSERT INTO tp VALUES (31)");
    assert_int_equal(deliver_now(cap), 0);
    char sql[96];
    snprintf(sql, sizeof(sql), "SELECT CASE WHEN pg_terminate_backend(%lld, 5000) THEN 1 ELSE 0 END", (long long)k_pid);
    assert_int_equal(sqlq_test_db_int(e.db, sql), 1);
    assert_int_equal(deliver_now(cap), BIT(31)); /* 30 died with its session */
    assert_int_equal(pending(cap), 0);
    sqlq_db_close(k);
    sqlq_db_close(a);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* `sqlq setup` on a log of an earlier sqlq (versions were transaction ids, no since column):
 * the sequence starts above every stored version and sync version, nothing is lost or sent
 * twice, and old insert rows stay inserts. */
static void test_capture_pg_upgrade_xid_log(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE up (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "up");
    sqlq_capture *cap = open_cap(e.db, "up");
    sqlq_capture_close(cap);
    /* what an earlier sqlq installed */
    sqlq_test_db_exec(e.db, "DROP SEQUENCE sqlq.ver_up");
    sqlq_test_db_exec(e.db, "ALTER TABLE sqlq.log_up DROP COLUMN sqlq_since");
    sqlq_test_db_exec(
        e.db, "CREATE OR REPLACE FUNCTION sqlq.capture_up() RETURNS trigger LANGUAGE plpgsql AS "
              "$f$ BEGIN IF TG_OP = 'DELETE' THEN INSERT INTO sqlq.log_up (id, sqlq_version, "
              "sqlq_op) VALUES (OLD.id, CAST(CAST(pg_current_xact_id() AS text) AS bigint), 'D') "
              "ON CONFLICT (id) DO UPDATE SET sqlq_version = excluded.sqlq_version, sqlq_op = "
              "excluded.sqlq_op; ELSE INSERT INTO sqlq.log_up (id, sqlq_version, sqlq_op) VALUES "
              "(NEW.id, CAST(CAST(pg_current_xact_id() AS text) AS bigint), CASE WHEN TG_OP = "
              "'INSERT' THEN 'I' ELSE 'U' END) ON CONFLICT (id) DO UPDATE SET sqlq_version = "
              "excluded.sqlq_version, sqlq_op = excluded.sqlq_op; END IF; RETURN NULL; END $f$");
    sqlq_test_db_exec(
        e.db, "DROP TRIGGER sqlq_capture_ins ON up; DROP TRIGGER sqlq_capture ON up; CREATE "
              "TRIGGER sqlq_capture AFTER INSERT OR UPDATE OR DELETE ON up FOR EACH ROW EXECUTE "
              "FUNCTION sqlq.capture_up()");
    sqlq_test_db_exec(e.db, "INSERT INTO up VALUES (1, 'one')");
    sqlq_test_db_exec(e.db, "INSERT INTO up VALUES (2, 'two')");
    sqlq_test_db_exec(e.db, "INSERT INTO up VALUES (3, 'three')");
    int64_t v2 = sqlq_test_db_int(e.db, "SELECT sqlq_version FROM sqlq.log_up WHERE id = 2");
    assert_true(v2 > 3); /* an xid */
    /* the earlier bridge had delivered key 1 */
    sqlq_test_db_exec(e.db,
                      "UPDATE sqlq.state SET sync_version = (SELECT sqlq_version FROM sqlq.log_up "
                      "WHERE id = 1)");
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = "up";
    sqlq_error oe;
    sqlq_error_clear(&oe);
    assert_int_equal(sqlq_capture_open(e.db, &cfg, &cap, &oe), SQLQ_E_NOT_FOUND);
    assert_non_null(strstr(oe.message, "installed by an earlier sqlq"));
    sqlq_test_change_log_install(e.db, "up"); /* the upgrade */
    sqlq_test_change_log_install(e.db, "up"); /* idempotent */
    sqlq_test_db_exec(e.db, "INSERT INTO up VALUES (4, 'four')");
    sqlq_test_db_exec(e.db, "UPDATE up SET v = 'two, updated' WHERE id = 2");
    cap = open_cap(e.db, "up");
    sqlq_change_batch b;
    poll_now(cap, &b);
    assert_int_equal(ids_of(&b), BIT(2) | BIT(3) | BIT(4));
    for (size_t i = 0; i < b.count; i++) {
        /* 2 was inserted (before the upgrade) since the last delivery: still an insert */
        assert_int_equal(b.items[i].op, SQLQ_OP_INSERT);
        if (key_int(&b.items[i], "id") == 2) {
            assert_true(b.items[i].version > v2);
            assert_string_equal(row_str(&b.items[i], "v"), "two, updated");
        }
    }
    assert_int_equal(key_int(&b.items[0], "id"), 3); /* the old version first */
    assert_int_equal(release(cap, &b), 0);
    sqlq_change_batch_free(&b);
    advance(cap);
    assert_int_equal(pending(cap), 0);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* The triggers of this sqlq: no LOCK TABLE statement, the version taken inside each
 * upsert, whose plan holds the log's ROW EXCLUSIVE lock first; inserts logged once per
 * statement from its transition table, a version per row. `sqlq setup` over the previous
 * trigger (one row trigger for every event) replaces it in place; an open writer holds the
 * lock (the read horizon waits for it); a key-changing update logs the old key's delete
 * before the new key's insert. */
static void test_capture_pg_trigger_upgrade_in_place(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE kc (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "kc");
    /* what the previous sqlq installed: LOCK TABLE, then nextval into a variable */
    sqlq_test_db_exec(
        e.db, "CREATE OR REPLACE FUNCTION sqlq.capture_kc() RETURNS trigger LANGUAGE plpgsql AS "
              "$f$ DECLARE v bigint; BEGIN LOCK TABLE sqlq.log_kc IN ROW EXCLUSIVE MODE; v := "
              "nextval('sqlq.ver_kc'); INSERT INTO sqlq.log_kc (id, sqlq_version, sqlq_op, "
              "sqlq_since) VALUES (NEW.id, v, 'I', v) ON CONFLICT (id) DO UPDATE SET "
              "sqlq_version = excluded.sqlq_version, sqlq_op = excluded.sqlq_op, sqlq_since = "
              "excluded.sqlq_since; RETURN NULL; END $f$");
    sqlq_test_db_exec(
        e.db, "DROP TRIGGER sqlq_capture_ins ON kc; DROP TRIGGER sqlq_capture ON kc; CREATE "
              "TRIGGER sqlq_capture AFTER INSERT OR UPDATE OR DELETE ON kc FOR EACH ROW EXECUTE "
              "FUNCTION sqlq.capture_kc()");
    sqlq_test_db_exec(e.db, "INSERT INTO kc VALUES (1, 'one')");
    sqlq_table *t = NULL;
    sqlq_catalog_names n;
    SQLQ_TEST_OK(sqlq_catalog_lookup(e.db, "kc", NULL, &t, &n, err));
    bool installed = false;
    SQLQ_TEST_OK(sqlq_change_log_installed(e.db, t, &installed, err));
    assert_true(installed); /* the earlier layout still captures: a bridge may run on it */
    sqlq_table_free(t);
    sqlq_test_change_log_install(e.db, "kc"); /* the upgrade */
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'kc'::regclass "
                               "AND NOT tgisinternal"),
        2);
    assert_int_equal(sqlq_test_db_int(e.db,
                                      "SELECT count(*) FROM pg_proc WHERE proname = 'capture_kc' "
                                      "AND prosrc NOT LIKE '%LOCK TABLE%' AND prosrc LIKE "
                                      "'%nextval(%'"),
                     1);
    /* the statement trigger runs the log function, the row trigger its _row function */
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT count(*) FROM pg_trigger t JOIN pg_proc p ON p.oid = "
                               "t.tgfoid WHERE t.tgrelid = 'kc'::regclass AND ((t.tgname = "
                               "'sqlq_capture_ins' AND p.proname = 'capture_kc') OR (t.tgname = "
                               "'sqlq_capture' AND p.proname = 'capture_kc_row'))"),
        2);
    sqlq_capture *cap = open_cap(e.db, "kc");
    assert_int_equal(deliver_now(cap), BIT(1));
    sqlq_db *a = connect_db(e.conn);
    SQLQ_TEST_OK(sqlq_db_begin(a, err));
    sqlq_test_db_exec(a, "INSERT INTO kc VALUES (2, 'two')");
    assert_int_equal(sqlq_test_db_int(e.db,
                                      "SELECT count(*) FROM pg_locks WHERE relation = "
                                      "'sqlq.log_kc'::regclass AND mode = 'RowExclusiveLock' AND "
                                      "granted"),
                     1);
    sqlq_test_db_exec(e.db, "INSERT INTO kc VALUES (3, 'three'), (5, 'five')");
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT count(DISTINCT sqlq_version) FROM sqlq.log_kc WHERE id "
                               "IN (3, 5) AND sqlq_since = sqlq_version AND sqlq_op = 'I'"),
        2);
    assert_int_equal(deliver_now(cap), 0); /* 3 and 5 wait for the open writer */
    SQLQ_TEST_OK(sqlq_db_commit(a, err));
    assert_int_equal(deliver_now(cap), BIT(2) | BIT(3) | BIT(5));
    sqlq_test_db_exec(e.db, "UPDATE kc SET id = 4 WHERE id = 3");
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT count(*) FROM sqlq.log_kc o, sqlq.log_kc n WHERE o.id "
                               "= 3 AND o.sqlq_op = 'D' AND n.id = 4 AND n.sqlq_op = 'I' AND "
                               "n.sqlq_since = n.sqlq_version AND o.sqlq_version < "
                               "n.sqlq_version"),
        1);
    assert_int_equal(deliver_now(cap), BIT(3) | BIT(4));
    sqlq_db_close(a);
    sqlq_capture_close(cap);
    env_close(&e);
}

/* A writer without superuser rights needs what docs/capture.md says: SELECT, INSERT, UPDATE
 * on the log (ON CONFLICT … DO UPDATE reads excluded's columns), USAGE on schema sqlq and on the
 * version sequence. With those, each kind of write is logged: an insert, an update, an update
 * of the key (the old key's delete and the new key's insert), a delete, and an INSERT that
 * inserts nothing logs nothing. */
static void test_capture_pg_unprivileged_writer(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    char role[64], sql[640];
    snprintf(role, sizeof(role), "sqlq_wr_%d", (int)getpid());
    sqlq_test_db_execf(e.db, "CREATE ROLE %s LOGIN NOSUPERUSER", role);
    sqlq_test_db_exec(e.db, "CREATE TABLE pw (id integer PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "pw");
    snprintf(sql, sizeof(sql),
             "GRANT SELECT, INSERT, UPDATE, DELETE ON pw TO %s; GRANT USAGE ON SCHEMA sqlq TO "
             "%s; GRANT SELECT, INSERT, UPDATE ON sqlq.log_pw TO %s; GRANT USAGE ON SEQUENCE "
             "sqlq.ver_pw TO %s",
             role, role, role, role);
    sqlq_test_db_exec(e.db, sql);
    char *wr_conn = conn_as(e.conn, role);
    sqlq_db *w = connect_db(wr_conn);
    sqlq_test_db_exec(w, "INSERT INTO pw VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    sqlq_test_db_exec(w, "INSERT INTO pw SELECT 9, 'none' WHERE false");
    sqlq_test_db_exec(w, "UPDATE pw SET v = 'b2' WHERE id = 2");
    sqlq_test_db_exec(w, "UPDATE pw SET id = 4 WHERE id = 3");
    sqlq_test_db_exec(w, "DELETE FROM pw WHERE id = 1");
    assert_int_equal(sqlq_test_db_int(e.db, "SELECT count(*) FROM sqlq.log_pw"), 4);
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT count(*) FROM sqlq.log_pw WHERE (id, sqlq_op) IN ((1, "
                               "'D'), (2, 'U'), (3, 'D'), (4, 'I'))"),
        4);
    /* each change its own version, in the order of the writes; an insert's since is its own */
    assert_int_equal(
        sqlq_test_db_int(e.db, "SELECT count(*) FROM sqlq.log_pw a, sqlq.log_pw b, sqlq.log_pw "
                               "c, sqlq.log_pw d WHERE a.id = 2 AND b.id = 3 AND c.id = 4 AND d.id "
                               "= 1 AND a.sqlq_version < b.sqlq_version AND b.sqlq_version < "
                               "c.sqlq_version AND c.sqlq_version < d.sqlq_version AND "
                               "c.sqlq_since = c.sqlq_version AND a.sqlq_since < a.sqlq_version"),
        1);
    sqlq_db_close(w);
    snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
    sqlq_test_db_exec(e.db, sql);
    free(wr_conn);
    env_close(&e);
}

/* A bridge role without superuser rights (only the grants on sqlq's objects a bridge needs)
 * still sees another role's lock on the log in pg_locks: its reads wait for that writer, and
 * go on once it commits. */
static void test_capture_pg_unprivileged_reader(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    char role[64], sql[512];
    snprintf(role, sizeof(role), "sqlq_ro_%d", (int)getpid());
    snprintf(sql, sizeof(sql), "CREATE ROLE %s LOGIN NOSUPERUSER", role);
    sqlq_test_db_exec(e.db, sql);
    sqlq_test_db_exec(e.db, "CREATE TABLE pr (id integer PRIMARY KEY)");
    sqlq_test_change_log_install(e.db, "pr");
    sqlq_capture *owner = open_cap(e.db, "pr"); /* state and leases tables exist from here */
    sqlq_capture_close(owner);
    snprintf(sql, sizeof(sql),
             "GRANT USAGE ON SCHEMA sqlq TO %s; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL "
             "TABLES IN SCHEMA sqlq TO %s; GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA sqlq "
             "TO %s; GRANT SELECT ON pr TO %s",
             role, role, role, role);
    sqlq_test_db_exec(e.db, sql);
    char *ro_conn = conn_as(e.conn, role);
    sqlq_db *ro = connect_db(ro_conn);
    assert_int_equal(
        sqlq_test_db_int(ro, "SELECT CASE WHEN current_setting('is_superuser') = 'off' THEN 1 "
                             "ELSE 0 END"),
        1);
    sqlq_capture *cap = open_cap(ro, "pr");
    sqlq_db *a = connect_db(e.conn); /* the writer: another role */
    SQLQ_TEST_OK(sqlq_db_begin(a, err));
    sqlq_test_db_exec(a, "INSERT INTO pr VALUES (1)");
    sqlq_test_db_exec(e.db, "INSERT INTO pr VALUES (2)");
    assert_int_equal(deliver_now(cap), 0); /* the writer's lock is visible to this role */
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    assert_int_equal(json_array_size(st.writers), 1);
    sqlq_capture_status_free(&st);
    SQLQ_TEST_OK(sqlq_db_commit(a, err));
    assert_int_equal(deliver_now(cap), BIT(1) | BIT(2));
    sqlq_capture_close(cap);
    sqlq_db_close(ro);
    sqlq_db_close(a);
    snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
    sqlq_test_db_exec(e.db, sql);
    free(ro_conn);
    env_close(&e);
}

/* The capture loop's statements are prepared once per connection: after many polls the
 * session holds one kept poll statement that ran every time (not one parse per poll), each
 * time with a plan for its parameters, and at most a few dozen kept statements in all. */
static void test_capture_pg_polls_prepared_once(void **s)
{
    (void)s;
    env e;
    env_open(&e);
    sqlq_test_db_exec(e.db, "CREATE TABLE kept (id int PRIMARY KEY, v text)");
    sqlq_test_change_log_install(e.db, "kept");
    sqlq_capture *cap = open_cap(e.db, "kept");
    for (int i = 0; i < 8; i++) {
        char sql[128];
        snprintf(sql, sizeof(sql), "INSERT INTO kept VALUES (%d, 'x')", i);
        sqlq_test_db_exec(e.db, sql);
        assert_int_equal(deliver_now(cap), BIT(i));
    }
    const char *polls = "FROM pg_prepared_statements WHERE statement LIKE '/* sqlq poll */%'";
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) %s", polls);
    assert_int_equal(sqlq_test_db_int(e.db, sql), 1);
    snprintf(sql, sizeof(sql), "SELECT sum(generic_plans + custom_plans) %s", polls);
    assert_true(sqlq_test_db_int(e.db, sql) >= 8);
    /* every poll planned for its parameters (plan_cache_mode): never the generic plan */
    snprintf(sql, sizeof(sql), "SELECT sum(generic_plans) %s", polls);
    assert_int_equal(sqlq_test_db_int(e.db, sql), 0);
    assert_true(sqlq_test_db_int(e.db, "SELECT count(*) FROM pg_prepared_statements") <= 48);
    sqlq_capture_close(cap);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_pg_unrelated_transactions),
        cmocka_unit_test(test_capture_pg_xid_early),
        cmocka_unit_test(test_capture_pg_savepoints),
        cmocka_unit_test(test_capture_pg_prepared_and_killed),
        cmocka_unit_test(test_capture_pg_upgrade_xid_log),
        cmocka_unit_test(test_capture_pg_trigger_upgrade_in_place),
        cmocka_unit_test(test_capture_pg_unprivileged_writer),
        cmocka_unit_test(test_capture_pg_unprivileged_reader),
        cmocka_unit_test(test_capture_pg_polls_prepared_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
