/* sql/capture_sql, sql/ct_query, sql/catalog: the generated SQL, above all SQL Server's (no
 * SQL Server runs here), and the derived object names. */
#include "capture_internal.h"
#include "capture_sql.h"
#include "catalog.h"
#include "ct_query.h"
#include "pg_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A table Orders(id int PK, note text, region text PK #2 when composite). */
typedef struct fixture {
    sqlq_column cols[3];
    size_t key[2];
    sqlq_table t;
    sqlq_catalog_names names;
    sqlq_capture_sql spec;
} fixture;

static void make(fixture *f, const sqlq_dialect *d, const char *schema, const char *name,
                 bool composite)
{
    memset(f, 0, sizeof(*f));
    f->cols[0] = (sqlq_column){.name = "id", .in_key = true, .key_pos = 1};
    f->cols[1] = (sqlq_column){.name = "note"};
    f->cols[2] = (sqlq_column){.name = "region", .in_key = composite, .key_pos = composite ? 2 : 0};
    f->key[0] = 0;
    f->key[1] = 2;
    f->t = (sqlq_table){.columns = f->cols, .ncolumns = 3, .key = f->key, .nkey = composite ? 2 : 1};
    snprintf(f->t.name.schema, sizeof(f->t.name.schema), "%s", schema);
    snprintf(f->t.name.name, sizeof(f->t.name.name), "%s", name);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_catalog_names_make(d, &f->t.name, "default", &f->names, &err), SQLQ_OK);
    f->spec = (sqlq_capture_sql){.dialect = d,
                                 .log_sql = sqlq_change_source_find(d, SQLQ_SOURCE_AUTO)->leased->sql,
                                 .table = &f->t,
                                 .names = &f->names,
                                 .max_batch_size = 100,
                                 .lease_s = 60,
                                 .max_attempts = 5};
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

/* Every marker has a role and every role a marker. */
static void check_params(const sqlq_capture_stmt *st)
{
    if (st->sql)
        assert_int_equal(count(st->sql, "?"), st->nparams);
}

static void contains(const char *sql, const char *part)
{
    assert_non_null(sql);
    if (!sql || !strstr(sql, part))
        fail_msg("expected\n  %s\nin\n  %s", part, sql ? sql : "(null)");
}

static void test_capture_sql_mssql_poll(void **state)
{
    (void)state;
    fixture f;
    make(&f, &sqlq_dialect_mssql, "dbo", "Orders", false);
    sqlq_capture_stmt poll, lease;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_capture_sql_poll(&f.spec, &poll, &lease, &err), SQLQ_OK);
    assert_null(lease.sql); /* one batch, one round trip */
    check_params(&poll);
    assert_int_equal(poll.nparams, 3);
    assert_int_equal(poll.params[0], SQLQ_P_BRIDGE);
    assert_int_equal(poll.params[1], SQLQ_P_TABLE);
    assert_int_equal(poll.params[2], SQLQ_P_OWNER);
    const char *s = poll.sql;
    contains(s, "DECLARE @sync bigint = (SELECT sync_version FROM [sqlq].[state] WHERE "
                "bridge_name = ? AND table_name = ?)");
    contains(s, "SELECT TOP (100) c.[id] AS k0, c.SYS_CHANGE_VERSION AS m_v, "
                "c.SYS_CHANGE_OPERATION AS m_op");
    contains(s, "FROM CHANGETABLE(CHANGES [dbo].[Orders], @sync) AS c LEFT JOIN [sqlq].[leases_");
    contains(s, "AS l ON l.[id] = c.[id]");
    /* the lease condition of the SQL trigger: free, or released at an older version, or expired */
    contains(s, "((l.sqlq_expires_ms IS NULL AND (l.sqlq_version IS NULL OR l.sqlq_version < "
                "c.SYS_CHANGE_VERSION)) OR l.sqlq_expires_ms < DATEDIFF_BIG(millisecond, "
                "'19700101', SYSUTCDATETIME()))");
    /* no silent drop after max_attempts: capped at 6 and handed back */
    contains(s, "CASE WHEN l.sqlq_version = c.SYS_CHANGE_VERSION AND l.sqlq_attempts >= 5 THEN 6 "
                "WHEN l.sqlq_version = c.SYS_CHANGE_VERSION THEN l.sqlq_attempts + 1 ELSE 1 END");
    assert_null(strstr(s, "AttemptCount < 5"));
    contains(s, "ORDER BY c.SYS_CHANGE_VERSION, c.[id]; ");
    contains(s, "UPDATE #sqlq_batch SET m_tok = NEXT VALUE FOR [sqlq].[lease_token];");
    contains(s, "MERGE [sqlq].[leases_");
    contains(s, "WHEN MATCHED THEN UPDATE SET sqlq_version = b.m_v, sqlq_attempts = b.m_att, "
                "sqlq_expires_ms = DATEDIFF_BIG(millisecond, '19700101', SYSUTCDATETIME()) + "
                "60000, sqlq_owner = @owner, sqlq_token = b.m_tok");
    contains(s, "LEFT JOIN [dbo].[Orders] AS r ON r.[id] = b.k0 ORDER BY b.m_v, b.k0;");
    /* the row as the table is when the poll runs (a column added or dropped since the capture
     * opened is read as it is now), the key as the catalog has it now */
    contains(s, "ELSE 1 END AS m_row, (SELECT STUFF((SELECT ', ' + c.name + ' ' + "
                "TYPE_NAME(c.user_type_id)");
    contains(s, "WHERE i.object_id = OBJECT_ID(N'[dbo].[Orders]') AND i.is_primary_key = 1 ORDER "
                "BY ic.key_ordinal FOR XML PATH('')), 1, 2, '')) AS m_key, r.* FROM #sqlq_batch");
    assert_null(strstr(s, "note"));
    assert_null(strstr(s, "LIMIT"));
    assert_null(strstr(s, "_az_func_Trigger")); /* no global lock */
    sqlq_capture_stmt_free(&poll);
}

/* Every dialect reads the row as r.* after m_key, names no column but the key's, and reads the
 * key from the catalog with the table's name as a literal (quotes doubled). */
static void test_capture_sql_row_read_whole(void **state)
{
    (void)state;
    static const struct {
        const sqlq_dialect *d;
        const char *schema;
        const char *key_from; /* the catalog lookup of the key: m_key and the key statement */
        const char *src;      /* the key statement's m_src: the change source's objects */
    } cases[] = {
        {&sqlq_dialect_sqlite, "",
         "FROM pragma_table_info('O''Brien', 'main') WHERE pk > 0 "
         "ORDER BY pk))",
         ", (SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'O''Brien' "
         "AND substr(name, 1, 29) = 'sqlq_log_o_brien_"},
        {&sqlq_dialect_postgres, "public",
         "(SELECT CAST(i.indkey AS text) || ' ' || CAST(i.indclass AS text) FROM "
         "pg_catalog.pg_index i WHERE i.indrelid = CAST('\"public\".\"O''Brien\"' AS "
         "regclass) AND i.indisprimary)",
         ", (SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = to_regclass(CAST("
         "'\"public\".\"O''Brien\"' AS text)) AND tgname = 'sqlq_capture' AND tgenabled <> "
         "'D') AS m_src"},
        {&sqlq_dialect_mssql, "dbo", "OBJECT_ID(N'[dbo].[O''Brien]')",
         ", (SELECT count(*) FROM sys.change_tracking_tables WHERE object_id = "
         "OBJECT_ID(N'[dbo].[O''Brien]')) AS m_src"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fixture f;
        make(&f, cases[i].d, cases[i].schema, "O'Brien", false);
        sqlq_capture_stmt polls[4], key;
        sqlq_error err;
        sqlq_error_clear(&err);
        assert_int_equal(sqlq_capture_sql_poll(&f.spec, &polls[0], &polls[1], &err), SQLQ_OK);
        char *keys[] = {"k_text", "k_type", "k_3"};
        f.spec.key_types = keys;
        assert_int_equal(sqlq_capture_sql_poll_resume(&f.spec, &polls[2], &polls[3], &err),
                         SQLQ_OK);
        for (size_t p = 0; p < 4; p += 2) {
            const char *s = polls[p].sql;
            if (!s && p == 2) { /* a tracked source has no resumed poll */
                assert_true(f.spec.log_sql->tracked);
                continue;
            }
            check_params(&polls[p]);
            contains(s, " END AS m_row, (SELECT ");
            contains(s, cases[i].key_from);
            contains(s, ") AS m_key, r.*");
            /* columns other than the key: only through r.*, and after it their exact forms
             * (row_json.h: SQLite REALs by quote()), each named for its column's position */
            const char *star = strstr(s, ", r.*");
            const char *note = strstr(s, "note");
            assert_true(!note || (star && note > star));
            if (note)
                contains(star, "quote(r.\"note\") END AS m_fix");
            assert_null(strstr(s, "AS c0"));
            sqlq_capture_stmt_free(&polls[p]);
            sqlq_capture_stmt_free(&polls[p + 1]);
        }
        assert_int_equal(sqlq_capture_sql_key_stmt(&f.spec, &key, &err), SQLQ_OK);
        assert_int_equal(key.nparams, 0);
        check_params(&key);
        contains(key.sql, "SELECT (SELECT ");
        contains(key.sql, cases[i].key_from);
        contains(key.sql, " AS m_key");
        contains(key.sql, cases[i].src);
        sqlq_capture_stmt_free(&key);
    }
}

static void test_capture_sql_mssql_composite_key(void **state)
{
    (void)state;
    fixture f;
    make(&f, &sqlq_dialect_mssql, "sales", "Order Lines]", true);
    sqlq_capture_stmt poll, lease;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_capture_sql_poll(&f.spec, &poll, &lease, &err), SQLQ_OK);
    contains(poll.sql, "CHANGETABLE(CHANGES [sales].[Order Lines]]], @sync)");
    contains(poll.sql, "l.[id] = c.[id] AND l.[region] = c.[region]");
    contains(poll.sql, "ORDER BY c.SYS_CHANGE_VERSION, c.[id], c.[region]");
    contains(poll.sql, "ON l.[id] = b.k0 AND l.[region] = b.k1");
    contains(poll.sql, "ORDER BY b.m_v, b.k0, b.k1;");
    sqlq_capture_stmt_free(&poll);
}

static void test_capture_sql_mssql_other_statements(void **state)
{
    (void)state;
    fixture f;
    make(&f, &sqlq_dialect_mssql, "dbo", "Orders", false);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_capture_stmt st, ix;

    assert_int_equal(sqlq_capture_sql_pending(&f.spec, &st, &err), SQLQ_OK);
    check_params(&st);
    contains(st.sql, "SELECT COUNT_BIG(*) FROM CHANGETABLE(CHANGES [dbo].[Orders], @sync) AS c");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_advance_scan(&f.spec, &st, &err), SQLQ_OK);
    check_params(&st);
    contains(st.sql, "SELECT @sync AS m_sync, (SELECT min(c.SYS_CHANGE_VERSION) FROM CHANGETABLE");
    contains(st.sql, "(l.sqlq_version IS NULL OR l.sqlq_expires_ms IS NOT NULL OR l.sqlq_version < "
                     "c.SYS_CHANGE_VERSION)) AS m_unproc");
    contains(st.sql, "(SELECT max(c.SYS_CHANGE_VERSION) FROM CHANGETABLE(CHANGES [dbo].[Orders], "
                     "@sync) AS c WHERE 1 = 1) AS m_max");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_lock(&f.spec, &st, &err), SQLQ_OK);
    assert_int_equal(st.nparams, 1);
    assert_int_equal(st.params[0], SQLQ_P_LOCK);
    contains(st.sql, "EXEC @rc = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', "
                     "@LockOwner = 'Transaction', @LockTimeout = 30000; IF @rc < 0 THROW 51000");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_start_version(&f.spec, SQLQ_START_BEGINNING, &st, &err),
                     SQLQ_OK);
    assert_string_equal(st.sql,
                        "SELECT CHANGE_TRACKING_MIN_VALID_VERSION(OBJECT_ID(N'[dbo].[Orders]'))");
    sqlq_capture_stmt_free(&st);
    assert_int_equal(sqlq_capture_sql_start_version(&f.spec, SQLQ_START_NOW, &st, &err), SQLQ_OK);
    assert_string_equal(st.sql, "SELECT CHANGE_TRACKING_CURRENT_VERSION()");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_release(&f.spec, &st, &err), SQLQ_OK);
    check_params(&st);
    contains(st.sql, "SET sqlq_attempts = 0, sqlq_expires_ms = NULL, sqlq_owner = NULL WHERE "
                     "sqlq_owner = ? AND sqlq_token IN (SELECT CAST([value] AS bigint) FROM "
                     "OPENJSON(?))");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_abandon(&f.spec, false, &st, &err), SQLQ_OK);
    contains(st.sql, "SET sqlq_expires_ms = 0, sqlq_owner = NULL, sqlq_attempts = CASE WHEN "
                     "sqlq_attempts > 0 THEN sqlq_attempts - 1 ELSE 0 END");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_trim_log(&f.spec, &st, &err), SQLQ_OK);
    assert_null(st.sql); /* change tracking retention cleans up itself */

    char *types[] = {"int"};
    assert_int_equal(sqlq_capture_sql_leases_ddl(&f.spec, types, &st, &ix, &err), SQLQ_OK);
    assert_null(ix.sql);
    contains(st.sql, "IF OBJECT_ID(N'sqlq.leases_");
    contains(st.sql, "CREATE TABLE [sqlq].[leases_");
    contains(st.sql, "([id] int NOT NULL, sqlq_version bigint NOT NULL, sqlq_attempts integer "
                     "NOT NULL, sqlq_expires_ms bigint NULL, sqlq_owner nvarchar(256) NULL, "
                     "sqlq_token bigint NULL, PRIMARY KEY ([id]))");
    sqlq_capture_stmt_free(&st);

    assert_int_equal(sqlq_capture_sql_state_init(&f.spec, &st, &err), SQLQ_OK);
    check_params(&st);
    contains(st.sql, "IF NOT EXISTS (SELECT 1 FROM [sqlq].[state] WITH (UPDLOCK, HOLDLOCK)");
    sqlq_capture_stmt_free(&st);
}

/* Every statement of every dialect: markers and roles agree; text is produced. */
static void test_capture_sql_params_match_markers(void **state)
{
    (void)state;
    const sqlq_dialect *const dialects[] = {&sqlq_dialect_sqlite, &sqlq_dialect_postgres,
                                            &sqlq_dialect_mssql};
    for (int k = 0; k < 3; k++) {
        const sqlq_dialect *d = dialects[k];
        fixture f;
        make(&f, d, d->home_schema, "t", true);
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_capture_stmt a, b;
        assert_int_equal(sqlq_capture_sql_poll(&f.spec, &a, &b, &err), SQLQ_OK);
        check_params(&a);
        check_params(&b);
        assert_int_equal(b.sql != NULL, d == &sqlq_dialect_sqlite);
        sqlq_capture_stmt_free(&a);
        sqlq_capture_stmt_free(&b);
        sqlq_result (*one[])(const sqlq_capture_sql *, sqlq_capture_stmt *, sqlq_error *) = {
            sqlq_capture_sql_pending,    sqlq_capture_sql_advance_scan, sqlq_capture_sql_set_sync,
            sqlq_capture_sql_trim_leases, sqlq_capture_sql_trim_log,    sqlq_capture_sql_release,
            sqlq_capture_sql_renew,      sqlq_capture_sql_state_init,   sqlq_capture_sql_read_sync,
            sqlq_capture_sql_owners,     sqlq_capture_sql_lock};
        for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
            assert_int_equal(one[i](&f.spec, &a, &err), SQLQ_OK);
            check_params(&a);
            sqlq_capture_stmt_free(&a);
        }
    }
}

/* A route asking for changed columns and the before image reads the log's map, what
 * this bridge delivered of the key, and the mirrored columns the log has (note only here);
 * every marker keeps its role. Change tracking reads none of them. */
static void test_capture_sql_poll_image_columns(void **state)
{
    (void)state;
    const sqlq_dialect *const dialects[] = {&sqlq_dialect_sqlite, &sqlq_dialect_postgres,
                                            &sqlq_dialect_mariadb, &sqlq_dialect_mssql};
    for (int k = 0; k < 4; k++) {
        const sqlq_dialect *d = dialects[k];
        fixture f;
        make(&f, d, d->home_schema, "t", false);
        sqlq_column logcols[2] = {{.name = "id", .in_key = true, .key_pos = 1},
                                  {.name = "sqlq_b_note"}};
        size_t logkey[1] = {0};
        sqlq_table log = {.columns = logcols, .ncolumns = 2, .key = logkey, .nkey = 1};
        f.spec.changed = true;
        f.spec.before = true;
        f.spec.log = &log;
        sqlq_error err;
        sqlq_error_clear(&err);
        sqlq_capture_stmt a, b;
        assert_int_equal(sqlq_capture_sql_poll(&f.spec, &a, &b, &err), SQLQ_OK);
        check_params(&a);
        check_params(&b);
        if (d == &sqlq_dialect_mssql) { /* the mask of SYS_CHANGE_COLUMNS, into #sqlq_batch */
            assert_null(strstr(a.sql, "m_chg"));
            assert_null(strstr(a.sql, "m_b"));
            contains(a.sql, "CASE WHEN c.SYS_CHANGE_COLUMNS IS NULL THEN 1 ELSE 0 END AS m_call");
            contains(a.sql, "CAST(CHANGE_TRACKING_IS_COLUMN_IN_MASK(COLUMNPROPERTY(OBJECT_ID(");
            contains(a.sql, "'note', 'ColumnId'), c.SYS_CHANGE_COLUMNS) AS int) AS m_c1");
            contains(a.sql, " AS m_c2, CAST(NULL AS bigint) AS m_tok INTO #sqlq_batch");
        } else {
            contains(a.sql, "c.sqlq_changed AS m_chg");
            contains(a.sql, "CASE WHEN l.sqlq_expires_ms IS NULL AND l.sqlq_version > ");
            contains(a.sql, " END AS m_dv");
            contains(a.sql, "sqlq_b_note");
            contains(a.sql, " AS m_b1");
            assert_null(strstr(a.sql, " AS m_b0")); /* the log does not mirror id */
            assert_null(strstr(a.sql, " AS m_b2"));
        }
        sqlq_capture_stmt_free(&a);
        sqlq_capture_stmt_free(&b);
    }
}

/* SQL Server --track-columns: enabled WITH (TRACK_COLUMNS_UPDATED = ON) only when off; the
 * check reads is_track_columns_updated_on (-1: change tracking off). */
static void test_capture_sql_ct_track_columns(void **state)
{
    (void)state;
    sqlq_table_name t;
    memset(&t, 0, sizeof(t));
    snprintf(t.schema, sizeof(t.schema), "dbo");
    snprintf(t.name, sizeof(t.name), "Orders");
    char *sql = NULL;
    assert_int_equal(sqlq_ct_track_columns_enable_sql(&t, &sql, NULL), SQLQ_OK);
    contains(sql, "IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_tables WHERE object_id = OBJECT_ID(");
    contains(sql, "ALTER TABLE [dbo].[Orders] ENABLE CHANGE_TRACKING WITH (TRACK_COLUMNS_UPDATED = ON)");
    free(sql);
    contains(sqlq_ct_track_columns_sql(), "is_track_columns_updated_on");
    contains(sqlq_ct_track_columns_sql(), ", -1) AS tracked");
    assert_int_equal(count(sqlq_ct_track_columns_sql(), "?"), 1);
}

static void test_capture_sql_postgres_reads_up_to_horizon(void **state)
{
    (void)state;
    fixture f;
    make(&f, &sqlq_dialect_postgres, "public", "orders", false);
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_capture_stmt a, b;
    assert_int_equal(sqlq_capture_sql_poll(&f.spec, &a, &b, &err), SQLQ_OK);
    /* The poll takes its range as parameters: the sync version read under the lock by
     * `bounds`, the horizon computed from the log's lock holders (pg_horizon.h). */
    contains(a.sql, "c.sqlq_version > ? AND c.sqlq_version <= ? AND");
    /* op: the key's incarnation against the sync version (a parameter too) and its lease */
    contains(a.sql, "CASE WHEN c.sqlq_op <> 'U' THEN c.sqlq_op WHEN c.sqlq_since > ? AND");
    assert_int_equal(a.params[0], SQLQ_P_SYNC);
    assert_int_equal(a.params[1], SQLQ_P_SYNC);
    assert_int_equal(a.params[2], SQLQ_P_HORIZON);
    assert_int_equal(strncmp(a.sql, "/* sqlq poll */ WITH b AS (", 27), 0);
    assert_int_equal(count(a.sql, "pg_snapshot_xmin"), 0); /* no cluster-wide horizon */
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_pg_capture_sql_bounds(&f.spec, true, &a, &err), SQLQ_OK);
    contains(a.sql, "l.mode = 'RowExclusiveLock'");
    contains(a.sql, "to_regclass('\"sqlq\".\"log_orders\"')");
    contains(a.sql, "l.pid IS DISTINCT FROM pg_backend_pid()");
    contains(a.sql, "ORDER BY age(x.transactionid) DESC LIMIT 1) AS m_xid");
    assert_int_equal(count(a.sql, "pg_locks"), 1); /* one read of the lock table */
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_pg_capture_sql_sequence(&f.spec, true, &a, &err), SQLQ_OK);
    contains(a.sql, "pg_advisory_xact_lock(hashtextextended(");
    contains(a.sql, "last_value - 1 END FROM \"sqlq\".\"ver_orders\") AS m_seq");
    /* No plan cliff (docs/capture.md): the poll transaction forbids the sort that stale
     * statistics choose (the whole backlog sorted on every poll), and JIT with it. */
    contains(a.sql, "set_config('enable_sort', 'off', true)");
    contains(a.sql, "set_config('jit', 'off', true)");
    assert_int_equal(a.params[0], SQLQ_P_LOCK);
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_capture_sql_advance_scan(&f.spec, &a, &err), SQLQ_OK);
    assert_int_equal(count(a.sql, "c.sqlq_version <= ?"), 2); /* both min and max are bounded */
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_capture_sql_lock(&f.spec, &a, &err), SQLQ_OK);
    contains(a.sql, "pg_advisory_xact_lock(hashtextextended(");
    /* one round trip each: not wrapped in DECLARE CURSOR by psqlODBC (UseDeclareFetch=1) */
    assert_int_equal(strncmp(a.sql, "/* sqlq */ SELECT ", 18), 0);
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_pg_capture_sql_bounds(&f.spec, true, &a, &err), SQLQ_OK);
    assert_int_equal(strncmp(a.sql, "/* sqlq */ WITH ", 16), 0);
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_pg_capture_sql_bounds(&f.spec, false, &a, &err), SQLQ_OK);
    assert_int_equal(strncmp(a.sql, "/* sqlq */ SELECT sync_version AS m_sync FROM", 45), 0);
    assert_int_equal(count(a.sql, "pg_locks"), 0);
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_pg_capture_sql_sequence(&f.spec, false, &a, &err), SQLQ_OK);
    assert_int_equal(strncmp(a.sql, "/* sqlq */ SELECT (SELECT CASE", 30), 0);
    sqlq_capture_stmt_free(&a);
    assert_int_equal(sqlq_capture_sql_advance_scan(&f.spec, &a, &err), SQLQ_OK);
    assert_int_equal(strncmp(a.sql, "/* sqlq */ SELECT ", 18), 0);
    sqlq_capture_stmt_free(&a);
    make(&f, &sqlq_dialect_sqlite, "", "orders", false);
    /* one writer at a time: no horizon; the planner walks the index with the subquery bound */
    assert_false(f.spec.log_sql->horizon);
    assert_false(f.spec.log_sql->sync_param);
}

static void test_capture_sql_ct_retention(void **state)
{
    (void)state;
    sqlq_error err;
    sqlq_error_clear(&err);
    int64_t out = 0;
    bool gap = true;
    assert_int_equal(sqlq_ct_retention_check("b", "dbo.Orders", 50, 40, false, &out, &gap, &err),
                     SQLQ_OK);
    assert_int_equal(out, 50);
    assert_false(gap);
    assert_int_equal(sqlq_ct_retention_check("b", "dbo.Orders", 40, 40, false, &out, &gap, &err),
                     SQLQ_OK);
    assert_int_equal(sqlq_ct_retention_check("b", "dbo.Orders", 10, 40, false, &out, &gap, &err),
                     SQLQ_E_INVALID);
    contains(err.message, "dbo.Orders");
    contains(err.message, "retention");
    contains(err.message, "--allow-retention-gap");
    contains(err.message, "sqlq backfill --table");
    contains(err.message, "10 < CHANGE_TRACKING_MIN_VALID_VERSION 40");
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_ct_retention_check("b", "dbo.Orders", 10, 40, true, &out, &gap, &err),
                     SQLQ_OK);
    assert_int_equal(out, 40);
    assert_true(gap);
}

static void test_capture_sql_ct_enable_and_types(void **state)
{
    (void)state;
    sqlq_table_name t = {.schema = "dbo", .name = "we]ird"};
    char *db = NULL, *tbl = NULL;
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_ct_enable_sql(&t, 2, &db, &tbl, &err), SQLQ_OK);
    contains(db, "ALTER DATABASE CURRENT SET CHANGE_TRACKING = ON (CHANGE_RETENTION = 2 DAYS, "
                 "AUTO_CLEANUP = ON)");
    contains(db, "sys.change_tracking_databases");
    assert_string_equal(tbl, "IF NOT EXISTS (SELECT 1 FROM sys.change_tracking_tables WHERE "
                             "object_id = OBJECT_ID(N'[dbo].[we]]ird]')) ALTER TABLE "
                             "[dbo].[we]]ird] ENABLE CHANGE_TRACKING");
    free(db);
    free(tbl);
    assert_int_equal(sqlq_ct_enable_sql(&t, 0, &db, &tbl, &err), SQLQ_E_INVALID);

    char out[96];
    sqlq_ct_type_decl("nvarchar", 100, 0, 0, out, sizeof(out));
    assert_string_equal(out, "nvarchar(50)");
    sqlq_ct_type_decl("nvarchar", -1, 0, 0, out, sizeof(out));
    assert_string_equal(out, "nvarchar(max)");
    sqlq_ct_type_decl("varbinary", 16, 0, 0, out, sizeof(out));
    assert_string_equal(out, "varbinary(16)");
    sqlq_ct_type_decl("decimal", 9, 18, 2, out, sizeof(out));
    assert_string_equal(out, "decimal(18,2)");
    sqlq_ct_type_decl("datetime2", 8, 27, 7, out, sizeof(out));
    assert_string_equal(out, "datetime2(7)");
    sqlq_ct_type_decl("uniqueidentifier", 16, 0, 0, out, sizeof(out));
    assert_string_equal(out, "uniqueidentifier");
    sqlq_ct_type_decl("my type]", 4, 10, 0, out, sizeof(out));
    assert_string_equal(out, "[my type]]]");
    char *lock = NULL;
    assert_int_equal(sqlq_ct_applock_sql(5000, &lock, &err), SQLQ_OK);
    contains(lock, "@LockTimeout = 5000");
    free(lock);
}

static void test_capture_sql_catalog_names(void **state)
{
    (void)state;
    sqlq_error err;
    sqlq_error_clear(&err);
    sqlq_catalog_names n, m;
    sqlq_table_name t = {.schema = "public", .name = "orders"};
    /* pinned: changing the derivation would orphan existing state */
    char h[13];
    sqlq_catalog_hash12("orders", NULL, h);
    assert_string_equal(h, "1c168adb00d2");
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &t, "default", &n, &err),
                     SQLQ_OK);
    assert_string_equal(n.table_key, "public.orders");
    assert_string_equal(n.log_table, "log_orders");
    assert_string_equal(n.log_function, "capture_orders");
    assert_string_equal(n.leases_table, "leases_c471436e0e91");
    assert_string_equal(n.lock_key, "sqlq:default:public.orders");
    assert_string_equal(n.lock_hash, "sqlq:c471436e0e91");
    /* another bridge: other leases, other lock; same log */
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &t, "b2", &m, &err), SQLQ_OK);
    assert_string_equal(m.log_table, n.log_table);
    assert_string_not_equal(m.leases_table, n.leases_table);
    assert_string_not_equal(m.lock_key, n.lock_key);
    /* other schema, case or oddities: hashed, still a plain identifier under 64 bytes */
    sqlq_table_name s = {.schema = "sales", .name = "orders"};
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &s, NULL, &m, &err), SQLQ_OK);
    assert_string_equal(m.log_table, "log_orders_9070a83f92d8");
    assert_string_equal(m.leases_table, "");
    sqlq_table_name odd = {.schema = "public", .name = "Ünïcode \"quoted\" name that is long"};
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &odd, "x", &m, &err), SQLQ_OK);
    assert_string_equal(m.table_key, "public.\"Ünïcode \"\"quoted\"\" name that is long\"");
    assert_true(strlen(m.log_table) < 64);
    for (const char *p = m.log_table; *p; p++)
        assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
    sqlq_table_name upper = {.schema = "public", .name = "Orders"};
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &upper, NULL, &m, &err),
                     SQLQ_OK);
    assert_string_not_equal(m.log_table, "log_orders"); /* "Orders" is not orders in PostgreSQL */
    assert_string_equal(m.table_key, "public.\"Orders\"");
    /* a plain name shaped like a hashed one takes the hashed form: one log per table */
    sqlq_table_name like = {.schema = "public", .name = "orders_9070a83f92d8"};
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &like, NULL, &m, &err),
                     SQLQ_OK);
    assert_string_not_equal(m.log_table, "log_orders_9070a83f92d8");
    assert_string_equal(m.log_table, "log_orders_9070a83f92d8_209c6a74383f");
    sqlq_table_name near = {.schema = "public", .name = "orders_9070a83f92dx"};
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_postgres, &near, NULL, &m, &err),
                     SQLQ_OK);
    assert_string_equal(m.log_table, "log_orders_9070a83f92dx"); /* not 12 hex digits: plain */
    /* SQLite: names are case-insensitive there, so a plain mixed-case name stays readable */
    sqlq_table_name lite = {.name = "Orders"};
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_sqlite, &lite, "default", &m, &err),
                     SQLQ_OK);
    assert_string_equal(m.log_table, "log_orders");
    assert_string_equal(m.trigger, "sqlq_log_orders");
    assert_string_equal(m.table_key, "Orders");
    /* bridge names are bounded */
    char longname[200];
    memset(longname, 'b', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(sqlq_catalog_names_make(&sqlq_dialect_sqlite, &lite, longname, &m, &err),
                     SQLQ_E_INVALID);
}

static void test_capture_sql_reserved_key_columns(void **state)
{
    (void)state;
    fixture f;
    make(&f, &sqlq_dialect_postgres, "public", "docs", false);
    sqlq_error err;
    sqlq_error_clear(&err);
    assert_int_equal(sqlq_catalog_check_key(&f.t, &err), SQLQ_OK);
    f.cols[0].name = "SQLQ_VERSION";
    assert_int_equal(sqlq_catalog_check_key(&f.t, &err), SQLQ_E_INVALID);
    contains(err.message, "SQLQ_VERSION");
    sqlq_error_clear(&err);
    f.cols[0].name = "version"; /* a plain "version" key column is fine */
    assert_int_equal(sqlq_catalog_check_key(&f.t, &err), SQLQ_OK);
    /* the option columns' names too: the changed-column map and the before-image prefix */
    f.cols[0].name = "sqlq_changed";
    assert_int_equal(sqlq_catalog_check_key(&f.t, &err), SQLQ_E_INVALID);
    contains(err.message, "sqlq_changed");
    sqlq_error_clear(&err);
    f.cols[0].name = "SQLQ_B_id";
    assert_int_equal(sqlq_catalog_check_key(&f.t, &err), SQLQ_E_INVALID);
    contains(err.message, "SQLQ_B_id");
    sqlq_error_clear(&err);
    f.cols[0].name = "sqlq_bx"; /* not the prefix */
    assert_int_equal(sqlq_catalog_check_key(&f.t, &err), SQLQ_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_sql_mssql_poll),
        cmocka_unit_test(test_capture_sql_row_read_whole),
        cmocka_unit_test(test_capture_sql_mssql_composite_key),
        cmocka_unit_test(test_capture_sql_mssql_other_statements),
        cmocka_unit_test(test_capture_sql_params_match_markers),
        cmocka_unit_test(test_capture_sql_poll_image_columns),
        cmocka_unit_test(test_capture_sql_ct_track_columns),
        cmocka_unit_test(test_capture_sql_postgres_reads_up_to_horizon),
        cmocka_unit_test(test_capture_sql_ct_retention),
        cmocka_unit_test(test_capture_sql_ct_enable_and_types),
        cmocka_unit_test(test_capture_sql_catalog_names),
        cmocka_unit_test(test_capture_sql_reserved_key_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
