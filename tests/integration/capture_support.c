#include "capture_support.h"

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

sqlq_db *capture_connect(const char *conn)
{
    sqlq_db *db = NULL;
    SQLQ_TEST_OK(sqlq_db_connect(conn, &db, err));
    return db;
}

void capture_env_open(capture_env *e, const char *prefix)
{
    memset(e, 0, sizeof(*e));
    e->d = capture_db_under_test();
    e->conn = sqlq_test_create_db(e->d->name, prefix);
    e->db = capture_connect(e->conn);
}

void capture_env_close(capture_env *e)
{
    sqlq_db_close(e->db);
    free(e->conn);
}

char *capture_quoted(const capture_env *e, const char *sql)
{
    if (e->d->backticks)
        return sqlq_test_backticks(sql);
    char *q = strdup(sql);
    assert_non_null(q);
    return q;
}

void capture_exec_quoted(const capture_env *e, const char *sql)
{
    char *q = capture_quoted(e, sql);
    sqlq_test_db_exec(e->db, q);
    free(q);
}

long long capture_count_sqlq(const capture_env *e, const char *bare, const char *where)
{
    char sql[512];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s%s%s%s", e->d->sqlq_prefix, bare,
             where ? " WHERE " : "", where ? where : "");
    return (long long)sqlq_test_db_int(e->db, sql);
}

static long long sqlite_objects(const capture_env *e, const sqlq_catalog_names *n)
{
    (void)n;
    return sqlq_test_db_int(e->db, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'sqlq%'");
}

static long long postgres_objects(const capture_env *e, const sqlq_catalog_names *n)
{
    (void)n;
    return sqlq_test_db_int(e->db, "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = "
                                   "'sqlq') + (SELECT count(*) FROM pg_trigger WHERE tgname LIKE "
                                   "'sqlq%')");
}

/* Database sqlq is shared by every database of the server (it goes with the last log): this
 * database's triggers, and this table's log and leases. */
static long long mariadb_objects(const capture_env *e, const sqlq_catalog_names *n)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT (SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = "
             "DATABASE() AND trigger_name LIKE 'sqlq%%') + (SELECT count(*) FROM "
             "information_schema.tables WHERE table_schema = 'sqlq' AND table_name IN ('%s', '%s'))",
             n->log_table, n->leases_table);
    return sqlq_test_db_int(e->db, sql);
}

static const capture_db databases[] = {
    {.name = "sqlite",
     .key_text = "text",
     .bulk_1000 = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
                  "INSERT INTO bulk SELECT i, i FROM n",
     .one_version = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999) "
                    "INSERT INTO one_version SELECT 'r' || (i / 100), i % 100 + 1, i FROM n",
     .upsert_tail = " ON CONFLICT (id) DO UPDATE SET v = excluded.v",
     .sqlq_prefix = "sqlq_",
     .objects = sqlite_objects,
     .ordered_versions = true,
     .no_late_commit = "SQLite writes one transaction at a time: none commits past an open one"},
    {.name = "postgres",
     .key_text = "text",
     .bulk_1000 = "INSERT INTO bulk SELECT i, i FROM generate_series(1, 1000) i",
     .one_version = "INSERT INTO one_version SELECT 'r' || (i / 100), i % 100 + 1, i FROM "
                    "generate_series(0, 999) i",
     .upsert_tail = " ON CONFLICT (id) DO UPDATE SET v = excluded.v",
     .sqlq_prefix = "sqlq.",
     .objects = postgres_objects,
     .open_writer_holds_back = true},
    {.name = "mariadb",
     .key_text = "varchar(40)",
     .bulk_1000 = "INSERT INTO bulk SELECT seq, seq FROM seq_1_to_1000",
     .one_version = "INSERT INTO one_version SELECT CONCAT('r', seq DIV 100), seq % 100 + 1, seq "
                    "FROM seq_0_to_999",
     .upsert_tail = " ON DUPLICATE KEY UPDATE v = VALUES(v)",
     .sqlq_prefix = "sqlq.",
     .objects = mariadb_objects,
     .backticks = true},
};

const capture_db *capture_db_under_test(void)
{
    return SQLQ_TEST_DATABASE_ENTRY(databases);
}

sqlq_capture *capture_open(sqlq_db *db, const char *table, const char *instance, int lease_s,
                           int batch)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = table;
    cfg.instance_id = instance;
    cfg.lease_s = lease_s;
    cfg.max_batch_size = batch;
    cfg.max_attempts = 5;
    sqlq_capture *cap = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(db, &cfg, &cap, err));
    return cap;
}

void capture_poll_now(sqlq_capture *cap, sqlq_change_batch *b)
{
    SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
}

void capture_poll(sqlq_capture *cap, sqlq_change_batch *b)
{
    for (int i = 0; i < 50; i++) {
        SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
        if (b->count > 0)
            return;
        sqlq_change_batch_free(b);
        usleep(100 * 1000);
    }
    SQLQ_TEST_OK(sqlq_capture_poll(cap, b, err));
}

size_t capture_release(sqlq_capture *cap, const sqlq_change_batch *b)
{
    size_t lost = 99;
    SQLQ_TEST_OK(sqlq_capture_release(cap, b->items, b->count, &lost, err));
    return lost;
}

int64_t capture_advance(sqlq_capture *cap)
{
    int64_t v = -1;
    SQLQ_TEST_OK(sqlq_capture_advance(cap, &v, err));
    return v;
}

long long capture_pending(sqlq_capture *cap)
{
    sqlq_capture_status st;
    SQLQ_TEST_OK(sqlq_capture_status_get(cap, &st, err));
    long long p = st.pending;
    sqlq_capture_status_free(&st);
    return p;
}

long long capture_key_int(const sqlq_change *c, const char *col)
{
    json_t *v = json_object_get(c->key, col);
    assert_true(json_is_integer(v));
    return (long long)json_integer_value(v);
}

const char *capture_row_str(const sqlq_change *c, const char *col)
{
    assert_non_null(c->row);
    return json_string_value(json_object_get(c->row, col));
}
