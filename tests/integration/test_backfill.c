/* backfill (library) on the database $SQLQ_TEST_DATABASE names (sqlite, postgres, mariadb):
 * composite-key pages in key order, resume after a stop, finish and restart, the user's filter,
 * one run per name (lease), and a live cursor bridge's checkpoint left alone. The CLI with a
 * crash: test_backfill_cli.c. */
#include "backfill.h"
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

static sqlq_backfill *open_bf(sqlq_db *db, const char *name, const char *where, bool restart)
{
    sqlq_backfill_config cfg;
    sqlq_backfill_config_default(&cfg);
    cfg.name = name;
    cfg.table = "items";
    cfg.where = where;
    cfg.page_size = 10;
    cfg.lease_s = 30;
    cfg.restart = restart;
    sqlq_backfill *bf = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    if (sqlq_backfill_open(db, NULL, &cfg, &bf, &err) != SQLQ_OK)
        fail_msg("backfill open: %s", err.message);
    return bf;
}

/* Read (and commit) up to max_pages pages; appends "tenant/id" keys to out. */
static size_t read_pages(sqlq_backfill *bf, int max_pages, char out[][16], size_t n)
{
    for (int p = 0; p < max_pages; p++) {
        sqlq_backfill_page page;
        sqlq_error err;
        sqlq_error_clear(&err);
        assert_int_equal(sqlq_backfill_next(bf, &page, &err), SQLQ_OK);
        if (page.count == 0) {
            sqlq_backfill_page_free(&page);
            break;
        }
        for (size_t i = 0; i < page.count; i++) {
            json_t *k = json_array_get(page.keys, i);
            json_t *row = json_array_get(page.rows, i);
            assert_non_null(json_object_get(row, "v"));
            assert_null(json_object_get(row, "__sqlq_v0"));
            snprintf(out[n++], 16, "%s/%02d", json_string_value(json_object_get(k, "tenant")),
                     (int)json_integer_value(json_object_get(k, "id")));
        }
        assert_int_equal(sqlq_backfill_commit(bf, &page, &err), SQLQ_OK);
        sqlq_backfill_page_free(&page);
    }
    return n;
}

static void make_items(sqlq_db *db)
{
    sqlq_test_db_exec(db, "CREATE TABLE items (tenant VARCHAR(10) NOT NULL, id INTEGER NOT NULL, "
                "v INTEGER NOT NULL, updated_at TIMESTAMP NOT NULL, PRIMARY KEY (tenant, id))");
    const char *tenants[] = {"m", "c", "x"};
    for (int t = 0; t < 3; t++)
        for (int i = 19; i >= 1; i--) {
            char sql[200];
            snprintf(sql, sizeof(sql),
                     "INSERT INTO items VALUES ('%s', %d, %d, '2024-01-01 00:00:00')", tenants[t],
                     i, t * 100 + i);
            sqlq_test_db_exec(db, sql);
        }
}

static void resume_finish_restart(const char *conn)
{
    sqlq_db *db = sqlq_test_db_open(conn);
    make_items(db);
    static char keys[200][16];
    sqlq_backfill *bf = open_bf(db, "one", NULL, false);
    size_t n = read_pages(bf, 2, keys, 0);
    assert_int_equal(n, 20);
    sqlq_backfill_close(bf); /* stopped: resumes after the 20th key */
    bf = open_bf(db, "one", NULL, false);
    assert_int_equal(sqlq_backfill_checkpoint(bf)->rows_done, 20);
    n = read_pages(bf, 100, keys, n);
    assert_int_equal(n, 57);
    for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i - 1], keys[i]) >= 0) /* c < m < x; ids zero-padded */
            fail_msg("not in key order at %zu: %s then %s", i, keys[i - 1], keys[i]);
    assert_string_equal(keys[0], "c/01");
    assert_string_equal(keys[56], "x/19");
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_backfill_finish(bf, &err), SQLQ_OK);
    sqlq_backfill_close(bf);
    bf = open_bf(db, "one", NULL, false);
    assert_true(sqlq_backfill_checkpoint(bf)->finished);
    assert_int_equal(sqlq_backfill_checkpoint(bf)->rows_done, 57);
    int64_t run_id = sqlq_backfill_checkpoint(bf)->run_id;
    sqlq_backfill_close(bf);
    bf = open_bf(db, "one", NULL, true);
    assert_false(sqlq_backfill_checkpoint(bf)->finished);
    assert_true(sqlq_backfill_checkpoint(bf)->run_id >= run_id);
    assert_int_equal(read_pages(bf, 1, keys, 0), 10);
    assert_string_equal(keys[0], "c/01");
    sqlq_backfill_close(bf);
    sqlq_db_close(db);
}

static void filter_lease_and_live_checkpoint(const char *conn)
{
    const sqlq_test_sql *d = sqlq_test_sql_under_test();
    sqlq_db *db = sqlq_test_db_open(conn), *db2 = sqlq_test_db_open(conn);
    make_items(db);
    /* A live cursor bridge on the same table has committed a checkpoint. */
    sqlq_capture_config cc;
    sqlq_capture_config_default(&cc);
    cc.source = SQLQ_SOURCE_CURSOR;
    cc.table = "items";
    cc.cursor_column = "updated_at";
    cc.max_batch_size = 5;
    sqlq_cursor_source *cs = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_cursor_source_open(db2, NULL, &cc, &cs, &err), SQLQ_OK);
    sqlq_change_batch b;
    assert_int_equal(sqlq_cursor_source_poll(cs, &b, &err), SQLQ_OK);
    assert_int_equal(sqlq_cursor_source_release(cs, b.items, b.count, NULL, &err), SQLQ_OK);
    sqlq_change_batch_free(&b);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT cursor_value, key_json, batch_id, rows_done FROM "
             "%scursor_state WHERE bridge_name = 'default'%s", d->sqlq, d->this_database);
    json_t *before = NULL, *after = NULL;
    assert_int_equal(sqlq_db_query(db, sql, NULL, 0, &before, &err), SQLQ_OK);
    assert_int_equal(json_array_size(before), 1);

    sqlq_backfill *bf = open_bf(db, "evens", "v % 2 = 0", false);
    /* The same backfill cannot run twice at once; another name can. */
    sqlq_backfill_config cfg;
    sqlq_backfill_config_default(&cfg);
    cfg.name = "evens";
    cfg.table = "items";
    sqlq_backfill *second = NULL;
    assert_int_equal(sqlq_backfill_open(db2, NULL, &cfg, &second, &err), SQLQ_E_CONFLICT);
    assert_non_null(strstr(err.message, "already running"));
    static char keys[200][16];
    size_t n = read_pages(bf, 100, keys, 0);
    assert_int_equal(n, 27); /* 9 even values of v per tenant */
    int64_t total = 0;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_backfill_count(bf, &total, &err), SQLQ_OK);
    assert_int_equal(total, 27);
    sqlq_backfill_close(bf);

    assert_int_equal(sqlq_db_query(db, sql, NULL, 0, &after, &err), SQLQ_OK);
    assert_true(json_equal(before, after)); /* the live checkpoint was not touched */
    json_decref(before);
    json_decref(after);
    sqlq_cursor_source_close(cs);
    sqlq_db_close(db);
    sqlq_db_close(db2);
}

static void test_backfill_resume(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(sqlq_test_database(), "bf_resume");
    resume_finish_restart(conn);
    free(conn);
}

static void test_backfill_filter_lease(void **state)
{
    (void)state;
    char *conn = sqlq_test_create_db(sqlq_test_database(), "bf_filter");
    filter_lease_and_live_checkpoint(conn);
    free(conn);
}

int main(void)
{
    sqlq_log_set_level(SQLQ_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backfill_resume),
        cmocka_unit_test(test_backfill_filter_lease),
    };
    return cmocka_run_group_tests_name(sqlq_test_database(), tests, NULL, NULL);
}
