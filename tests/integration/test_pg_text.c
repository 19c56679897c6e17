/* sql/postgres/pg_text against a real PostgreSQL (wal_level logical, a private server): every row
 * of tests/integration/pg_text_rows.sql is read through the trigger source (change log, capture
 * poll: row_json via psqlODBC, as the bridge reads it), and the same rows' text through libpq
 * and through pgoutput's stream from a real walsender, both connected with
 * sqlq_pg_text_options; pg_text must turn each text into exactly the trigger source's JSON.
 * Once in a database with PostgreSQL's defaults, once in one whose defaults change every
 * setting the text depends on (and there libpq without the options must differ). */
#include "capture.h"
#include "db.h"
#include "pg_text.h"
#include "pgoutput_peek.h"
#include "table.h"
#include "testdb.h"
#include "testenv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libpq-fe.h>
#include <sqlext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char server_dir[64]; /* the private server's directory: DIR/port, DIR/odbc */

static char *server_file(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", server_dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[512] = "";
    if (!fgets(buf, sizeof(buf), f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return strdup(buf);
}

static int server_start(void **state)
{
    (void)state;
    snprintf(server_dir, sizeof(server_dir), "/tmp/sqlq-pgtext-XXXXXX");
    if (!mkdtemp(server_dir))
        return -1;
    return sqlq_test_sh("SQLQ_PG_WAL_LEVEL=logical '%s/tests/support/postgres.sh' start '%s' "
                        ">/dev/null",
                        sqlq_test_source_dir(), server_dir) == 0
               ? 0
               : -1;
}

static int server_stop(void **state)
{
    (void)state;
    sqlq_test_sh("'%s/tests/support/postgres.sh' stop '%s' >/dev/null; rm -rf '%s'",
                 sqlq_test_source_dir(), server_dir, server_dir);
    return 0;
}

static void psql(const char *db, const char *arg)
{
    char *port = server_file("port");
    if (sqlq_test_sh("PGCLIENTENCODING=UTF8 psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p %s "
                     "-U sqlq -d %s %s >/dev/null",
                     port, db, arg) != 0)
        fail_msg("psql -d %s %s failed", db, arg);
    free(port);
}

/* A database with its schema (pg_text_schema.sql), its defaults (ALTER DATABASE … SET …) and
 * the trigger source's change logs: its ODBC connection string. */
static char *make_db(const char *name, const char *const *settings)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "-c 'CREATE DATABASE %s'", name);
    psql("postgres", sql);
    for (const char *const *s = settings; s && *s; s++) {
        snprintf(sql, sizeof(sql), "-c \"ALTER DATABASE %s SET %s\"", name, *s);
        psql("postgres", sql);
    }
    snprintf(sql, sizeof(sql), "-f '%s/tests/integration/pg_text_schema.sql'",
             sqlq_test_source_dir());
    psql(name, sql);
    char *odbc = server_file("odbc");
    size_t n = strlen(odbc) + strlen(name) + 16;
    char *conn = malloc(n);
    snprintf(conn, n, "%sDatabase=%s;", odbc, name);
    free(odbc);
    return conn;
}

/* ---- the trigger source ------------------------------------------------------------------ */

/* Every change the capture poll hands out for table, keyed by the JSON of the row's match
 * column: {"<value>": {"row": …, "key": …}}. */
static json_t *trigger_rows(sqlq_db *db, const char *table, const char *match, size_t want)
{
    sqlq_capture_config cfg;
    sqlq_capture_config_default(&cfg);
    cfg.table = table;
    cfg.instance_id = "pgtext";
    sqlq_capture *cap = NULL;
    SQLQ_TEST_OK(sqlq_capture_open(db, &cfg, &cap, err));
    json_t *out = json_object();
    for (int polls = 0; json_object_size(out) < want && polls < 20; polls++) {
        sqlq_change_batch b;
        memset(&b, 0, sizeof(b));
        SQLQ_TEST_OK(sqlq_capture_poll(cap, &b, err));
        for (size_t i = 0; i < b.count; i++) {
            assert_non_null(b.items[i].row);
            char *id = json_dumps(json_object_get(b.items[i].row, match), JSON_ENCODE_ANY);
            json_object_set_new(
                out, id, json_pack("{s:O, s:O}", "row", b.items[i].row, "key", b.items[i].key));
            free(id);
        }
        SQLQ_TEST_OK(sqlq_capture_release(cap, b.items, b.count, NULL, err));
        sqlq_change_batch_free(&b);
    }
    sqlq_capture_close(cap);
    assert_int_equal(json_object_size(out), want);
    return out;
}

/* ---- libpq ------------------------------------------------------------------------------- */

static PGconn *libpq_connect(const char *dbname, const char *options)
{
    char *port = server_file("port");
    const char *keys[] = {"host", "port", "dbname", "user", "options", NULL};
    const char *values[] = {"127.0.0.1", port, dbname, "sqlq", options, NULL};
    if (!options)
        keys[4] = NULL;
    PGconn *c = PQconnectdbParams(keys, values, 0);
    free(port);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("libpq: %s", PQerrorMessage(c));
    return c;
}

/* The rows of table as libpq reads them in text, in the form pgoutput_peek gives: [{"table",
 * "columns": [{"name", "oid", "typmod", "text"}]}] (types as a Relation message has them). */
static json_t *libpq_rows(const char *dbname, const char *options, const char *table)
{
    PGconn *c = libpq_connect(dbname, options);
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT * FROM %s", table);
    PGresult *res = PQexec(c, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    snprintf(sql, sizeof(sql),
             "SELECT atttypid, atttypmod FROM pg_attribute WHERE attrelid = '%s'::regclass "
             "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
             table);
    PGresult *types = PQexec(c, sql);
    if (PQresultStatus(types) != PGRES_TUPLES_OK || PQntuples(types) != PQnfields(res))
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    json_t *rows = json_array();
    for (int r = 0; r < PQntuples(res); r++) {
        json_t *cols = json_array();
        for (int f = 0; f < PQnfields(res); f++) {
            json_t *text = PQgetisnull(res, r, f) ? json_null()
                                                  : json_stringn(PQgetvalue(res, r, f),
                                                                 (size_t)PQgetlength(res, r, f));
            assert_non_null(text);
            json_array_append_new(
                cols,
                json_pack("{s:s, s:I, s:I, s:o}", "name", PQfname(res, f), "oid",
                          (json_int_t)strtoll(PQgetvalue(types, f, 0), NULL, 10), "typmod",
                          (json_int_t)strtoll(PQgetvalue(types, f, 1), NULL, 10), "text", text));
        }
        json_array_append_new(rows,
                              json_pack("{s:s+, s:o}", "table", "public.", table, "columns", cols));
    }
    PQclear(types);
    PQclear(res);
    PQfinish(c);
    return rows;
}

/* ---- comparing --------------------------------------------------------------------------- */

typedef struct checker {
    sqlq_db *db;
    const sqlq_table *desc; /* the table as the trigger source describes it */
    json_t *types;          /* type OID → {"base", "name"}: sqlq_pg_text_type_read, cached */
    json_t *verified;       /* declared type → 1: compared equal with a value (not null) */
    size_t compared, mismatches;
    bool quiet; /* count mismatches only (the control without options) */
} checker;

static sqlq_pg_text_type type_of(checker *ck, const json_t *col)
{
    sqlq_pg_text_type t;
    memset(&t, 0, sizeof(t));
    t.oid = (uint32_t)json_integer_value(json_object_get(col, "oid"));
    t.typmod = (int32_t)json_integer_value(json_object_get(col, "typmod"));
    char key[16];
    snprintf(key, sizeof(key), "%u", t.oid);
    json_t *known = json_object_get(ck->types, key);
    if (!known) {
        SQLQ_TEST_OK(sqlq_pg_text_type_read(ck->db, &t, err));
        known = json_pack("{s:I, s:s}", "base", (json_int_t)t.base_oid, "name", t.name);
        json_object_set_new(ck->types, key, known);
    }
    t.base_oid = (uint32_t)json_integer_value(json_object_get(known, "base"));
    snprintf(t.name, sizeof(t.name), "%s", json_string_value(json_object_get(known, "name")));
    return t;
}

/* Row 7 holds in domains over date/time types values psqlODBC cannot read (the trigger source
 * reads such a domain through the driver); pg_text gives them as the trigger source gives the
 * same value in the plain column beside it. */
static const char *const DOMAIN_TWINS[][2] = {
    {"dtstz", "tstz"}, {"its", "tstz"},     {"dts", "ts"}, {"ddate", "dt"},
    {"dtime", "tm"},   {"dtimetz", "tmtz"}, {NULL, NULL}};
#define DOMAIN_EDGE_ROW 7

static const char *twin_of(const char *name, const json_t *trigger_row)
{
    if (json_integer_value(json_object_get(trigger_row, "id")) != DOMAIN_EDGE_ROW)
        return NULL;
    for (size_t i = 0; DOMAIN_TWINS[i][0]; i++)
        if (strcmp(DOMAIN_TWINS[i][0], name) == 0)
            return DOMAIN_TWINS[i][1];
    return NULL;
}

static void check_value(checker *ck, const char *where, const char *declared, const json_t *want,
                        const json_t *got, const json_t *text)
{
    ck->compared++;
    size_t flags = JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS;
    char *wd = json_dumps(want, flags), *gd = json_dumps(got, flags);
    bool same = wd && gd && strcmp(wd, gd) == 0; /* byte for byte: -0.0 is not 0.0 */
    free(wd), free(gd);
    if (same && json_equal(want, got)) {
        if (!json_is_null(got))
            json_object_set_new(ck->verified, declared, json_true());
        return;
    }
    ck->mismatches++;
    if (ck->quiet)
        return;
    char *w = json_dumps(want, JSON_ENCODE_ANY), *g = json_dumps(got, JSON_ENCODE_ANY);
    char *t = json_dumps(text, JSON_ENCODE_ANY);
    print_message("MISMATCH %s (%s): text %.200s\n  trigger: %.200s\n  pg_text: %.200s\n", where,
                  declared, t, w, g);
    free(w), free(g), free(t);
}

/* One row of a reader (libpq or pgoutput) against the trigger source's row and key. */
static void check_row(checker *ck, const char *source, const json_t *row, const json_t *trig)
{
    const json_t *trow = json_object_get(trig, "row"), *tkey = json_object_get(trig, "key");
    size_t i;
    json_t *col;
    json_array_foreach(json_object_get(row, "columns"), i, col)
    {
        const char *name = json_string_value(json_object_get(col, "name"));
        const sqlq_column *dc = sqlq_table_column(ck->desc, name);
        assert_non_null(dc);
        sqlq_pg_text_type t = type_of(ck, col);
        sqlq_pg_text_column pc;
        sqlq_pg_text_column_init(&pc, &t, dc->type);
        const json_t *text = json_object_get(col, "text");
        json_t *got = sqlq_pg_text_value(&pc, json_string_value(text), json_string_length(text));
        assert_non_null(got);
        char where[160];
        snprintf(where, sizeof(where), "%s id=%lld v=%lld %s", source,
                 (long long)json_integer_value(json_object_get(trow, "id")),
                 (long long)json_integer_value(json_object_get(trow, "v")), name);
        const json_t *want = json_object_get(trow, name);
        if (pc.by_key) { /* lo: the trigger source has the large object's bytes */
            assert_true(json_is_null(want) || json_object_get(want, "$base64") != NULL);
        } else {
            const char *twin = twin_of(name, trow);
            check_value(ck, where, dc->type, twin ? json_object_get(trow, twin) : want, got, text);
            if (json_object_get(tkey, name))
                check_value(ck, where, dc->type, json_object_get(tkey, name), got, text);
        }
        json_decref(got);
    }
}

/* Every row of the reader's rows of table against the trigger source's: how many differ. */
static size_t check_rows(checker *ck, const char *source, const json_t *rows, const char *table,
                         const char *match, const json_t *trigger)
{
    sqlq_table_name tn;
    memset(&tn, 0, sizeof(tn));
    snprintf(tn.name, sizeof(tn.name), "%s", table);
    sqlq_table *desc = NULL;
    SQLQ_TEST_OK(sqlq_table_describe(ck->db, &tn, &desc, err));
    ck->desc = desc;
    ck->mismatches = 0;
    char qualified[128];
    snprintf(qualified, sizeof(qualified), "public.%s", table);
    size_t i, n = 0;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (strcmp(json_string_value(json_object_get(row, "table")), qualified) != 0)
            continue;
        json_t *col, *id = NULL;
        size_t j;
        json_array_foreach(json_object_get(row, "columns"), j, col)
        {
            if (strcmp(json_string_value(json_object_get(col, "name")), match) == 0)
                id = json_object_get(col, "text");
        }
        assert_non_null(id);
        const json_t *trig = json_object_get(trigger, json_string_value(id));
        if (!trig)
            fail_msg("%s: row %s=%s is not among the trigger source's", source, match,
                     json_string_value(id));
        check_row(ck, source, row, trig);
        n++;
    }
    assert_int_equal(n, json_object_size(trigger));
    sqlq_table_free(desc);
    ck->desc = NULL;
    return ck->mismatches;
}

/* ---- the cases --------------------------------------------------------------------------- */

/* What the trigger source reads in a domain over a date/time type holding infinity … (row
 * DOMAIN_EDGE_ROW): psqlODBC's conversion, not the value (docs/types.md). */
static void domain_edges(const char *dbname, const json_t *trig_t)
{
    char id[16];
    snprintf(id, sizeof(id), "%d", DOMAIN_EDGE_ROW);
    json_t *edge = json_object_get(json_object_get(trig_t, id), "row");
    assert_false(json_equal(json_object_get(edge, "dtstz"), json_object_get(edge, "tstz")));
    for (size_t i = 0; DOMAIN_TWINS[i][0]; i++) {
        char *d = json_dumps(json_object_get(edge, DOMAIN_TWINS[i][0]), JSON_ENCODE_ANY);
        char *p = json_dumps(json_object_get(edge, DOMAIN_TWINS[i][1]), JSON_ENCODE_ANY);
        print_message("%s: trigger source, row %d: %s %s, %s %s\n", dbname, DOMAIN_EDGE_ROW,
                      DOMAIN_TWINS[i][0], d, DOMAIN_TWINS[i][1], p);
        free(d), free(p);
    }
}

/* The options are what makes the text the trigger source's where the database's defaults
 * differ: libpq without them (but in UTF-8, which LATIN1 could not carry) gives other text. */
static void without_options(checker *ck, const char *dbname, const json_t *trig_t)
{
    json_t *plain = libpq_rows(dbname, "-c client_encoding=UTF8", "t");
    ck->quiet = true;
    size_t differ = check_rows(ck, "libpq without options", plain, "t", "id", trig_t);
    ck->quiet = false;
    print_message("%s: without the options %zu values differ\n", dbname, differ);
    assert_true(differ > 0);
    json_decref(plain);
}

#define T_ROWS 10
#define K_ROWS 3

static void compare_all(const char *dbname, const char *const *settings)
{
    char *conn = make_db(dbname, settings);
    sqlq_db *db = sqlq_test_db_open(conn);
    sqlq_test_change_log_install(db, "t");
    sqlq_test_change_log_install(db, "k");
    psql(dbname, "-c 'CREATE PUBLICATION pgtext FOR TABLE t, k'");
    sqlq_buf options;
    sqlq_buf_init(&options, 0);
    SQLQ_TEST_OK(sqlq_pg_text_options_read(db, &options, err));
    print_message("%s: options %s\n", dbname, options.data);
    char *port = server_file("port");
    pgoutput_peek *peek = pgoutput_peek_open(port, dbname, options.data);
    free(port);
    char rows_sql[256];
    snprintf(rows_sql, sizeof(rows_sql), "-f '%s/tests/integration/pg_text_rows.sql'",
             sqlq_test_source_dir());
    psql(dbname, rows_sql);

    json_t *trig_t = trigger_rows(db, "t", "id", T_ROWS);
    json_t *trig_k = trigger_rows(db, "k", "v", K_ROWS);
    checker ck = {.db = db, .types = json_object(), .verified = json_object()};
    json_t *stream = pgoutput_peek_inserts(peek, "pgtext", T_ROWS + K_ROWS, 60);
    json_t *lt = libpq_rows(dbname, options.data, "t"), *lk = libpq_rows(dbname, options.data, "k");
    size_t bad = check_rows(&ck, "pgoutput", stream, "t", "id", trig_t) +
                 check_rows(&ck, "pgoutput", stream, "k", "v", trig_k) +
                 check_rows(&ck, "libpq", lt, "t", "id", trig_t) +
                 check_rows(&ck, "libpq", lk, "k", "v", trig_k);
    print_message("%s: %zu values compared, %zu differ; identical for %zu types:", dbname,
                  ck.compared, bad, json_object_size(ck.verified));
    const char *type;
    json_t *v;
    json_object_foreach(ck.verified, type, v) print_message(" %s;", type);
    print_message("\n");
    assert_int_equal(bad, 0);

    domain_edges(dbname, trig_t);
    if (settings)
        without_options(&ck, dbname, trig_t);
    json_decref(lt), json_decref(lk), json_decref(stream);
    json_decref(trig_t), json_decref(trig_k);
    json_decref(ck.types), json_decref(ck.verified);
    pgoutput_peek_close(peek);
    sqlq_buf_free(&options);
    sqlq_db_close(db);
    free(conn);
}

static void test_pg_text_defaults(void **state)
{
    (void)state;
    compare_all("pgtext_defaults", NULL);
}

/* Every setting the text depends on, changed from PostgreSQL's default for the database. */
static void test_pg_text_other_defaults(void **state)
{
    (void)state;
    static const char *const settings[] = {"DateStyle = 'SQL, DMY'",
                                           "IntervalStyle = 'sql_standard'",
                                           "TimeZone = 'America/St_Johns'",
                                           "extra_float_digits = 0",
                                           "bytea_output = 'escape'",
                                           "client_encoding = 'LATIN1'",
                                           NULL};
    compare_all("pgtext_other", settings);
}

/* For every type of PostgreSQL's own (below SQLQ_PG_TEXT_FIRST_USER_OID): the shape pg_text
 * gives is the one psqlODBC's report of the type leads row_json to, and the type's OID alone
 * gives the same shape as its name. */
static void test_pg_text_builtin_types(void **state)
{
    (void)state;
    char *conn = make_db("pgtext_builtin", NULL);
    sqlq_db *db = sqlq_test_db_open(conn);
    json_t *types = NULL;
    SQLQ_TEST_OK(sqlq_db_query(db,
                               "SELECT CAST(oid AS bigint) AS oid, format_type(oid, NULL) AS name, "
                               "CAST(oid AS regtype)::text AS cast FROM pg_type WHERE oid < 10000 "
                               "AND typtype IN ('b', 'r', 'm', 'e', 'd') AND typisdefined "
                               "AND typrelid = 0 ORDER BY oid",
                               NULL, 0, &types, err));
    sqlq_buf q;
    sqlq_buf_init(&q, 0);
    size_t i;
    json_t *t;
    json_array_foreach(types, i, t)
    {
        SQLQ_TEST_OK(sqlq_buf_printf(&q, "%sNULL::%s", i ? ", " : "SELECT ",
                                     json_string_value(json_object_get(t, "cast"))));
    }
    json_t *cols = NULL, *rows = NULL;
    SQLQ_TEST_OK(sqlq_db_query_values(db, q.data, NULL, 0, &cols, &rows, err));
    assert_int_equal(json_array_size(cols), json_array_size(types));
    json_array_foreach(types, i, t)
    {
        sqlq_pg_text_type pt;
        memset(&pt, 0, sizeof(pt));
        pt.oid = (uint32_t)json_integer_value(json_object_get(t, "oid"));
        const char *name = json_string_value(json_object_get(t, "name"));
        sqlq_pg_text_column by_name, by_oid;
        sqlq_pg_text_column_init(&by_name, &pt, name);
        sqlq_pg_text_column_init(&by_oid, &pt, NULL);
        short sql_type =
            (short)json_integer_value(json_object_get(json_array_get(cols, i), "type"));
        sqlq_value_kind want = sqlq_column_value_kind(sql_type, "", &sqlq_dialect_postgres);
        if (strncmp(name, "date", 4) == 0 || strncmp(name, "time", 4) == 0)
            want = SQLQ_VALUE_TIME_TEXT; /* selected as text whatever the driver says */
        if (by_name.kind != want || by_oid.kind != by_name.kind)
            fail_msg("type %u %s: psqlODBC SQL type %d gives shape %d; pg_text %d (by OID %d)",
                     pt.oid, name, sql_type, want, by_name.kind, by_oid.kind);
    }
    print_message("%zu built-in types: pg_text's shape is psqlODBC's\n", json_array_size(types));
    json_decref(cols), json_decref(rows), json_decref(types);
    sqlq_buf_free(&q);
    sqlq_db_close(db);
    free(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_text_builtin_types),
        cmocka_unit_test(test_pg_text_defaults),
        cmocka_unit_test(test_pg_text_other_defaults),
    };
    return cmocka_run_group_tests(tests, server_start, server_stop);
}
